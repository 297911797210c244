package state

import (
	"errors"
	"testing"

	"github.com/droverhq/drover/api"
)

// TestEnqueueExecOnMachine: juju-exec queued on a machine is a task whose
// receiver is the machine's tag; it is listed by that receiver, and runs
// through start and finish as a unit's task does. A machine that does not
// exist is not found, any other action on a machine and a request naming
// both a unit and a machine are invalid.
func TestEnqueueExecOnMachine(t *testing.T) {
	h := newHarness(t)
	h.seed()
	h.deploy("kv", "kv", 1)
	params := map[string]any{"command": "hostname"}
	task := h.must(EnqueueTaskType, &EnqueueTaskRequest{ModelUUID: testModel, Machine: "0", Action: api.ExecAction,
		Params: params, Parallel: true, Now: t0}).(*api.Task)
	if task.Receiver != "machine-0" || task.Status != api.TaskPending || task.Params["command"] != "hostname" {
		t.Fatalf("task = %+v, want a pending juju-exec for machine-0", task)
	}
	if id, ok := api.ReceiverMachine(task.Receiver); !ok || id != "0" {
		t.Fatalf("ReceiverMachine(%q) = %q, %v", task.Receiver, id, ok)
	}
	list, err := h.snap().ListTasks(testModel, TaskFilter{Receiver: "machine-0"})
	if err != nil || len(list) != 1 || list[0].ID != task.ID {
		t.Fatalf("tasks of machine-0 = %v (%v), want task %s", list, err, task.ID)
	}
	h.must(StartTaskType, &StartTaskRequest{ModelUUID: testModel, ID: task.ID, Now: t0})
	done := h.must(FinishTaskType, &FinishTaskRequest{ModelUUID: testModel, ID: task.ID, Status: api.TaskCompleted,
		Results: map[string]any{"return-code": 0, "stdout": "m0\n"}, Now: t0}).(*api.Task)
	if done.Status != api.TaskCompleted || done.Receiver != "machine-0" {
		t.Fatalf("finished task = %+v", done)
	}

	for _, c := range []struct {
		req  *EnqueueTaskRequest
		want error
	}{
		{&EnqueueTaskRequest{ModelUUID: testModel, Machine: "7", Action: api.ExecAction, Params: params, Now: t0}, api.ErrNotFound},
		{&EnqueueTaskRequest{ModelUUID: testModel, Machine: "0", Action: "backup", Now: t0}, api.ErrInvalid},
		{&EnqueueTaskRequest{ModelUUID: testModel, Receiver: "kv/0", Machine: "0", Action: api.ExecAction, Params: params, Now: t0}, api.ErrInvalid},
	} {
		if _, err := h.apply(EnqueueTaskType, c.req); !errors.Is(err, c.want) {
			t.Errorf("enqueue %+v: %v, want %v", c.req, err, c.want)
		}
	}
}
