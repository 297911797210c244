package action

import (
	"context"
	"encoding/base64"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/cli/internal/modelcmd"
)

// ExecCmd is 'drover exec'.
func (a *Commands) ExecCmd() *cobra.Command {
	var mo modelcmd.ModelOpt
	var format modelcmd.FormatOpt
	var units, apps, machines []string
	var all, background, utc bool
	var timeout, wait string
	cmd := &cobra.Command{
		Use:   "exec (--unit UNIT... | --application APP... | --machine N... | --all) [--] COMMAND...",
		Short: "Run a command on units, in their hook context, or on machines (model admins)",
		Long: `Runs COMMAND with bash on each unit, in the unit's hook context, as
'juju exec' does: in the charm's directory, as the unit's agent, with the
hook tools (config-get, relation-get, status-set, ...) on its PATH. On a
machine (--machine) it runs outside any unit's hook context, as the
machine's own user, in the machine's directory and environment (the
machine agent's). It is the predefined action juju-exec, one task per
unit or machine, and needs admin access to the model.

--unit takes units (or APP/leader), --application every unit of the
applications, --machine machines by number; these three combine, and
each takes a comma-separated list or is repeated. --all runs on every
unit of the model, alone. --timeout ends a command that runs longer (its
task fails); --wait bounds how long drover waits for the results
(default: until done); --background returns at once with the task ids
('drover show-task ID' follows one).

On one unit or machine the command's output is printed as it is. On
several, and with --format json or yaml, each task is printed keyed by
unit name or machine number in Juju's shape: id, status, results
(return-code, stdout, stderr), timing, and unit or machine. A command
that exits non-zero is a failed task: drover exits 1 with "the following
task failed" after the output. --wait DURATION ends with "timed out" when
it passes.`,
		Example: `  drover exec --unit kv/0 -- hostname
  drover exec --application kv -- 'config-get port'
  drover exec --machine 0,1 --format json -- uname -r
  drover exec --all --timeout 30s -- systemctl is-active snapd`,
		Args: modelcmd.MinArgs(1, "a command"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := format.Check(); err != nil {
				return err
			}
			units, apps, machines = modelcmd.SplitList(units), modelcmd.SplitList(apps), modelcmd.SplitList(machines)
			targeted := len(units) > 0 || len(apps) > 0 || len(machines) > 0
			if all == targeted {
				return modelcmd.Usagef("say where to run the command: --unit, --application, --machine, or --all alone")
			}
			for _, m := range machines {
				if !validMachine(m) {
					return modelcmd.Usagef("--machine %q: want a machine number (0, 1, ...)", m)
				}
			}
			params := map[string]any{"command": strings.Join(args, " ")}
			if timeout != "" {
				if d, err := time.ParseDuration(timeout); err != nil || d <= 0 {
					return modelcmd.Usagef("--timeout %q: want a duration such as 30s or 5m", timeout)
				}
				params["timeout"] = timeout
			}
			waitFor, err := waitOpt(wait)
			if err != nil {
				return err
			}
			if background && waitFor > 0 {
				return modelcmd.Usagef("cannot specify both --wait and --background")
			}
			return a.WithModel(cmd.Context(), mo.Ref, func(mc *modelcmd.ModelConn) error {
				receivers, err := execReceivers(cmd.Context(), mc, units, apps, all)
				if err != nil {
					return err
				}
				for _, m := range machines {
					receivers = append(receivers, api.MachineReceiver(m))
				}
				tasks, err := mc.Client.Model(mc.UUID).RunAction(cmd.Context(), api.RunActionRequest{Receivers: receivers, Action: api.ExecAction, Params: params})
				if err != nil {
					return enqueueErr(err)
				}
				if background {
					a.sayRunning(tasks)
					return nil
				}
				done, err := a.waitTasks(cmd.Context(), mc, tasks, waitFor)
				if err != nil {
					return err
				}
				return a.printExecResults(done, format.Value, utc)
			})
		},
	}
	// Flags end at COMMAND: "drover exec -u kv/0 ls -la" runs "ls -la".
	cmd.Flags().SetInterspersed(false)
	mo.Add(cmd)
	format.Add(cmd, "plain", "plain", "yaml", "json")
	cmd.Flags().StringSliceVarP(&units, "unit", "u", nil, "units to run the command on (comma-separated or repeated)")
	cmd.Flags().StringSliceVarP(&apps, "application", "a", nil, "applications whose units run the command")
	cmd.Flags().StringSliceVar(&machines, "machine", nil, "machines to run the command on, outside any unit (comma-separated or repeated)")
	cmd.Flags().BoolVar(&all, "all", false, "run the command on every unit of the model")
	cmd.Flags().StringVar(&timeout, "timeout", "", "end the command after this long (e.g. 30s)")
	cmd.Flags().StringVar(&wait, "wait", "", "how long to wait for the results, e.g. --wait 5m (default: until done)")
	cmd.Flags().BoolVar(&background, "background", false, "return at once with the task ids")
	cmd.Flags().BoolVar(&utc, "utc", false, "show times in UTC")
	return cmd
}

