package action

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/cli/internal/modelcmd"
)

// jujuTask is a task as `juju run`, `juju exec` and `juju show-task`
// print it with --format json or yaml: a map, so that the keys come out
// sorted as Juju's do (id, log, message, results, status, timing, unit).
// A machine's task has "machine": ID where a unit's has "unit": NAME, as
// Juju keys it by its receiver's tag kind.
// Empty stdout and stderr are left out of results and return-code is an
// integer, as Juju's convertActionOutput has them; times are Go's
// time.String() in the local zone (UTC with utc), as Juju prints them.
func jujuTask(t api.Task, utc bool) map[string]any {
	kind, id := receiverOf(t.Receiver)
	out := map[string]any{"id": t.ID, "status": t.Status, kind: id}
	if t.Message != "" {
		out["message"] = t.Message
	}
	if len(t.Results) > 0 {
		results := make(map[string]any, len(t.Results))
		for k, v := range t.Results {
			results[k] = v
		}
		for _, k := range []string{"stdout", "stderr"} {
			if s, ok := results[k].(string); ok && s != "" {
				results[k] = strings.ReplaceAll(s, "\r\n", "\n")
			} else {
				delete(results, k)
			}
		}
		if code, ok := returnCode(t.Results); ok {
			results["return-code"] = code
		}
		out["results"] = results
	}
	if len(t.Log) > 0 {
		logs := make([]string, 0, len(t.Log))
		for _, l := range t.Log {
			logs = append(logs, taskTime(l.Time, utc)+" "+l.Message)
		}
		out["log"] = logs
	}
	timing := map[string]string{}
	for k, v := range map[string]time.Time{"enqueued": t.Enqueued, "started": t.Started, "completed": t.Completed} {
		if !v.IsZero() {
			timing[k] = taskTime(v, utc)
		}
	}
	if len(timing) > 0 {
		out["timing"] = timing
	}
	return out
}

// receiverOf is a task's receiver as Juju prints it: its kind ("unit" or
// "machine") and its ID (the unit's name, the machine's number).
func receiverOf(receiver string) (kind, id string) {
	if id, ok := api.ReceiverMachine(receiver); ok {
		return "machine", id
	}
	return "unit", receiver
}

// taskTime is a task's time as Juju prints it: time.String() in the local
// zone, or in UTC.
func taskTime(t time.Time, utc bool) string {
	if utc {
		return t.UTC().String()
	}
	return t.Local().String()
}

// returnCode is a task's return-code result as an integer (JSON carries
// it as a number, which decodes as float64).
func returnCode(results map[string]any) (int, bool) {
	switch v := results["return-code"].(type) {
	case int:
		return v, true
	case float64:
		return int(v), true
	case string:
		n, err := strconv.Atoi(v)
		return n, err == nil
	}
	return 0, false
}

// writeTasks writes finished tasks keyed by unit name or machine number,
// as juju run and exec do with --format json or yaml.
func (a *Commands) writeTasks(tasks []api.Task, format string, utc bool) error {
	out := make(map[string]any, len(tasks))
	for _, t := range tasks {
		_, id := receiverOf(t.Receiver)
		out[id] = jujuTask(t, utc)
	}
	return modelcmd.WriteFormatted(a.Stdout, format, out)
}

// taskFailure is the error of run and exec when tasks did not complete
// or their command exited non-zero. Its text is Juju's ("the following
// task failed: ..."), which scripts and test libraries look for.
func taskFailure(tasks []api.Task) error {
	var list []string
	for _, t := range tasks {
		code, _ := returnCode(t.Results)
		if t.Status == api.TaskCompleted && code == 0 {
			continue
		}
		line := fmt.Sprintf(" - id %q with return code %d", t.ID, code)
		if t.Message != "" {
			line += " (" + t.Message + ")"
		}
		list = append(list, line)
	}
	if len(list) == 0 {
		return nil
	}
	slices.Sort(list)
	plural := ""
	if len(list) > 1 {
		plural = "s"
	}
	return fmt.Errorf("the following task%s failed:\n%s\n\nuse 'drover show-task' to inspect the failure%s",
		plural, strings.Join(list, "\n"), plural)
}

