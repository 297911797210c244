package action

import (
	"context"
	"fmt"
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
	var wait, paramsFile string
	var background, stringArgs, utc bool
	cmd := &cobra.Command{
		Use:   "run UNIT|APP/leader [UNIT...] ACTION [KEY=VALUE...]",
		Short: "Run an action on units and show its results",
		Long: `Enqueues ACTION on each named unit (or on an application's leader with
APP/leader), one task per unit, then waits for the tasks to finish and
prints their results. Parameters come from a YAML file (--params FILE)
and from KEY=VALUE arguments over it (a.b=VALUE nests); values are YAML
unless --string-args. --background returns at once with the task ids;
--wait DURATION bounds the wait (default: until done) and ends with
"timed out" when it passes. Follow a task later with 'drover show-task ID'.

--format json or yaml prints Juju's shape, keyed by unit: id, status,
message, results (return-code, stdout, stderr and the action's own keys),
log and timing. A task that fails makes drover exit 1 with "the following
task failed", after printing the results.`,
		Example: `  drover run kv/0 get key=foo
  drover run kv/leader compact level=2 --wait 1m
  drover run kv/0 get --params params.yaml --format json
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
			params, err := actionParams(paramsFile, args[i+1:], stringArgs)
			if err != nil {
				return err
			}
			waitFor, err := waitOpt(wait)
			if err != nil {
				return err
			}
			if background && waitFor > 0 {
				return modelcmd.Usagef("cannot specify both --wait and --background")
			}
			return a.WithModel(cmd.Context(), mo.Ref, func(mc *modelcmd.ModelConn) error {
				req := api.RunActionRequest{Receivers: receivers, Action: action, Params: params}
				return a.runAction(cmd.Context(), mc, req, runOpts{format: format.Value, wait: waitFor, background: background, utc: utc})
			})
		},
	}
	mo.Add(cmd)
	format.Add(cmd, "plain", "plain", "yaml", "json")
	cmd.Flags().StringVar(&wait, "wait", "", "how long to wait for the results, e.g. --wait 5m (default: until done)")
	cmd.Flags().StringVar(&paramsFile, "params", "", "a YAML file of parameters (KEY=VALUE arguments override it)")
	cmd.Flags().BoolVar(&background, "background", false, "return at once with the task ids")
	cmd.Flags().BoolVar(&stringArgs, "string-args", false, "pass every value as a string")
	cmd.Flags().BoolVar(&utc, "utc", false, "show times in UTC")
	return cmd
}

// runOpts are run's output and wait flags.
type runOpts struct {
	format     string
	wait       time.Duration
	background bool
	utc        bool
}

// runAction enqueues req, waits for its tasks and prints them.
func (a *Commands) runAction(ctx context.Context, mc *modelcmd.ModelConn, req api.RunActionRequest, o runOpts) error {
	tasks, err := mc.Client.Model(mc.UUID).RunAction(ctx, req)
	if err != nil {
		return enqueueErr(err)
	}
	fmt.Fprintf(a.Stderr, "Running %s with %d task(s)\n", req.Action, len(tasks))
	for _, t := range tasks {
		fmt.Fprintf(a.Stderr, "  - task %s on unit-%s\n", t.ID, strings.ReplaceAll(t.Receiver, "/", "-"))
	}
	if o.background {
		fmt.Fprintf(a.Stderr, "\nCheck the task status with 'drover show-task %s'\n", tasks[0].ID)
		return nil
	}
	done, err := a.waitTasks(ctx, mc, tasks, o.wait)
	if err != nil {
		return err
	}
	if o.format == "plain" {
		err = a.printTaskResults(done)
	} else {
		err = a.writeTasks(done, o.format, o.utc)
	}
	if err != nil {
		return err
	}
	return taskFailure(done)
}

// printTaskResults prints tasks as run's plain output does: each task's
// log on stderr and its results as YAML.
func (a *Commands) printTaskResults(tasks []api.Task) error {
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
	var utc bool
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
					return a.printTaskResults([]api.Task{*t})
				}
				return modelcmd.WriteFormatted(a.Stdout, format.Value, jujuTask(*t, utc))
			})
		},
	}
	mo.Add(cmd)
	format.Add(cmd, "yaml", "yaml", "json", "plain")
	cmd.Flags().DurationVar(&wait, "wait", 0, "wait up to this long for the task to finish")
	cmd.Flags().BoolVar(&utc, "utc", false, "show times in UTC")
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
