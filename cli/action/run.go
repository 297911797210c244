package action

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/charm"
	"github.com/droverhq/drover/cli/internal/modelcmd"
)

// RunCmd is 'drover run'.
func (a *Commands) RunCmd() *cobra.Command {
	var mo modelcmd.ModelOpt
	var format modelcmd.FormatOpt
	var wait string
	var background, stringArgs bool
	cmd := &cobra.Command{
		Use:   "run UNIT|APP/leader [UNIT...] ACTION [KEY=VALUE...]",
		Short: "Run an action on units and show its results",
		Long: `Enqueues ACTION on each named unit (or on an application's leader with
APP/leader), one task per unit, then waits for the tasks to finish and
prints their results. Parameters are KEY=VALUE (a.b=VALUE nests); values
are YAML unless --string-args. --background returns at once with the task
ids; --wait=DURATION bounds the wait (default: until done). Follow a task
later with 'drover show-task ID'.`,
		Example: `  drover run kv/0 get key=foo
  drover run kv/leader compact level=2 --wait=1m
  drover run kv/0 kv/1 compact --background`,
		Args: modelcmd.MinArgs(2, "a unit and an action name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := format.Check(); err != nil {
				return err
			}
			var receivers []string
			i := 0
			for ; i < len(args) && strings.Contains(args[i], "/"); i++ {
				receivers = append(receivers, args[i])
			}
			if len(receivers) == 0 {
				return modelcmd.Usagef("run: the first argument must be a unit (app/N) or app/leader, not %q", args[0])
			}
			if i == len(args) || strings.Contains(args[i], "=") {
				return modelcmd.Usagef("run: missing the action name after the units")
			}
			action := args[i]
			params, err := modelcmd.ParseActionParams(args[i+1:], stringArgs)
			if err != nil {
				return err
			}
			waitFor, err := taskWait(wait)
			if err != nil {
				return err
			}
			return a.WithModel(cmd.Context(), mo.Ref, func(mc *modelcmd.ModelConn) error {
				tasks, err := mc.Client.Model(mc.UUID).RunAction(cmd.Context(), api.RunActionRequest{Receivers: receivers, Action: action, Params: params})
				if err != nil {
					return err
				}
				fmt.Fprintf(a.Stderr, "Running %s with %d task(s)\n", action, len(tasks))
				for _, t := range tasks {
					fmt.Fprintf(a.Stderr, "  - task %s on unit-%s\n", t.ID, strings.ReplaceAll(t.Receiver, "/", "-"))
				}
				if background {
					fmt.Fprintf(a.Stderr, "\nCheck the task status with 'drover show-task %s'\n", tasks[0].ID)
					return nil
				}
				done, err := a.waitTasks(cmd.Context(), mc, tasks, waitFor)
				if err != nil {
					return err
				}
				if err := a.printTaskResults(done, format.Value); err != nil {
					return err
				}
				for _, t := range done {
					if t.Status == api.TaskFailed || t.Status == api.TaskAborted || t.Status == api.TaskCancelled {
						return fmt.Errorf("task %s on %s %s: %s", t.ID, t.Receiver, t.Status, t.Message)
					}
				}
				return nil
			})
		},
	}
	mo.Add(cmd)
	format.Add(cmd, "plain", "plain", "yaml", "json")
	cmd.Flags().StringVar(&wait, "wait", "", "how long to wait for the results (default: until done)")
	cmd.Flags().Lookup("wait").NoOptDefVal = modelcmd.WaitForever
	cmd.Flags().BoolVar(&background, "background", false, "return at once with the task ids")
	cmd.Flags().BoolVar(&stringArgs, "string-args", false, "pass every value as a string")
	return cmd
}

// taskWait reads --wait of run and exec: how long to wait for the tasks
// (0: until done).
func taskWait(wait string) (time.Duration, error) {
	if wait == "" || wait == modelcmd.WaitForever {
		return 0, nil
	}
	d, err := time.ParseDuration(wait)
	if err != nil || d < 0 {
		return 0, modelcmd.Usagef("--wait %q: want a duration such as 30s or 5m", wait)
	}
	return d, nil
}

func finished(status string) bool {
	return status != api.TaskPending && status != api.TaskRunning
}