// validMachine says whether id is a machine number as Drover gives them:
// decimal, without leading zeros.
func validMachine(id string) bool {
	if id == "" || len(id) > 1 && id[0] == '0' {
		return false
	}
	for _, c := range id {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// execReceivers are the units exec runs on: units as named, or the live
// units of apps (all: of the model) in unit order; none when neither
// units, apps nor all are given (exec on machines only).
func execReceivers(ctx context.Context, mc *modelcmd.ModelConn, units, apps []string, all bool) ([]string, error) {
	receivers := units
	if !all && len(apps) == 0 {
		for _, u := range receivers {
			if app, n, ok := strings.Cut(u, "/"); !ok || app == "" || n == "" {
				return nil, modelcmd.Usagef("--unit %q: want a unit (app/N) or app/leader", u)
			}
		}
		return receivers, nil
	}
	list, err := mc.Client.Model(mc.UUID).Units(ctx)
	if err != nil {
		return nil, err
	}
	for _, u := range list {
		if u.Life == api.Alive && (all || slices.Contains(apps, u.Application)) {
			receivers = append(receivers, u.Name)
		}
	}
	if len(receivers) == 0 {
		if all {
			return nil, fmt.Errorf("model %q has no units to run the command on", mc.Model)
		}
		return nil, fmt.Errorf("no units of %s in model %q", strings.Join(apps, ", "), mc.Model)
	}
	sort.SliceStable(receivers, func(i, j int) bool { return modelcmd.UnitLess(receivers[i], receivers[j]) })
	return receivers, nil
}

// sayRunning is exec --background's answer: the tasks, and how to follow
// one.
func (a *Commands) sayRunning(tasks []api.Task) {
	for _, t := range tasks {
		fmt.Fprintf(a.Stderr, "Running task %s on %s\n", t.ID, t.Receiver)
	}
	fmt.Fprintf(a.Stderr, "\nCheck the task status with 'drover show-task %s'\n", tasks[0].ID)
}

// output reads a task's output result and its encoding.
func output(results map[string]any, key string) (string, string) {
	out, _ := results[key].(string)
	enc, _ := results[key+"-encoding"].(string)
	return out, enc
}

// raw is output as the command wrote it: base64 decoded.
func raw(out, encoding string) string {
	if encoding == "base64" {
		if b, err := base64.StdEncoding.DecodeString(out); err == nil {
			return string(b)
		}
	}
	return out
}

// printExecResults prints what the commands printed. One receiver's output
// is written as it is (stdout and stderr to drover's); several receivers',
// and --format json or yaml, as Juju's tasks keyed by unit or machine. A command that
// failed (non-zero exit, timeout) is a failed task: the error says so as
// Juju's does, after the output.
func (a *Commands) printExecResults(tasks []api.Task, format string, utc bool) error {
	switch {
	case format == "plain" && len(tasks) == 1:
		t := tasks[0]
		fmt.Fprint(a.Stdout, withNewline(raw(output(t.Results, "stdout"))))
		fmt.Fprint(a.Stderr, withNewline(raw(output(t.Results, "stderr"))))
	case format == "plain":
		if err := a.writeTasks(tasks, "yaml", utc); err != nil {
			return err
		}
	default:
		if err := a.writeTasks(tasks, format, utc); err != nil {
			return err
		}
	}
	return taskFailure(tasks)
}

func withNewline(s string) string {
	if s != "" && !strings.HasSuffix(s, "\n") {
		return s + "\n"
	}
	return s
}
