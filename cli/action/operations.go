package action

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/cli/internal/modelcmd"
)

// An operation, as Juju's operations and show-operation show it, is the
// tasks one run request enqueued (one per unit); its ID is its first
// task's (api.Task.OperationID).
type operation struct {
	id    string
	tasks []api.Task // by ID
}

// operationView is Juju's shape of an operation.
type operationView struct {
	Summary string                       `json:"summary" yaml:"summary"`
	Status  string                       `json:"status" yaml:"status"`
	Action  operationAction              `json:"action" yaml:"action"`
	Timing  operationTiming              `json:"timing" yaml:"timing"`
	Tasks   map[string]operationTaskView `json:"tasks" yaml:"tasks"`
}

type operationAction struct {
	Name       string         `json:"name" yaml:"name"`
	Parameters map[string]any `json:"parameters,omitempty" yaml:"parameters,omitempty"`
}

type operationTiming struct {
	Enqueued  string `json:"enqueued,omitempty" yaml:"enqueued,omitempty"`
	Started   string `json:"started,omitempty" yaml:"started,omitempty"`
	Completed string `json:"completed,omitempty" yaml:"completed,omitempty"`
}

type operationTaskView struct {
	Host    string          `json:"host" yaml:"host"`
	Status  string          `json:"status" yaml:"status"`
	Timing  operationTiming `json:"timing" yaml:"timing"`
	Log     []string        `json:"log,omitempty" yaml:"log,omitempty"`
	Message string          `json:"message,omitempty" yaml:"message,omitempty"`
	Results map[string]any  `json:"results,omitempty" yaml:"results,omitempty"`
}

// groupOperations groups tasks into operations, oldest first.
func groupOperations(tasks []api.Task) []operation {
	byID := map[string]*operation{}
	var ops []*operation
	for _, t := range tasks {
		id := t.OperationID()
		op := byID[id]
		if op == nil {
			op = &operation{id: id}
			byID[id] = op
			ops = append(ops, op)
		}
		op.tasks = append(op.tasks, t)
	}
	out := make([]operation, 0, len(ops))
	for _, op := range ops {
		slices.SortFunc(op.tasks, func(a, b api.Task) int { return numCompare(a.ID, b.ID) })
		out = append(out, *op)
	}
	slices.SortFunc(out, func(a, b operation) int { return numCompare(a.id, b.id) })
	return out
}

func numCompare(a, b string) int {
	x, errA := strconv.Atoi(a)
	y, errB := strconv.Atoi(b)
	if errA != nil || errB != nil {
		return strings.Compare(a, b)
	}
	return x - y
}

// status is the operation's: running while any task runs, pending while
// any waits, else failed if any failed, cancelled or aborted if any was,
// else completed.
func (op operation) status() string {
	has := map[string]bool{}
	for _, t := range op.tasks {
		has[t.Status] = true
	}
	for _, s := range []string{api.TaskRunning, api.TaskPending, api.TaskFailed, api.TaskAborted, api.TaskCancelled} {
		if has[s] {
			return s
		}
	}
	return api.TaskCompleted
}

// summary names the operation's receivers by their tags (unit-kv-0,
// machine-0), or counts them.
func (op operation) summary() string {
	first := op.tasks[0]
	if len(op.tasks) == 1 {
		if _, ok := api.ReceiverMachine(first.Receiver); ok {
			return fmt.Sprintf("%s run on %s", first.Action, first.Receiver)
		}
		return fmt.Sprintf("%s run on unit-%s", first.Action, strings.ReplaceAll(first.Receiver, "/", "-"))
	}
	machines := 0
	for _, t := range op.tasks {
		if _, ok := api.ReceiverMachine(t.Receiver); ok {
			machines++
		}
	}
	switch machines {
	case 0:
		return fmt.Sprintf("%s run on %d units", first.Action, len(op.tasks))
	case len(op.tasks):
		return fmt.Sprintf("%s run on %d machines", first.Action, len(op.tasks))
	}
	return fmt.Sprintf("%s run on %d units and %d machines", first.Action, len(op.tasks)-machines, machines)
}