// errTimedOut is a wait for tasks that ran out of time; its text names
// the receivers still running ("unit kv/0", "machine 0"), as Juju's does.
type errTimedOut struct{ receivers []string }

func (e *errTimedOut) Error() string {
	names := make([]string, len(e.receivers))
	for i, r := range e.receivers {
		kind, id := receiverOf(r)
		names[i] = kind + " " + id
	}
	return "timed out waiting for results from: " + strings.Join(names, ", ")
}

// enqueueErr explains a refused enqueue; a unit or action that does not
// exist ends in "(not found)", as Juju's errors with that code do.
func enqueueErr(err error) error {
	if errors.Is(err, api.ErrNotFound) {
		return fmt.Errorf("%w (not found)", err)
	}
	return err
}

// waitOpt reads --wait of run and exec: a duration (--wait 30s or
// --wait=30s), 0 for until done.
func waitOpt(wait string) (time.Duration, error) {
	if wait == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(wait)
	if err != nil || d < 0 {
		return 0, modelcmd.Usagef("--wait %q: want a duration such as 30s or 5m", wait)
	}
	return d, nil
}

// actionParams are run's parameters: the --params file's map, then the
// KEY=VALUE arguments over it (a nested key replaces only its own leaf),
// as juju run merges them.
func actionParams(file string, args []string, stringArgs bool) (map[string]any, error) {
	out := map[string]any{}
	if file != "" {
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("--params: %w", err)
		}
		var v any
		if err := yaml.Unmarshal(data, &v); err != nil {
			return nil, modelcmd.Usagef("--params %s: %v", file, err)
		}
		switch m := v.(type) {
		case nil:
		case map[string]any:
			out = m
		default:
			return nil, modelcmd.Usagef("--params %s: want a YAML map of parameters, not a %T", file, v)
		}
	}
	kv, err := modelcmd.ParseActionParams(args, stringArgs)
	if err != nil {
		return nil, err
	}
	mergeParams(out, kv)
	return out, nil
}

func mergeParams(dst, src map[string]any) {
	for k, v := range src {
		sm, sok := v.(map[string]any)
		dm, dok := dst[k].(map[string]any)
		if sok && dok {
			mergeParams(dm, sm)
			continue
		}
		dst[k] = v
	}
}

// waitTasks waits until every task finishes or limit passes (0: no
// limit); on expiry it returns an *errTimedOut naming the unfinished
// tasks' receivers.
func (a *Commands) waitTasks(ctx context.Context, mc *modelcmd.ModelConn, tasks []api.Task, limit time.Duration) ([]api.Task, error) {
	if limit > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, limit)
		defer cancel()
	}
	p := a.NewProgress(fmt.Sprintf("Waiting for task %s on %s (%s)...", tasks[0].ID, tasks[0].Receiver, tasks[0].Status))
	defer p.Done("")
	out := slices.Clone(tasks)
	timedOut := func() error {
		var receivers []string
		for _, t := range out {
			if !finished(t.Status) {
				receivers = append(receivers, t.Receiver)
			}
		}
		return &errTimedOut{receivers: receivers}
	}
	for i := range out {
		for !finished(out[i].Status) {
			if limit > 0 && ctx.Err() != nil {
				return nil, timedOut()
			}
			p.Update("Waiting for task %s on %s (%s)...", out[i].ID, out[i].Receiver, out[i].Status)
			// The server holds the answer until the task finishes or the
			// hold passes; loop to bound each request.
			hold := 30 * time.Second
			if dl, ok := ctx.Deadline(); ok {
				hold = min(hold, max(time.Until(dl), time.Millisecond))
			}
			t, err := mc.Client.Model(mc.UUID).Task(ctx, out[i].ID, hold)
			if err != nil {
				if limit > 0 && (ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded)) {
					return nil, timedOut()
				}
				return nil, err
			}
			out[i] = *t
		}
	}
	return out, nil
}

func finished(status string) bool {
	return status != api.TaskPending && status != api.TaskRunning
}
