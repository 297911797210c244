package migration

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/cli/internal/modelcmd"
)

// MigrateCmd is 'drover migrate': Juju's migrate, plus following the
// migration, aborting it and retrying a failed reap.
func (a *Commands) MigrateCmd() *cobra.Command {
	var ctl modelcmd.ControllerOpt
	var wait, abort, retryReap bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "migrate MODEL CONTROLLER | --abort MODEL|ID | --retry-reap ID",
		Short: "Move a model to another controller of the hub",
		Long: `Asks the hub to migrate MODEL (a name, OWNER/NAME or UUID, as 'drover
models' shows it) to CONTROLLER, another controller behind the hub, and
prints the migration's ID, as 'juju migrate' does. The model keeps its
UUID, name, owner and grants; its units go on running throughout, and
its agents move to the new controller by themselves. You need admin on
the model and add-model on CONTROLLER.

The hub takes the migration through its phases: PRECHECK, QUIESCE
(agents finish their hook and hold), EXPORT, IMPORT, VALIDATION (every
agent reaches the new controller), SUCCESS, LOGTRANSFER, REAP (the copy
on the old controller is removed) and DONE. Anything that fails before
SUCCESS aborts it (ABORTING, then ABORTED): the model stays where it was,
as it was. From SUCCESS on it only goes forward; a reap that keeps
failing ends REAPFAILED: the model runs on the new controller, its old
copy is left, and --retry-reap tries again.

With --wait, drover shows each phase as it changes, with the hub's
message and the agents that reported ok, failed or are pending, and
exits 0 when the migration is DONE, 1 when it ended otherwise, saying
why. Ctrl-C or --timeout stop the waiting, not the migration:
'drover migrations' shows it, and --abort stops it.

--abort asks the hub to abort the migration in progress of MODEL, or the
migration ID; the hub refuses once it has reached SUCCESS. With --wait,
drover waits until it is ABORTED.`,
		Example: `  drover migrate shop west
  drover migrate alice@example.com/shop west --wait --timeout 30m
  drover migrate --abort shop
  drover migrate --retry-reap 7c9e6679-7425-40de-944b-e07fc1f90ae7`,
		Args: func(cmd *cobra.Command, args []string) error {
			switch {
			case abort && retryReap:
				return modelcmd.Usagef("migrate: --abort and --retry-reap are exclusive")
			case abort:
				return modelcmd.ExactArgs(1, "with --abort, a model or migration ID")(cmd, args)
			case retryReap:
				return modelcmd.ExactArgs(1, "with --retry-reap, a migration ID")(cmd, args)
			}
			return modelcmd.ExactArgs(2, "a model and the controller to migrate it to")(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if timeout < 0 {
				return modelcmd.Usagef("--timeout %s: want a duration of 0 or more", timeout)
			}
			if timeout > 0 && !wait {
				return modelcmd.Usagef("--timeout bounds --wait: add --wait")
			}
			c, err := a.dialHub(ctl.Name)
			if err != nil {
				return err
			}
			defer c.Client.Close()
			ctx := cmd.Context()
			switch {
			case abort:
				return a.abort(ctx, c, args[0], wait, timeout)
			case retryReap:
				return a.retryReap(ctx, c, args[0], wait, timeout)
			}
			return a.migrate(ctx, c, args[0], args[1], wait, timeout)
		},
	}
	ctl.Add(cmd)
	cmd.Flags().BoolVar(&wait, "wait", false, "show the migration's progress until it ends")
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "with --wait, stop waiting after this long (0: no limit); the migration goes on")
	cmd.Flags().BoolVar(&abort, "abort", false, "abort the migration of MODEL in progress, or migration ID")
	cmd.Flags().BoolVar(&retryReap, "retry-reap", false, "retry removing the old copy of a REAPFAILED migration's model")
	return cmd
}

func (a *Commands) migrate(ctx context.Context, c *modelcmd.Conn, ref, target string, wait bool, timeout time.Duration) error {
	m, err := a.FindModel(ctx, c, ref)
	if err != nil {
		return err
	}
	if m.Index != nil && m.Index.Controller == target {
		return fmt.Errorf("model %q is already on controller %q; name another controller behind the hub ('drover controllers' lists them)", ref, target)
	}
	mig, err := c.Client.Migrate(ctx, api.MigrateRequest{Model: m.UUID, TargetController: target})
	if err != nil {
		return err
	}
	fmt.Fprintf(a.Stdout, "Migration started with ID %q\n", mig.ID)
	if !wait {
		return nil
	}
	final, err := a.wait(ctx, c.Client, mig, "DONE", timeout)
	if err != nil {
		return err
	}
	fmt.Fprintf(a.Stdout, "Model %q migrated to controller %q.\n", final.ModelName, final.TargetController)
	return nil
}