// timing is the operation's: the first enqueued and started, and the last
// completed once every task has.
func (op operation) timing() operationTiming {
	var enq, start, done time.Time
	finished := true
	for _, t := range op.tasks {
		if enq.IsZero() || t.Enqueued.Before(enq) {
			enq = t.Enqueued
		}
		if !t.Started.IsZero() && (start.IsZero() || t.Started.Before(start)) {
			start = t.Started
		}
		if t.Completed.IsZero() {
			finished = false
		} else if t.Completed.After(done) {
			done = t.Completed
		}
	}
	if !finished {
		done = time.Time{}
	}
	return operationTiming{Enqueued: stamp(enq), Started: stamp(start), Completed: stamp(done)}
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

func (op operation) view() operationView {
	v := operationView{
		Summary: op.summary(), Status: op.status(), Timing: op.timing(),
		Action: operationAction{Name: op.tasks[0].Action, Parameters: op.tasks[0].Params},
		Tasks:  map[string]operationTaskView{},
	}
	for _, t := range op.tasks {
		_, host := receiverOf(t.Receiver)
		tv := operationTaskView{Host: host, Status: t.Status, Message: t.Message, Results: t.Results,
			Timing: operationTiming{Enqueued: stamp(t.Enqueued), Started: stamp(t.Started), Completed: stamp(t.Completed)}}
		for _, l := range t.Log {
			tv.Log = append(tv.Log, stamp(l.Time)+" "+l.Message)
		}
		v.Tasks[t.ID] = tv
	}
	return v
}

// operationFilter is operations' --apps, --units, --machines, --actions
// and --status: an operation matches when one of its tasks matches every
// given list. A machine's task has no application or unit; a unit's task
// no machine.
type operationFilter struct{ apps, units, machines, actions, status []string }

func (f operationFilter) match(op operation) bool {
	in := func(list []string, v string) bool { return len(list) == 0 || slices.Contains(list, v) }
	if !in(f.status, op.status()) {
		return false
	}
	for _, t := range op.tasks {
		app, unit, machine := "", "", ""
		if id, ok := api.ReceiverMachine(t.Receiver); ok {
			machine = id
		} else {
			unit = t.Receiver
			app, _, _ = strings.Cut(t.Receiver, "/")
		}
		if in(f.apps, app) && in(f.units, unit) && in(f.machines, machine) && in(f.actions, t.Action) {
			return true
		}
	}
	return false
}

// OperationsCmd is 'drover operations'.
func (a *Commands) OperationsCmd() *cobra.Command {
	var mo modelcmd.ModelOpt
	var format modelcmd.FormatOpt
	var f operationFilter
	var limit int
	cmd := &cobra.Command{
		Use:     "operations",
		Aliases: []string{"list-operations"},
		Short:   "List the operations run in the model: the actions run, with their tasks",
		Long: `Lists operations as 'juju operations' does, oldest first. An operation is
one 'drover run' or 'drover exec': a task on each unit (or, for exec,
machine) it named. Its ID is
its first task's; 'drover show-operation ID' shows it with its tasks,
'drover show-task ID' one task. Its status is running while a task runs,
pending while one waits, then failed, aborted or cancelled if a task was,
else completed. The filters keep the operations with a task matching
each of them.`,
		Example: `  drover operations
  drover operations --apps kvstore --status completed,failed
  drover operations --units kvstore/0 --actions get --format yaml`,
		Args: modelcmd.ExactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := format.Check(); err != nil {
				return err
			}
			if limit < 0 {
				return modelcmd.Usagef("operations: --limit must be 0 (all) or more")
			}
			f.apps, f.units, f.machines, f.actions, f.status = modelcmd.SplitList(f.apps), modelcmd.SplitList(f.units),
				modelcmd.SplitList(f.machines), modelcmd.SplitList(f.actions), modelcmd.SplitList(f.status)
			return a.WithModel(cmd.Context(), mo.Ref, func(mc *modelcmd.ModelConn) error {
				return a.listOperations(cmd.Context(), mc, f, limit, format.Value)
			})
		},
	}
	mo.Add(cmd)
	format.Add(cmd, "tabular", "tabular", "json", "yaml")
	cmd.Flags().StringArrayVar(&f.apps, "apps", nil, "only operations on units of these applications")
	cmd.Flags().StringArrayVar(&f.units, "units", nil, "only operations on these units")
	cmd.Flags().StringArrayVar(&f.machines, "machines", nil, "only operations on these machines (exec --machine)")
	cmd.Flags().StringArrayVar(&f.actions, "actions", nil, "only operations running these actions")
	cmd.Flags().StringArrayVar(&f.status, "status", nil, "only operations in these states: pending, running, completed, failed, cancelled, aborted")
	cmd.Flags().IntVar(&limit, "limit", 0, "only the newest N operations (0: all)")
	return cmd
}

