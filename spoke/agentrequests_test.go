package spoke

import (
	"bufio"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/tests/testkit"
)

func TestAgentRequests(t *testing.T) {
	testkit.CheckLeaks(t)
	e := newAgentEnv(t, 1)
	ctx := t.Context()
	kv0, kv1, web := e.dial(t, 0, "0"), e.dial(t, 0, "1"), e.dial(t, 0, "2")
	for _, c := range []struct {
		a    *testAgent
		unit string
	}{{kv0, "kv/0"}, {kv1, "kv/1"}, {web, "web/0"}} {
		c.a.waitState(t, "initial", func(st *api.MachineState) bool { return st.Units[c.unit] != nil })
	}

	// Every method refuses another machine's unit.
	for _, m := range []struct {
		method string
		params any
	}{
		{api.AgentSetStatus, api.AgentStatusParams{Unit: "kv/1", Kind: api.StatusKindWorkload, Status: api.Status{Status: "active"}}},
		{api.AgentSetWorkloadVersion, api.AgentUnitParams{Unit: "kv/1", Version: "1"}},
		{api.AgentClaimLeader, api.AgentLeaderParams{Unit: "kv/1"}},
		{api.AgentEnterScope, api.AgentScopeParams{Unit: "kv/1", RelationID: e.rel}},
		{api.AgentLeaveScope, api.AgentScopeParams{Unit: "kv/1", RelationID: e.rel}},
		{api.AgentCommitHook, api.AgentHookChanges{Unit: "kv/1"}},
		{api.AgentReadSettings, api.AgentReadParams{Unit: "kv/1", RelationID: e.rel, Owner: "web/0"}},
		{api.AgentStartTask, api.AgentTaskParams{Unit: "kv/1", ID: "0"}},
		{api.AgentUnitDead, api.AgentUnitParams{Unit: "kv/1"}},
		{api.AgentGoalState, api.AgentUnitParams{Unit: "kv/1"}},
		{api.AgentStatusGet, api.AgentUnitParams{Unit: "kv/1"}},
		{api.AgentCharmState, api.AgentUnitParams{Unit: "kv/1"}},
		{api.AgentLeaderSettings, api.AgentUnitParams{Unit: "web/0"}},
		{api.AgentLog, api.AgentLogParams{Unit: "web/0", Message: "x"}},
	} {
		wantCode(t, m.method, kv0.call(m.method, m.params, nil), api.CodeForbidden, "is not on machine 0")
	}
	wantCode(t, "unknown", kv0.call("bogus", api.AgentUnitParams{Unit: "kv/0"}, nil), api.CodeBadRequest, "unknown agent method")

	// Leadership: kv/0 claims; kv/1's claim is a plain "no".
	var lr api.AgentLeaderResult
	if err := kv0.call(api.AgentClaimLeader, api.AgentLeaderParams{Unit: "kv/0", Duration: time.Minute}, &lr); err != nil || !lr.Leader {
		t.Fatalf("claim: %+v %v", lr, err)
	}
	if err := kv1.call(api.AgentClaimLeader, api.AgentLeaderParams{Unit: "kv/1", Duration: time.Minute}, &lr); err != nil || lr.Leader || lr.Holder != "kv/0" {
		t.Fatalf("refused claim: %+v %v", lr, err)
	}
	appStatus := func(unit string) api.AgentStatusParams {
		return api.AgentStatusParams{Unit: unit, Kind: api.StatusKindApplication, Status: api.Status{Status: "active", Message: "ok"}}
	}
	if err := kv0.call(api.AgentSetStatus, appStatus("kv/0"), nil); err != nil {
		t.Fatal(err)
	}
	wantCode(t, "app status by non-leader", kv1.call(api.AgentSetStatus, appStatus("kv/1"), nil), api.CodeNotLeader, "this unit is not the leader")
	if err := kv1.call(api.AgentSetStatus, api.AgentStatusParams{Unit: "kv/1", Kind: api.StatusKindWorkload, Status: api.Status{Status: "blocked", Message: "m"}}, nil); err != nil {
		t.Fatal(err)
	}
	var sg api.AgentStatusResult
	if err := kv0.call(api.AgentStatusGet, api.AgentUnitParams{Unit: "kv/0", Application: true}, &sg); err != nil ||
		sg.Application == nil || sg.Application.Message != "ok" || sg.Units["kv/1"].Status != "blocked" {
		t.Fatalf("status-get --application: %+v %v", sg, err)
	}
	wantCode(t, "status-get app by non-leader", kv1.call(api.AgentStatusGet, api.AgentUnitParams{Unit: "kv/1", Application: true}, nil), api.CodeNotLeader, "this unit is not the leader")
	if err := kv1.call(api.AgentStatusGet, api.AgentUnitParams{Unit: "kv/1"}, &sg); err != nil || sg.Unit.Status != "blocked" {
		t.Fatalf("status-get: %+v %v", sg, err)
	}
	if err := kv0.call(api.AgentSetWorkloadVersion, api.AgentUnitParams{Unit: "kv/0", Version: "7.2"}, nil); err != nil {
		t.Fatal(err)
	}

	// Scopes and relation data.
	for _, c := range []struct {
		a    *testAgent
		unit string
	}{{kv0, "kv/0"}, {kv1, "kv/1"}, {web, "web/0"}} {
		if err := c.a.call(api.AgentEnterScope, api.AgentScopeParams{Unit: c.unit, RelationID: e.rel, Settings: map[string]string{"who": c.unit}}, nil); err != nil {
			t.Fatal(err)
		}
	}
	wantCode(t, "enter unknown relation", kv0.call(api.AgentEnterScope, api.AgentScopeParams{Unit: "kv/0", RelationID: 99}, nil), api.CodeNotFound, "relation not found")
	wantCode(t, "app bag by non-leader", kv1.call(api.AgentCommitHook, api.AgentHookChanges{Unit: "kv/1",
		StateSet:  map[string]string{"lost": "1"},
		Relations: []api.SettingsChange{{RelationID: e.rel, App: true, Set: map[string]string{"x": "1"}}}}, nil), api.CodeNotLeader, "cannot write relation settings")
	if err := kv0.call(api.AgentCommitHook, api.AgentHookChanges{Unit: "kv/0",
		Relations:      []api.SettingsChange{{RelationID: e.rel, App: true, Set: map[string]string{"password": "pw"}}},
		StateSet:       map[string]string{"k": "v"},
		LeaderSettings: &api.SettingsChange{Set: map[string]string{"cluster": "c1"}}}, nil); err != nil {
		t.Fatal(err)
	}
	var bag map[string]string
	if err := web.call(api.AgentReadSettings, api.AgentReadParams{Unit: "web/0", RelationID: e.rel, Owner: "kv", App: true}, &bag); err != nil || bag["password"] != "pw" {
		t.Fatalf("web reads kv's app bag: %v %v", bag, err)
	}
	if err := web.call(api.AgentReadSettings, api.AgentReadParams{Unit: "web/0", RelationID: e.rel, Owner: "kv/1"}, &bag); err != nil || bag["who"] != "kv/1" {
		t.Fatalf("web reads kv/1's bag: %v %v", bag, err)
	}
	wantCode(t, "non-leader reads own app bag", kv1.call(api.AgentReadSettings, api.AgentReadParams{Unit: "kv/1", RelationID: e.rel, Owner: "kv", App: true}, nil), api.CodeNotLeader, "not the leader")
	if err := kv1.call(api.AgentReadSettings, api.AgentReadParams{Unit: "kv/1", RelationID: e.peer, Owner: "kv", App: true}, &bag); err != nil {
		t.Fatalf("peer app bag is readable by every unit: %v", err)
	}
	wantCode(t, "relation of another app", web.call(api.AgentReadSettings, api.AgentReadParams{Unit: "web/0", RelationID: e.peer, Owner: "kv", App: true}, nil), api.CodeNotFound, "relation not found")
	var cs, ls map[string]string
	if err := kv1.call(api.AgentCharmState, api.AgentUnitParams{Unit: "kv/1"}, &cs); err != nil || len(cs) != 0 {
		t.Fatalf("failed commit left charm state: %v %v", cs, err)
	}
	if err := kv0.call(api.AgentCharmState, api.AgentUnitParams{Unit: "kv/0"}, &cs); err != nil || cs["k"] != "v" {
		t.Fatalf("charm state: %v %v", cs, err)
	}
	if err := kv1.call(api.AgentLeaderSettings, api.AgentUnitParams{Unit: "kv/1"}, &ls); err != nil || ls["cluster"] != "c1" {
		t.Fatalf("leader settings: %v %v", ls, err)
	}
	kv1.waitState(t, "leader settings version", func(st *api.MachineState) bool { return st.Units["kv/1"].LeaderSettingsVersion == 1 })

	// Goal state.
	var gs api.GoalState
	if err := web.call(api.AgentGoalState, api.AgentUnitParams{Unit: "web/0"}, &gs); err != nil {
		t.Fatal(err)
	}
	if gs.Units["web/0"].Status == "" || len(gs.Relations["db"]) != 3 || gs.Relations["db"]["kv"].Status != "joined" ||
		gs.Relations["db"]["kv/1"].Status != "blocked" || len(gs.Relations["db"]["kv/1"].Since) != len("2006-01-02 15:04:05Z") {
		t.Fatalf("goal state %+v", gs)
	}

	// Tasks: only the receiver's machine may run them.
	tasks, err := e.cl.Model(e.model).RunAction(ctx, api.RunActionRequest{Receivers: []string{"kv/0"}, Action: "compact"})
	if err != nil {
		t.Fatal(err)
	}
	id := tasks[0].ID
	wantCode(t, "task of another unit", kv1.call(api.AgentStartTask, api.AgentTaskParams{Unit: "kv/1", ID: id}, nil), api.CodeForbidden, "not for unit")
	for _, step := range []struct {
		method string
		p      api.AgentTaskParams
	}{
		{api.AgentStartTask, api.AgentTaskParams{Unit: "kv/0", ID: id}},
		{api.AgentLogTask, api.AgentTaskParams{Unit: "kv/0", ID: id, Message: "compacting"}},
		{api.AgentFinishTask, api.AgentTaskParams{Unit: "kv/0", ID: id, Status: api.TaskCompleted, Results: map[string]any{"n": 1}}},
	} {
		if err := kv0.call(step.method, step.p, nil); err != nil {
			t.Fatalf("%s: %v", step.method, err)
		}
	}
	if task, err := e.cl.Model(e.model).Task(ctx, id, 0); err != nil || task.Status != api.TaskCompleted || len(task.Log) != 1 {
		t.Fatalf("task %+v %v", task, err)
	}

	// Logs reach debug-log.
	if err := kv0.call(api.AgentLog, api.AgentLogParams{Unit: "kv/0", Level: "INFO", Module: "unit.kv/0.juju-log", Message: "hello"}, nil); err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequestWithContext(ctx, "GET", "https://"+e.c.nodes[0].cfg.Listen+"/v1/models/"+e.model+"/logs", nil)
	req.SetBasicAuth(e.c.cred.User, e.c.cred.Password)
	resp, err := testHTTPClient(e.c.cred.CACert).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var rec api.LogRecord
	line, _ := bufio.NewReader(resp.Body).ReadBytes('\n')
	resp.Body.Close()
	if err := json.Unmarshal(line, &rec); err != nil || rec.Entity != "unit-kv-0" || rec.Message != "hello" || rec.Seq != 1 {
		t.Fatalf("debug-log: %q %v", line, err)
	}

	// unit-dead: refused while alive or in scope; then the unit goes.
	wantCode(t, "alive unit dead", kv1.call(api.AgentUnitDead, api.AgentUnitParams{Unit: "kv/1"}, nil), api.CodeConflict, "is alive")
	if err := e.cl.Model(e.model).RemoveUnit(ctx, "kv/1", false); err != nil {
		t.Fatal(err)
	}
	wantCode(t, "in scope", kv1.call(api.AgentUnitDead, api.AgentUnitParams{Unit: "kv/1"}, nil), api.CodeConflict, "still in relation")
	if err := kv1.call(api.AgentLeaveScope, api.AgentScopeParams{Unit: "kv/1", RelationID: e.rel}, nil); err != nil {
		t.Fatal(err)
	}
	// The departed unit's bag stays readable (until the unit is removed).
	if err := web.call(api.AgentReadSettings, api.AgentReadParams{Unit: "web/0", RelationID: e.rel, Owner: "kv/1"}, &bag); err != nil || bag["who"] != "kv/1" {
		t.Fatalf("departed unit's bag: %v %v", bag, err)
	}
	if err := kv1.call(api.AgentUnitDead, api.AgentUnitParams{Unit: "kv/1"}, nil); err != nil {
		t.Fatal(err)
	}
	kv1.waitState(t, "unit gone", func(st *api.MachineState) bool { return len(st.Units) == 0 })
}
