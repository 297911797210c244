package action

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/cli/internal/modelcmd"
	"github.com/droverhq/drover/cli/internal/modelcmd/modelcmdtest"
)

func at(sec int) time.Time { return time.Date(2026, 11, 21, 21, 0, sec, 0, time.UTC) }

// operationTasks: operation 1 (get on two units; the first task leaves
// Operation empty, as the controller stores it), operation 3 (backup on
// one unit, failed), operation 4 (a task from before operations were
// recorded: its own operation), operation 5 (pending).
var operationTasks = []api.Task{
	{ID: "3", Receiver: "web/0", Action: "backup", Status: api.TaskFailed, Message: "disk full", Enqueued: at(3), Started: at(4), Completed: at(5)},
	{ID: "1", Receiver: "kvstore/0", Action: "get", Params: map[string]any{"key": "foo"}, Status: api.TaskCompleted,
		Results: map[string]any{"value": "bar"}, Log: []api.TaskLog{{Time: at(2), Message: "reading"}}, Enqueued: at(1), Started: at(2), Completed: at(3)},
	{ID: "2", Operation: "1", Receiver: "kvstore/1", Action: "get", Params: map[string]any{"key": "foo"}, Status: api.TaskCompleted,
		Enqueued: at(1), Started: at(2), Completed: at(4)},
	{ID: "4", Receiver: "kvstore/0", Action: "get", Status: api.TaskCompleted, Enqueued: at(6), Started: at(7), Completed: at(8)},
	{ID: "5", Receiver: "kvstore/1", Action: "set", Status: api.TaskPending, Enqueued: at(9)},
}

func operationsModel(t *testing.T) (*Commands, *modelcmd.ModelConn, func() string, func() string) {
	const uuid = "5d2c6a58-0b5a-4a3b-9a57-0a7c1d1d2f00"
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models/"+uuid+"/tasks", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(operationTasks)
	})
	e, out, errb, mc := modelcmdtest.AtFakeModel(t, mux, uuid)
	return &Commands{Env: e}, mc, out.String, errb.String
}

// TestOperationsGroupTheTasksOfARun: the tasks one run enqueued are one
// operation, named by its first task; filters match any of its tasks.
func TestOperationsGroupTheTasksOfARun(t *testing.T) {
	for _, c := range []struct {
		f     operationFilter
		limit int
		want  string
	}{
		{operationFilter{}, 0, `ID  Status     Started               Finished              Task IDs  Summary
1   completed  2026-11-21T21:00:02Z  2026-11-21T21:00:04Z  1,2       get run on 2 units
3   failed     2026-11-21T21:00:04Z  2026-11-21T21:00:05Z  3         backup run on unit-web-0
4   completed  2026-11-21T21:00:07Z  2026-11-21T21:00:08Z  4         get run on unit-kvstore-0
5   pending    -                     -                     5         set run on unit-kvstore-1
`},
		{operationFilter{units: []string{"kvstore/1"}, actions: []string{"get"}}, 0, "1   completed"},
		{operationFilter{apps: []string{"web"}}, 0, "3   failed"},
		{operationFilter{status: []string{"pending", "failed"}}, 0, "3   failed"},
		{operationFilter{}, 1, "5   pending"},
	} {
		a, mc, out, _ := operationsModel(t)
		if err := a.listOperations(t.Context(), mc, c.f, c.limit, "tabular"); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out(), c.want) {
			t.Errorf("operations %+v --limit %d:\n%s\nwant it to contain:\n%s", c.f, c.limit, out(), c.want)
		}
	}
	a, mc, out, _ := operationsModel(t)
	if err := a.listOperations(t.Context(), mc, operationFilter{status: []string{"pending"}, apps: []string{"web"}}, 0, "tabular"); err != nil || out() != "" {
		t.Errorf("no operation matching: %v %q", err, out())
	}
}

// TestShowOperationShape: show-operation prints Juju's shape.
func TestShowOperationShape(t *testing.T) {
	a, mc, out, _ := operationsModel(t)
	if err := a.showOperation(t.Context(), mc, "1", 0, "yaml"); err != nil {
		t.Fatal(err)
	}
	want := `summary: get run on 2 units
status: completed
action:
  name: get
  parameters:
    key: foo
timing:
  enqueued: "2026-11-21T21:00:01Z"
  started: "2026-11-21T21:00:02Z"
  completed: "2026-11-21T21:00:04Z"
tasks:
  "1":
    host: kvstore/0
    status: completed
    timing:
      enqueued: "2026-11-21T21:00:01Z"
      started: "2026-11-21T21:00:02Z"
      completed: "2026-11-21T21:00:03Z"
    log:
      - 2026-11-21T21:00:02Z reading
    results:
      value: bar
  "2":
    host: kvstore/1
    status: completed
    timing:
      enqueued: "2026-11-21T21:00:01Z"
      started: "2026-11-21T21:00:02Z"
      completed: "2026-11-21T21:00:04Z"
`
	if out() != want {
		t.Errorf("show-operation 1:\n%s\nwant:\n%s", out(), want)
	}
	if err := a.showOperation(t.Context(), mc, "2", 0, "yaml"); err == nil || err.Error() != "operation 2 not found; 'drover operations' lists them" {
		t.Errorf("show-operation of a task that is not an operation's first: %v", err)
	}
}

// TestOperationsOfMachineExec: an exec on machines is an operation whose
// summary names the machine's tag, whose tasks' host is the machine
// number, and which --machines selects (and --units and --apps do not).
func TestOperationsOfMachineExec(t *testing.T) {
	ops := groupOperations(append(machineTasks(), api.Task{ID: "9", Receiver: "machine-4", Action: api.ExecAction, Status: api.TaskPending}))
	if len(ops) != 2 {
		t.Fatalf("%d operations, want 2", len(ops))
	}
	if got := ops[0].summary(); got != "juju-exec run on 2 machines" {
		t.Errorf("summary %q", got)
	}
	if got := ops[1].summary(); got != "juju-exec run on machine-4" {
		t.Errorf("summary %q", got)
	}
	if v := ops[0].view(); v.Tasks["8"].Host != "1" {
		t.Errorf("task 8's host %q, want 1", v.Tasks["8"].Host)
	}
	for _, c := range []struct {
		f    operationFilter
		want bool
	}{
		{operationFilter{machines: []string{"1"}}, true},
		{operationFilter{machines: []string{"4"}}, false},
		{operationFilter{units: []string{"machine-0"}}, false},
		{operationFilter{apps: []string{"machine-0"}}, false},
	} {
		if got := c.f.match(ops[0]); got != c.want {
			t.Errorf("%+v matches operation 7: %v, want %v", c.f, got, c.want)
		}
	}
}