// waitTasks waits until every task finishes or limit passes (0: no limit).
func (a *Commands) waitTasks(ctx context.Context, mc *modelcmd.ModelConn, tasks []api.Task, limit time.Duration) ([]api.Task, error) {
	if limit > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, limit)
		defer cancel()
	}
	p := a.NewProgress(fmt.Sprintf("Waiting for task %s on %s (%s)...", tasks[0].ID, tasks[0].Receiver, tasks[0].Status))
	defer p.Done("")
	out := slices.Clone(tasks)
	for i := range out {
		for !finished(out[i].Status) {
			p.Update("Waiting for task %s on %s (%s)...", out[i].ID, out[i].Receiver, out[i].Status)
			// The server holds the answer until the task finishes or the
			// hold passes; loop to bound each request.
			hold := 30 * time.Second
			if dl, ok := ctx.Deadline(); ok {
				hold = min(hold, max(time.Until(dl), time.Millisecond))
			}
			t, err := mc.Client.Model(mc.UUID).Task(ctx, out[i].ID, hold)
			if err != nil {
				if errors.Is(err, context.DeadlineExceeded) {
					return nil, fmt.Errorf("task %s on %s is still %s after %s; follow it with 'drover show-task %s'",
						out[i].ID, out[i].Receiver, out[i].Status, limit, out[i].ID)
				}
				return nil, err
			}
			out[i] = *t
			if !finished(t.Status) && ctx.Err() != nil {
				return nil, fmt.Errorf("task %s on %s is still %s after %s; follow it with 'drover show-task %s'",
					t.ID, t.Receiver, t.Status, limit, t.ID)
			}
		}
	}
	return out, nil
}

// taskView is a task as run and show-task print it.
type taskView struct {
	ID      string         `json:"id"`
	Unit    string         `json:"unit"`
	Action  string         `json:"action"`
	Status  string         `json:"status"`
	Message string         `json:"message,omitempty"`
	Params  map[string]any `json:"parameters,omitempty"`
	Results map[string]any `json:"results,omitempty"`
	Log     []string       `json:"log,omitempty"`
	Timing  map[string]any `json:"timing"`
}

func viewTask(t api.Task) taskView {
	v := taskView{ID: t.ID, Unit: t.Receiver, Action: t.Action, Status: t.Status, Message: t.Message,
		Params: t.Params, Results: t.Results, Timing: map[string]any{"enqueued": t.Enqueued.UTC().Format(time.RFC3339)}}
	if !t.Started.IsZero() {
		v.Timing["started"] = t.Started.UTC().Format(time.RFC3339)
	}
	if !t.Completed.IsZero() {
		v.Timing["completed"] = t.Completed.UTC().Format(time.RFC3339)
	}
	for _, l := range t.Log {
		v.Log = append(v.Log, l.Time.UTC().Format(time.RFC3339)+" "+l.Message)
	}
	return v
}

func (a *Commands) printTaskResults(tasks []api.Task, format string) error {
	if format != "plain" {
		out := map[string]taskView{}
		for _, t := range tasks {
			out[t.Receiver] = viewTask(t)
		}
		return modelcmd.WriteFormatted(a.Stdout, format, out)
	}
	for _, t := range tasks {
		if len(tasks) > 1 {
			fmt.Fprintf(a.Stdout, "%s:\n", t.Receiver)
		}
		for _, l := range t.Log {
			fmt.Fprintln(a.Stderr, l.Message)
		}
		if len(t.Results) > 0 {
			if err := modelcmd.WriteYAML(a.Stdout, t.Results); err != nil {
				return err
			}
		}
	}
	return nil
}

// ShowTaskCmd is 'drover show-task'.
func (a *Commands) ShowTaskCmd() *cobra.Command {
	var mo modelcmd.ModelOpt
	var format modelcmd.FormatOpt
	var wait time.Duration
	cmd := &cobra.Command{
		Use:     "show-task ID",
		Aliases: []string{"show-action-output"}, // Juju 2.9's name
		Short:   "Show a task: its status, parameters, results and log",
		Long: `Shows a task (one action on one unit). With --wait, waits up to that long
for it to finish first. A task stays pending until the unit's agent runs it.`,
		Example: "  drover show-task 3\n  drover show-task 3 --wait 1m --format json",
		Args:    modelcmd.ExactArgs(1, "a task id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := format.Check(); err != nil {
				return err
			}
			return a.WithModel(cmd.Context(), mo.Ref, func(mc *modelcmd.ModelConn) error {
				t, err := mc.Client.Model(mc.UUID).Task(cmd.Context(), args[0], wait)
				if err != nil {
					return err
				}
				if format.Value == "plain" {
					return a.printTaskResults([]api.Task{*t}, "plain")
				}
				return modelcmd.WriteFormatted(a.Stdout, format.Value, viewTask(*t))
			})
		},
	}
	mo.Add(cmd)
	format.Add(cmd, "yaml", "yaml", "json", "plain")
	cmd.Flags().DurationVar(&wait, "wait", 0, "wait up to this long for the task to finish")
	return cmd
}

