package migration

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sync/errgroup"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/cli/internal/modelcmd"
	"github.com/droverhq/drover/internal/safetext"
)

// DrainControllerCmd is 'drover drain-controller': migrate every model
// off a controller, so that it can be removed from the hub.
func (a *Commands) DrainControllerCmd() *cobra.Command {
	var ctl modelcmd.ControllerOpt
	var to string
	var parallel int
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "drain-controller NAME --to CONTROLLER [--parallel N] [--timeout D]",
		Short: "Migrate every model off a controller of the hub",
		Long: `Migrates every model on controller NAME (those the hub lists for you) to
controller CONTROLLER, both behind the hub, at most N at a time
(--parallel, default 1), and shows a line for each model as its
migration changes phase. It ends with a summary: the models migrated,
and those that failed with why (a failed migration leaves its model on
NAME, as it was). It exits 1 when any failed; when none did, 'drover
remove-controller NAME' can remove NAME from the hub (it refuses, naming
them, while models you cannot see are still there). A model whose
migration to CONTROLLER is already in progress (a drain run again) is
followed, not started again.

You need admin on NAME, and add-model on CONTROLLER. To keep new models
off NAME while it drains, run 'drover set-controller-deprecated NAME'
first. Ctrl-C or --timeout stop the drain: the migrations in progress go
on ('drover migrations --for-controller NAME' shows them), and the models
not started yet stay on NAME.`,
		Example: `  drover drain-controller east --to west
  drover drain-controller east --to west --parallel 2 --timeout 2h`,
		Args: modelcmd.ExactArgs(1, "the controller to drain"),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			switch {
			case to == "":
				return modelcmd.Usagef("drain-controller: --to CONTROLLER is required: the controller to migrate the models to")
			case to == name:
				return modelcmd.Usagef("drain-controller: --to names %q, the controller being drained; name another one", to)
			case parallel < 1:
				return modelcmd.Usagef("--parallel %d: want 1 or more", parallel)
			case timeout < 0:
				return modelcmd.Usagef("--timeout %s: want a duration of 0 or more", timeout)
			}
			c, err := a.dialHub(ctl.Name)
			if err != nil {
				return err
			}
			defer c.Client.Close()
			return a.drain(cmd.Context(), c, name, to, parallel, timeout)
		},
	}
	ctl.Add(cmd)
	cmd.Flags().StringVar(&to, "to", "", "the controller to migrate the models to (required)")
	cmd.Flags().IntVar(&parallel, "parallel", 1, "migrate at most this many models at once")
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "stop the drain after this long (0: no limit); migrations in progress go on")
	return cmd
}

// drainState is where one model of a drain ended.
type drainState int

const (
	notStarted drainState = iota
	migrated
	failed
	unfinished // its migration goes on, unfollowed
)

// drainResult is one model's part of a drain.
type drainResult struct {
	model  string
	state  drainState
	reason string
}

// DrainError is a drain that left models on the controller.
type DrainError struct {
	Controller string
	Failed     int // of Models
	Models     int
}

func (e *DrainError) Error() string {
	return fmt.Sprintf("%d of %d models could not be migrated off controller %q (see above); they stay there", e.Failed, e.Models, e.Controller)
}

func (a *Commands) drain(ctx context.Context, c *modelcmd.Conn, name, to string, parallel int, timeout time.Duration) error {
	if err := checkControllers(ctx, c, name, to); err != nil {
		return err
	}
	all, err := c.Client.Models(ctx)
	if err != nil {
		return err
	}
	var models []api.Model
	for _, m := range all {
		if m.Index != nil && m.Index.Controller == name {
			models = append(models, m)
		}
	}
	if len(models) == 0 {
		fmt.Fprintf(a.Stdout, "Controller %q hosts no model you can see: 'drover remove-controller %s' can remove it from the hub.\n", name, name)
		return nil
	}
	slices.SortFunc(models, func(x, y api.Model) int {
		return strings.Compare(modelcmd.ModelRef(x, c.Account.User), modelcmd.ModelRef(y, c.Account.User))
	})
	fmt.Fprintf(a.Stdout, "Draining controller %q: %d models to controller %q, %d at a time.\n", name, len(models), to, parallel)

	wctx := ctx
	if timeout > 0 {
		var cancel context.CancelFunc
		wctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	var mu sync.Mutex // serializes the progress lines
	say := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(a.Stdout, format+"\n", args...)
	}
	results := make([]drainResult, len(models))
	var g errgroup.Group
	g.SetLimit(parallel)
	for i, m := range models {
		ref := modelcmd.ModelRef(m, c.Account.User)
		results[i] = drainResult{model: ref}
		if wctx.Err() != nil {
			continue
		}
		g.Go(func() error {
			results[i] = a.drainOne(wctx, c.Client, m, ref, to, say)
			return nil
		})
	}
	_ = g.Wait() // each model's outcome is in results
	return a.drainSummary(ctx, wctx, name, results)
}

