package spoke

import (
	"testing"

	"github.com/droverhq/drover/api"
)

// TestRunRequestIsOneOperation: the tasks one run request enqueues share
// its first task's ID as their operation, as Juju's operations group them;
// the next request is an operation of its own.
func TestRunRequestIsOneOperation(t *testing.T) {
	e := newAgentEnv(t, 1)
	ctx := t.Context()
	run := func(units ...string) []api.Task {
		t.Helper()
		tasks, err := e.cl.Model(e.model).RunAction(ctx, api.RunActionRequest{Receivers: units, Action: "compact"})
		if err != nil || len(tasks) != len(units) {
			t.Fatalf("run on %v: %v %+v", units, err, tasks)
		}
		return tasks
	}
	first, second := run("kv/0", "kv/1"), run("kv/1")
	if first[0].OperationID() != first[0].ID || first[1].OperationID() != first[0].ID || first[1].Operation != first[0].ID {
		t.Errorf("one request's tasks: %+v", first)
	}
	if second[0].OperationID() != second[0].ID {
		t.Errorf("the next request's task: %+v", second[0])
	}
	listed, err := e.cl.Model(e.model).Tasks(ctx, api.TaskFilter{Receiver: "kv/1"})
	if err != nil {
		t.Fatal(err)
	}
	ops := map[string]string{}
	for _, task := range listed {
		ops[task.ID] = task.OperationID()
	}
	if ops[first[1].ID] != first[0].ID || ops[second[0].ID] != second[0].ID {
		t.Errorf("listed tasks' operations: %v", ops)
	}
}