// CancelTaskCmd is 'drover cancel-task'.
func (a *Commands) CancelTaskCmd() *cobra.Command {
	var mo modelcmd.ModelOpt
	cmd := &cobra.Command{
		Use:   "cancel-task ID...",
		Short: "Cancel pending tasks",
		Long: `Cancels tasks that are still pending: their units never run them. A task
already running is not stopped (it is refused, with its status), nor one
that has finished.`,
		Example: "  drover cancel-task 3\n  drover cancel-task 3 4 5",
		Args:    modelcmd.MinArgs(1, "at least one task id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.WithModel(cmd.Context(), mo.Ref, func(mc *modelcmd.ModelConn) error {
				return a.EachOf(args, "tasks could not be cancelled", func(id string) error {
					t, err := mc.Client.Model(mc.UUID).CancelTask(cmd.Context(), id)
					if err != nil {
						return fmt.Errorf("cancelling task %s: %w", id, err)
					}
					fmt.Fprintf(a.Stdout, "Cancelled task %s (%s on %s)\n", t.ID, t.Action, t.Receiver)
					return nil
				})
			})
		},
	}
	mo.Add(cmd)
	return cmd
}

// ActionsCmd is 'drover actions'.
func (a *Commands) ActionsCmd() *cobra.Command {
	var mo modelcmd.ModelOpt
	var format modelcmd.FormatOpt
	var schema bool
	cmd := &cobra.Command{
		Use:     "actions APPLICATION",
		Aliases: []string{"list-actions"},
		Short:   "List an application's actions",
		Example: "  drover actions kv\n  drover actions kv --schema\n  drover actions kv --schema --format json",
		Args:    modelcmd.ExactArgs(1, "an application name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if schema && !cmd.Flags().Changed("format") {
				format.Value = "yaml" // a schema is no table (Juju prints it as YAML)
			}
			if err := format.Check(); err != nil {
				return err
			}
			return a.WithModel(cmd.Context(), mo.Ref, func(mc *modelcmd.ModelConn) error {
				app, err := mc.Client.Model(mc.UUID).Application(cmd.Context(), args[0])
				if err != nil {
					return err
				}
				ch, err := mc.Client.Model(mc.UUID).Charm(cmd.Context(), app.CharmSHA256)
				if err != nil {
					return err
				}
				acts, err := charm.ParseActions([]byte(ch.ActionsYAML))
				if err != nil {
					return fmt.Errorf("charm %q has invalid actions: %w", ch.Name, err)
				}
				if format.Value != "tabular" {
					out := map[string]any{}
					for _, n := range acts.Names() {
						spec, _ := acts.Spec(n)
						if schema {
							out[n] = map[string]any{"description": spec.Description, "params": spec.Schema}
						} else {
							out[n] = spec.Description
						}
					}
					return modelcmd.WriteFormatted(a.Stdout, format.Value, out)
				}
				if len(acts.Names()) == 0 {
					fmt.Fprintf(a.Stderr, "No actions defined for %s.\n", args[0])
					return nil
				}
				t := &modelcmd.Table{}
				t.Row("Action", "Description")
				for _, n := range acts.Names() {
					spec, _ := acts.Spec(n)
					t.Row(n, spec.Description)
				}
				return t.Write(a.Stdout)
			})
		},
	}
	mo.Add(cmd)
	format.Add(cmd, "tabular", "tabular", "yaml", "json")
	cmd.Flags().BoolVar(&schema, "schema", false, "show each action's parameter schema (as YAML unless --format json)")
	return cmd
}

// ResolvedCmd is 'drover resolved'.
func (a *Commands) ResolvedCmd() *cobra.Command {
	var mo modelcmd.ModelOpt
	var noRetry bool
	cmd := &cobra.Command{
		Use:     "resolved UNIT...",
		Aliases: []string{"resolve"},
		Short:   "Mark a unit's failed hook resolved",
		Long:    `Marks a unit in error resolved: the failed hook is retried, or skipped with --no-retry.`,
		Example: "  drover resolved kv/0\n  drover resolved kv/0 --no-retry",
		Args:    modelcmd.MinArgs(1, "a unit"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.WithModel(cmd.Context(), mo.Ref, func(mc *modelcmd.ModelConn) error {
				for _, u := range args {
					if _, err := mc.Client.Model(mc.UUID).Resolved(cmd.Context(), u, noRetry); err != nil {
						return err
					}
				}
				return nil
			})
		},
	}
	mo.Add(cmd)
	cmd.Flags().BoolVar(&noRetry, "no-retry", false, "skip the failed hook instead of retrying it")
	return cmd
}
