package state

import (
	"fmt"
	"testing"

	"github.com/droverhq/drover/api"
)

func TestStatusHistoryBound(t *testing.T) {
	h := newHarness(t)
	h.seed()
	h.deploy("kv", "kv", 1)
	for i := range HistoryLimit + 5 {
		h.must(SetStatusType, &SetStatusRequest{ModelUUID: testModel, Kind: api.StatusKindWorkload, Entity: "kv/0",
			Status: api.Status{Status: "active", Message: fmt.Sprint(i), Since: t0}})
	}
	h.must(SetStatusType, &SetStatusRequest{ModelUUID: testModel, Kind: api.StatusKindAgent, Entity: "kv/0",
		Status: api.Status{Status: "error", Since: t0}})
	hist, err := h.snap().StatusHistory(testModel, "kv/0", api.StatusKindWorkload, 0)
	if err != nil || len(hist) != HistoryLimit {
		t.Fatalf("%d entries, %v", len(hist), err)
	}
	if hist[0].Status.Message != fmt.Sprint(HistoryLimit+4) || hist[HistoryLimit-1].Status.Message != "5" {
		t.Errorf("kept %q..%q", hist[0].Status.Message, hist[HistoryLimit-1].Status.Message)
	}
	if top, _ := h.snap().StatusHistory(testModel, "kv/0", api.StatusKindAgent, 1); len(top) != 1 || top[0].Status.Status != "error" {
		t.Errorf("agent history %v", top)
	}
	if u := h.unit("kv/0"); u.WorkloadStatus.Message != fmt.Sprint(HistoryLimit+4) || u.AgentStatus.Status != "error" {
		t.Errorf("unit status %+v", u)
	}
	for _, tc := range []struct {
		req  SetStatusRequest
		want error
	}{
		{SetStatusRequest{Kind: api.StatusKindWorkload, Entity: "kv/9"}, api.ErrNotFound},
		{SetStatusRequest{Kind: "bogus", Entity: "kv/0"}, api.ErrInvalid},
		{SetStatusRequest{Kind: api.StatusKindModel, Entity: "other"}, api.ErrInvalid},
		{SetStatusRequest{Kind: api.StatusKindMachine, Entity: "7"}, api.ErrNotFound},
	} {
		tc.req.ModelUUID, tc.req.Status.Status = testModel, "active"
		h.fails(SetStatusType, &tc.req, tc.want)
	}
	for _, kind := range []string{api.StatusKindApplication, api.StatusKindMachine, api.StatusKindInstance, api.StatusKindModel} {
		entity := map[string]string{api.StatusKindApplication: "kv", api.StatusKindModel: testModel}[kind]
		if entity == "" {
			entity = "0"
		}
		h.must(SetStatusType, &SetStatusRequest{ModelUUID: testModel, Kind: kind, Entity: entity, Status: api.Status{Status: "active"}})
	}

	// Resolved needs the agent in error; it bumps RetryVersion.
	u := h.must(SetResolvedType, &SetResolvedRequest{ModelUUID: testModel, Unit: "kv/0", Mode: "retry"}).(*api.Unit)
	if u.Resolved != "retry" || u.RetryVersion != 1 {
		t.Errorf("resolved %+v", u)
	}
	h.fails(SetResolvedType, &SetResolvedRequest{ModelUUID: testModel, Unit: "kv/0", Mode: "retry"}, api.ErrConflict)
	h.fails(SetResolvedType, &SetResolvedRequest{ModelUUID: testModel, Unit: "kv/0", Mode: "maybe"}, api.ErrInvalid)
	h.must(ClearResolvedType, &ClearResolvedRequest{ModelUUID: testModel, Unit: "kv/0"})
	h.must(SetStatusType, &SetStatusRequest{ModelUUID: testModel, Kind: api.StatusKindAgent, Entity: "kv/0", Status: api.Status{Status: "idle"}})
	h.fails(SetResolvedType, &SetResolvedRequest{ModelUUID: testModel, Unit: "kv/0", Mode: "retry"}, api.ErrConflict)
	u = h.must(SetWorkloadVersionType, &SetWorkloadVersionRequest{ModelUUID: testModel, Unit: "kv/0", Version: "1.2"}).(*api.Unit)
	if u.WorkloadVersion != "1.2" || h.app("kv").WorkloadVersion != "1.2" {
		t.Error("workload version")
	}
}