func (a *Commands) abort(ctx context.Context, c *modelcmd.Conn, ref string, wait bool, timeout time.Duration) error {
	mig, err := a.findMigration(ctx, c, ref)
	if err != nil {
		return err
	}
	if mig.Final() {
		return fmt.Errorf("migration %s of model %q has ended (%s): nothing to abort", mig.ID, mig.ModelName, mig.Phase)
	}
	mig, err = c.Client.AbortMigration(ctx, mig.ID)
	if err != nil {
		return err
	}
	fmt.Fprintf(a.Stdout, "Abort of migration %s of model %q requested (in %s).\n", mig.ID, mig.ModelName, mig.Phase)
	if !wait {
		return nil
	}
	final, err := a.wait(ctx, c.Client, mig, "ABORTED", timeout)
	if err != nil {
		return err
	}
	fmt.Fprintf(a.Stdout, "Migration %s aborted: model %q stays on controller %q.\n", final.ID, final.ModelName, final.SourceController)
	return nil
}

func (a *Commands) retryReap(ctx context.Context, c *modelcmd.Conn, id string, wait bool, timeout time.Duration) error {
	mig, err := c.Client.RetryReap(ctx, id)
	if err != nil {
		return err
	}
	fmt.Fprintf(a.Stdout, "Migration %s: removing model %q from controller %q again (%s).\n", mig.ID, mig.ModelName, mig.SourceController, mig.Phase)
	if !wait {
		return nil
	}
	final, err := a.wait(ctx, c.Client, mig, "DONE", timeout)
	if err != nil {
		return err
	}
	fmt.Fprintf(a.Stdout, "Model %q migrated to controller %q.\n", final.ModelName, final.TargetController)
	return nil
}

// findMigration is the migration ref names: the one in progress of the
// model ref names (a name, OWNER/NAME or UUID), else the migration whose
// ID ref is.
func (a *Commands) findMigration(ctx context.Context, c *modelcmd.Conn, ref string) (*api.Migration, error) {
	models, err := c.Client.Models(ctx)
	if err != nil {
		return nil, err
	}
	m, err := modelcmd.PickModel(models, ref, c.Account.User)
	if err != nil {
		return nil, err
	}
	if m != nil {
		list, err := c.Client.Migrations(ctx, api.MigrationFilter{Model: m.UUID, Active: true})
		if err != nil {
			return nil, err
		}
		if len(list) == 0 {
			return nil, fmt.Errorf("model %q has no migration in progress; 'drover migrations --model %s' lists its migrations", ref, ref)
		}
		return &list[0], nil
	}
	mig, err := c.Client.Migration(ctx, ref)
	if api.CodeOf(err) == api.CodeNotFound {
		return nil, fmt.Errorf("%w: no model or migration %q at hub %q; 'drover models' and 'drover migrations' list them", err, ref, c.Name)
	}
	return mig, err
}

// wait follows mig until it ends, showing its progress, and returns its
// final state when it ended in want, else why not. When ctx ends (the
// user's Ctrl-C) or timeout passes, it says that the migration goes on.
func (a *Commands) wait(ctx context.Context, c *api.Client, mig *api.Migration, want string, timeout time.Duration) (*api.Migration, error) {
	wctx := ctx
	if timeout > 0 {
		var cancel context.CancelFunc
		wctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	final, err := a.follow(wctx, c, mig.ID, func(m *api.Migration) { fmt.Fprintln(a.Stdout, progressLine(m)) })
	last := cmp.Or(final, mig)
	switch {
	case err == nil:
		return final, outcome(final, want)
	case ctx.Err() != nil:
		fmt.Fprintf(a.Stderr, "Stopped waiting; migration %s goes on (in %s): 'drover migrations --model %s' shows it, 'drover migrate --abort %s' aborts it.\n",
			last.ID, last.Phase, last.ModelName, last.ID)
		return nil, ctx.Err()
	case errors.Is(err, context.DeadlineExceeded) && wctx.Err() != nil:
		return nil, fmt.Errorf("%w after %s: migration %s goes on (in %s): 'drover migrations --model %s' shows it, 'drover migrate --abort %s' aborts it",
			errStoppedWaiting, timeout, last.ID, last.Phase, last.ModelName, last.ID)
	}
	return nil, err
}