// drainOne migrates one model to controller to and follows it.
func (a *Commands) drainOne(ctx context.Context, c *api.Client, m api.Model, ref, to string, say func(string, ...any)) drainResult {
	r := drainResult{model: ref}
	if ctx.Err() != nil {
		return r
	}
	mig, err := inProgress(ctx, c, m.UUID, to)
	if err == nil && mig == nil {
		mig, err = c.Migrate(ctx, api.MigrateRequest{Model: m.UUID, TargetController: to})
		if err == nil {
			say("%s: migration %s started", ref, mig.ID)
		}
	} else if err == nil {
		say("%s: migration %s in progress", ref, mig.ID)
	}
	if err != nil {
		if ctx.Err() != nil {
			return r
		}
		r.state, r.reason = failed, modelcmd.Explain(err, true)
		say("%s: %s", ref, safetext.TerminalLines(r.reason))
		return r
	}
	final, err := a.follow(ctx, c, mig.ID, func(m *api.Migration) { say("%s: %s", ref, progressLine(m)) })
	switch {
	case err == nil:
		if oerr := outcome(final, "DONE"); oerr != nil {
			r.state, r.reason = failed, oerr.Error()
			return r
		}
		r.state = migrated
	case ctx.Err() != nil:
		last := mig
		if final != nil {
			last = final
		}
		r.state, r.reason = unfinished, fmt.Sprintf("migration %s goes on (in %s)", last.ID, last.Phase)
	default:
		r.state, r.reason = failed, modelcmd.Explain(err, true)
	}
	return r
}

// inProgress is model's migration to controller to in progress, if any.
func inProgress(ctx context.Context, c *api.Client, model, to string) (*api.Migration, error) {
	list, err := c.Migrations(ctx, api.MigrationFilter{Model: model, Active: true})
	if err != nil {
		return nil, err
	}
	for i := range list {
		if list[i].TargetController == to && !list[i].Final() {
			return &list[i], nil
		}
	}
	return nil, nil
}

// checkControllers refuses a drain whose controllers the hub does not
// know, before any migration starts.
func checkControllers(ctx context.Context, c *modelcmd.Conn, names ...string) error {
	list, err := modelcmd.ControllersBehind(ctx, c)
	if err != nil {
		return err
	}
	for _, n := range names {
		if !slices.ContainsFunc(list, func(x map[string]any) bool { return x["name"] == n }) {
			return fmt.Errorf("controller %q is not behind hub %q; 'drover controllers' lists those that are", n, c.Name)
		}
	}
	return nil
}

// drainSummary prints what the drain did, and whether name can go.
func (a *Commands) drainSummary(ctx, wctx context.Context, name string, results []drainResult) error {
	by := map[drainState][]drainResult{}
	for _, r := range results {
		by[r.state] = append(by[r.state], r)
	}
	names := func(rs []drainResult) string {
		out := make([]string, len(rs))
		for i, r := range rs {
			out[i] = r.model
		}
		return strings.Join(out, ", ")
	}
	fmt.Fprintln(a.Stdout)
	if rs := by[migrated]; len(rs) > 0 {
		fmt.Fprintf(a.Stdout, "Migrated (%d): %s\n", len(rs), names(rs))
	}
	if rs := by[failed]; len(rs) > 0 {
		fmt.Fprintf(a.Stdout, "Failed (%d):\n", len(rs))
		for _, r := range rs {
			fmt.Fprintf(a.Stdout, "  %s: %s\n", r.model, strings.ReplaceAll(safetext.TerminalLines(r.reason), "\n", "\n  "))
		}
	}
	if rs := by[unfinished]; len(rs) > 0 {
		fmt.Fprintf(a.Stdout, "Still migrating (%d):\n", len(rs))
		for _, r := range rs {
			fmt.Fprintf(a.Stdout, "  %s: %s\n", r.model, r.reason)
		}
	}
	if rs := by[notStarted]; len(rs) > 0 {
		fmt.Fprintf(a.Stdout, "Not started (%d): %s\n", len(rs), names(rs))
	}
	switch {
	case ctx.Err() != nil:
		fmt.Fprintf(a.Stderr, "Stopped the drain; the migrations in progress go on: 'drover migrations --for-controller %s --active' shows them.\n", name)
		return ctx.Err()
	case wctx.Err() != nil:
		return fmt.Errorf("%w: the drain of controller %q timed out; the migrations in progress go on: 'drover migrations --for-controller %s --active' shows them",
			errStoppedWaiting, name, name)
	case len(by[failed]) > 0:
		return &DrainError{Controller: name, Failed: len(by[failed]), Models: len(results)}
	}
	fmt.Fprintf(a.Stdout, "Controller %q hosts no model you can see: 'drover remove-controller %s' can now remove it from the hub.\n", name, name)
	return nil
}