func TestUnitPorts(t *testing.T) {
	h := newHarness(t)
	h.seed()
	h.deploy("kv", "kv", 1)
	h.deploy("web", "web", 1, "0")
	open := func(unit string, ports ...api.Port) (*api.Unit, error) {
		v, err := h.apply(SetUnitPortsType, &SetUnitPortsRequest{ModelUUID: testModel, Unit: unit, Open: ports})
		u, _ := v.(*api.Unit)
		return u, err
	}
	u, err := open("kv/0", api.Port{Protocol: "tcp", From: 8000, To: 8010}, api.Port{Protocol: "tcp", From: 8000, To: 8010}, api.Port{Protocol: "icmp"})
	if err != nil || len(u.OpenPorts) != 2 || u.OpenPorts[0].Protocol != "icmp" {
		t.Fatalf("open: %+v %v", u, err)
	}
	if _, err := open("web/0", api.Port{Protocol: "tcp", From: 8005, To: 8005}); !errorsIs(err, api.ErrConflict) {
		t.Errorf("overlap on the same machine: %v", err)
	}
	if _, err := open("web/0", api.Port{Protocol: "udp", From: 8005, To: 8005}); err != nil {
		t.Errorf("other protocol: %v", err)
	}
	if _, err := open("web/0", api.Port{Protocol: "tcp", From: 0, To: 80}); !errorsIs(err, api.ErrInvalid) {
		t.Errorf("bad range: %v", err)
	}
	u = h.must(SetUnitPortsType, &SetUnitPortsRequest{ModelUUID: testModel, Unit: "kv/0",
		Close: []api.Port{{Protocol: "tcp", From: 8000, To: 8010}, {Protocol: "icmp"}}}).(*api.Unit)
	if len(u.OpenPorts) != 0 {
		t.Errorf("close: %+v", u.OpenPorts)
	}
}

func TestTasks(t *testing.T) {
	h := newHarness(t)
	h.seed()
	h.deploy("kv", "kv", 1)
	enq := func() *api.Task {
		return h.must(EnqueueTaskType, &EnqueueTaskRequest{ModelUUID: testModel, Receiver: "kv/0", Action: "backup",
			Params: map[string]any{"to": "/tmp"}, Now: t0}).(*api.Task)
	}
	a, b := enq(), enq()
	if a.ID != "0" || b.ID != "1" || a.Status != api.TaskPending {
		t.Fatalf("ids %s %s", a.ID, b.ID)
	}
	h.fails(EnqueueTaskType, &EnqueueTaskRequest{ModelUUID: testModel, Receiver: "kv/5", Action: "x"}, api.ErrNotFound)
	h.fails(EnqueueTaskType, &EnqueueTaskRequest{ModelUUID: testModel, Receiver: "kv/0"}, api.ErrInvalid)
	h.fails(AppendTaskLogType, &AppendTaskLogRequest{ModelUUID: testModel, ID: "0", Message: "x"}, api.ErrConflict)
	h.must(StartTaskType, &StartTaskRequest{ModelUUID: testModel, ID: "0", Now: t0})
	h.fails(StartTaskType, &StartTaskRequest{ModelUUID: testModel, ID: "0", Now: t0}, api.ErrConflict)
	h.must(AppendTaskLogType, &AppendTaskLogRequest{ModelUUID: testModel, ID: "0", Time: t0, Message: "working"})
	h.fails(FinishTaskType, &FinishTaskRequest{ModelUUID: testModel, ID: "0", Status: api.TaskRunning}, api.ErrInvalid)
	done := h.must(FinishTaskType, &FinishTaskRequest{ModelUUID: testModel, ID: "0", Status: api.TaskCompleted,
		Results: map[string]any{"ok": true}, Now: t0}).(*api.Task)
	if len(done.Log) != 1 || done.Results["ok"] != true {
		t.Errorf("finished %+v", done)
	}
	h.must(CancelTaskType, &CancelTaskRequest{ModelUUID: testModel, ID: "1", Now: t0})
	h.fails(CancelTaskType, &CancelTaskRequest{ModelUUID: testModel, ID: "1"}, api.ErrConflict)
	h.fails(StartTaskType, &StartTaskRequest{ModelUUID: testModel, ID: "9"}, api.ErrNotFound)
	if ts, _ := h.snap().ListTasks(testModel, TaskFilter{Status: api.TaskCancelled}); len(ts) != 1 || ts[0].ID != "1" {
		t.Errorf("filter by status: %v", ts)
	}
	if ts, _ := h.snap().ListTasks(testModel, TaskFilter{Receiver: "kv/0"}); len(ts) != 2 {
		t.Errorf("filter by receiver: %v", ts)
	}
}
