package spoke

import (
	"testing"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/tests/testkit"
)

// TestMachineExecTasks: juju-exec on a machine (receiver machine-N) reaches
// that machine's agent in its machine state, and only that agent may
// start and finish it; other actions cannot run on a machine, and an
// unknown machine is not found.
func TestMachineExecTasks(t *testing.T) {
	testkit.CheckLeaks(t)
	e := newAgentEnv(t, 1)
	ctx := t.Context()
	m0, m1 := e.dial(t, 0, "0"), e.dial(t, 0, "1")
	mc := e.cl.Model(e.model)
	tasks, err := mc.RunAction(ctx, api.RunActionRequest{Receivers: []string{"machine-0"}, Action: api.ExecAction,
		Params: map[string]any{"command": "hostname"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(tasks) != 1 || tasks[0].Receiver != "machine-0" || tasks[0].Status != api.TaskPending {
		t.Fatalf("tasks = %+v, want one pending on machine-0", tasks)
	}
	id := tasks[0].ID
	m0.waitState(t, "the task reaches machine 0", func(st *api.MachineState) bool {
		return len(st.Tasks) == 1 && st.Tasks[0].ID == id && st.Tasks[0].Params["command"] == "hostname"
	})
	if st := m1.waitState(t, "machine 1's state", func(*api.MachineState) bool { return true }); len(st.Tasks) != 0 {
		t.Fatalf("machine 1 was sent %+v", st.Tasks)
	}
	wantCode(t, "another machine's task", m1.call(api.AgentStartTask, api.AgentTaskParams{Machine: "1", ID: id}, nil), api.CodeForbidden, "not for machine")
	wantCode(t, "a machine not the agent's", m1.call(api.AgentStartTask, api.AgentTaskParams{Machine: "0", ID: id}, nil), api.CodeForbidden, "not this agent's")
	wantCode(t, "a unit and a machine", m0.call(api.AgentStartTask, api.AgentTaskParams{Unit: "kv/0", Machine: "0", ID: id}, nil), api.CodeBadRequest, "not both")
	for _, step := range []struct {
		method string
		p      api.AgentTaskParams
	}{
		{api.AgentStartTask, api.AgentTaskParams{Machine: "0", ID: id}},
		{api.AgentFinishTask, api.AgentTaskParams{Machine: "0", ID: id, Status: api.TaskCompleted, Results: map[string]any{"return-code": 0, "stdout": "m0\n"}}},
	} {
		if err := m0.call(step.method, step.p, nil); err != nil {
			t.Fatalf("%s: %v", step.method, err)
		}
	}
	if task, err := mc.Task(ctx, id, 0); err != nil || task.Status != api.TaskCompleted || task.Results["stdout"] != "m0\n" {
		t.Fatalf("task %+v %v", task, err)
	}
	m0.waitState(t, "the finished task leaves the state", func(st *api.MachineState) bool { return len(st.Tasks) == 0 })

	_, err = mc.RunAction(ctx, api.RunActionRequest{Receivers: []string{"machine-0"}, Action: "compact"})
	wantCode(t, "an action on a machine", err, api.CodeInvalid, "only juju-exec runs on a machine")
	_, err = mc.RunAction(ctx, api.RunActionRequest{Receivers: []string{"machine-9"}, Action: api.ExecAction, Params: map[string]any{"command": "true"}})
	wantCode(t, "an unknown machine", err, api.CodeNotFound, `machine "9" not found`)
}