func (a *Commands) listOperations(ctx context.Context, mc *modelcmd.ModelConn, f operationFilter, limit int, format string) error {
	tasks, err := mc.Client.Model(mc.UUID).Tasks(ctx, api.TaskFilter{})
	if err != nil {
		return err
	}
	var ops []operation
	for _, op := range groupOperations(tasks) {
		if f.match(op) {
			ops = append(ops, op)
		}
	}
	if limit > 0 && len(ops) > limit {
		ops = ops[len(ops)-limit:] // the newest
	}
	return a.printOperations(ops, format)
}

func (a *Commands) printOperations(ops []operation, format string) error {
	if format != "tabular" {
		out := map[string]operationView{}
		for _, op := range ops {
			out[op.id] = op.view()
		}
		return modelcmd.WriteFormatted(a.Stdout, format, out)
	}
	if len(ops) == 0 {
		fmt.Fprintln(a.Stderr, "No operations to display.")
		return nil
	}
	t := &modelcmd.Table{Color: a.Terminal}
	t.Row("ID", "Status", "Started", "Finished", "Task IDs", "Summary")
	for _, op := range ops {
		ids := make([]string, len(op.tasks))
		for i, task := range op.tasks {
			ids[i] = task.ID
		}
		tm := op.timing()
		t.Row(op.id, modelcmd.StatusCell(op.status()), modelcmd.OrDash(tm.Started), modelcmd.OrDash(tm.Completed),
			strings.Join(ids, ","), op.summary())
	}
	return t.Write(a.Stdout)
}

// ShowOperationCmd is 'drover show-operation'.
func (a *Commands) ShowOperationCmd() *cobra.Command {
	var mo modelcmd.ModelOpt
	var format modelcmd.FormatOpt
	var wait time.Duration
	cmd := &cobra.Command{
		Use:   "show-operation ID",
		Short: "Show an operation: its action, status and tasks",
		Long: `Shows an operation (see 'drover operations') as 'juju show-operation'
does: its summary, status, action and parameters, timing, and each task
with its unit, status, log, message and results. With --wait, waits up to
that long for every task to finish first.`,
		Example: "  drover show-operation 3\n  drover show-operation 3 --wait 1m --format json",
		Args:    modelcmd.ExactArgs(1, "an operation id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := format.Check(); err != nil {
				return err
			}
			if _, err := strconv.Atoi(args[0]); err != nil {
				return modelcmd.Usagef("show-operation: %q is not an operation id (a number, as 'drover operations' lists them)", args[0])
			}
			return a.WithModel(cmd.Context(), mo.Ref, func(mc *modelcmd.ModelConn) error {
				return a.showOperation(cmd.Context(), mc, args[0], wait, format.Value)
			})
		},
	}
	mo.Add(cmd)
	format.Add(cmd, "yaml", "yaml", "json")
	cmd.Flags().DurationVar(&wait, "wait", 0, "wait up to this long for the operation's tasks to finish")
	return cmd
}

// showOperation prints operation id, after waiting up to wait for its
// unfinished tasks.
func (a *Commands) showOperation(ctx context.Context, mc *modelcmd.ModelConn, id string, wait time.Duration, format string) error {
	deadline := a.Now().Add(wait)
	op, err := findOperation(ctx, mc, id)
	if err != nil {
		return err
	}
	if wait > 0 {
		for _, t := range op.tasks {
			left := deadline.Sub(a.Now())
			if left <= 0 {
				break
			}
			if t.Status == api.TaskPending || t.Status == api.TaskRunning {
				if _, err := mc.Client.Model(mc.UUID).Task(ctx, t.ID, left); err != nil {
					return err
				}
			}
		}
		if op, err = findOperation(ctx, mc, id); err != nil {
			return err
		}
	}
	return modelcmd.WriteFormatted(a.Stdout, format, op.view())
}

func findOperation(ctx context.Context, mc *modelcmd.ModelConn, id string) (operation, error) {
	tasks, err := mc.Client.Model(mc.UUID).Tasks(ctx, api.TaskFilter{})
	if err != nil {
		return operation{}, err
	}
	for _, op := range groupOperations(tasks) {
		if op.id == id {
			return op, nil
		}
	}
	return operation{}, fmt.Errorf("operation %s not found; 'drover operations' lists them", id)
}
