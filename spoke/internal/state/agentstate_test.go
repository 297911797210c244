package state

import (
	"testing"
	"time"

	"github.com/droverhq/drover/api"
)

// agentFixture: kv/0 (leader) and kv/1 in relation web:db–kv with web/0,
// everyone in scope.
func agentFixture(t *testing.T) (*harness, *api.Relation) {
	h := newHarness(t)
	h.seed()
	h.deploy("kv", "kv", 2)
	h.deploy("web", "web", 1)
	r := h.relate("web:db", "kv")
	for _, u := range []string{"kv/0", "kv/1", "web/0"} {
		h.must(EnterScopeType, &EnterScopeRequest{ModelUUID: testModel, RelationID: r.ID, Unit: u})
	}
	h.must(ClaimLeaseType, &ClaimLeaseRequest{ModelUUID: testModel, App: "kv", Unit: "kv/0", Now: t0, Duration: time.Minute})
	return h, r
}

func commit(unit string, now time.Time, c api.AgentHookChanges) *CommitHookChangesRequest {
	c.Unit = unit
	return &CommitHookChangesRequest{ModelUUID: testModel, Changes: c, Now: now}
}

func TestCommitHookChangesAppliesEverything(t *testing.T) {
	h, r := agentFixture(t)
	h.must(CommitHookChangesType, commit("kv/0", t0.Add(time.Second), api.AgentHookChanges{
		Relations: []api.SettingsChange{
			{RelationID: r.ID, Set: map[string]string{"host": "10.0.0.1"}},
			{RelationID: r.ID, App: true, Set: map[string]string{"password": "pw"}},
		},
		OpenPorts:      []api.Port{{Protocol: "tcp", From: 7000, To: 7000}},
		StateSet:       map[string]string{"a": "1", "b": "2"},
		LeaderSettings: &api.SettingsChange{Set: map[string]string{"cluster": "x"}},
	}))
	snap := h.snap()
	bag, _ := snap.RelationDataBag(testModel, r.ID, "kv/0", false)
	app, _ := snap.RelationDataBag(testModel, r.ID, "kv", true)
	if bag.Settings["host"] != "10.0.0.1" || bag.Version != 1 || app.Settings["password"] != "pw" || app.Version != 1 {
		t.Fatalf("bags: %+v %+v", bag, app)
	}
	if u := h.unit("kv/0"); len(u.OpenPorts) != 1 {
		t.Fatalf("ports: %+v", u.OpenPorts)
	}
	st, _ := snap.UnitStateByName(testModel, "kv/0")
	if st == nil || st.State["a"] != "1" || st.State["b"] != "2" {
		t.Fatalf("unit state: %+v", st)
	}
	ls, _ := snap.LeaderSettingsByApp(testModel, "kv")
	if ls == nil || ls.Settings["cluster"] != "x" || ls.Version != 1 {
		t.Fatalf("leader settings: %+v", ls)
	}
	// Unset and the empty value delete; a no-op change keeps versions.
	h.must(CommitHookChangesType, commit("kv/0", t0.Add(2*time.Second), api.AgentHookChanges{
		StateUnset:     []string{"a"},
		LeaderSettings: &api.SettingsChange{Set: map[string]string{"cluster": ""}},
	}))
	h.must(CommitHookChangesType, commit("kv/0", t0.Add(2*time.Second), api.AgentHookChanges{
		LeaderSettings: &api.SettingsChange{Unset: []string{"nothing"}},
	}))
	st, _ = h.snap().UnitStateByName(testModel, "kv/0")
	ls, _ = h.snap().LeaderSettingsByApp(testModel, "kv")
	if _, ok := st.State["a"]; ok || ls.Version != 2 || len(ls.Settings) != 0 {
		t.Fatalf("after unset: %+v %+v", st, ls)
	}
}

func TestCommitHookChangesIsAllOrNothing(t *testing.T) {
	h, r := agentFixture(t)
	before := snapshotBytes(t, h.fsm.Store())
	for name, c := range map[string]*CommitHookChangesRequest{
		"non-leader app bag": commit("kv/1", t0, api.AgentHookChanges{
			StateSet:  map[string]string{"a": "1"},
			Relations: []api.SettingsChange{{RelationID: r.ID, Set: map[string]string{"ok": "1"}}, {RelationID: r.ID, App: true, Set: map[string]string{"x": "1"}}}}),
		"expired lease": commit("kv/0", t0.Add(time.Hour), api.AgentHookChanges{
			Relations: []api.SettingsChange{{RelationID: r.ID, App: true, Set: map[string]string{"x": "1"}}}}),
		"non-leader leader settings": commit("kv/1", t0, api.AgentHookChanges{
			StateSet: map[string]string{"a": "1"}, LeaderSettings: &api.SettingsChange{Set: map[string]string{"k": "v"}}}),
	} {
		err := h.fails(CommitHookChangesType, c, api.ErrNotLeader)
		if name == "non-leader app bag" && !contains(err.Error(), "cannot write relation settings") {
			t.Errorf("%s: %v", name, err)
		}
	}
	h.fails(CommitHookChangesType, commit("kv/0", t0, api.AgentHookChanges{
		StateSet: map[string]string{"a": "1"}, Relations: []api.SettingsChange{{RelationID: 99, Set: map[string]string{"a": "1"}}}}), api.ErrNotFound)
	h.fails(CommitHookChangesType, commit("kv/0", t0, api.AgentHookChanges{
		StateSet: map[string]string{"big": string(make([]byte, MaxStateValueSize+1))}}), api.ErrTooLarge)
	h.fails(CommitHookChangesType, commit("kv/0", t0, api.AgentHookChanges{
		OpenPorts: []api.Port{{Protocol: "tcp", From: 7000, To: 7000}}, ClosePorts: []api.Port{{Protocol: "bogus"}}}), api.ErrInvalid)
	h.fails(CommitHookChangesType, commit("nope/0", t0, api.AgentHookChanges{}), api.ErrNotFound)
	if after := snapshotBytes(t, h.fsm.Store()); string(after) != string(before) {
		t.Fatal("a failed commit changed the store")
	}
}

func TestApplicationStatusNeedsTheLease(t *testing.T) {
	h, _ := agentFixture(t)
	set := func(leader string, now time.Time) *SetStatusRequest {
		return &SetStatusRequest{ModelUUID: testModel, Kind: api.StatusKindApplication, Entity: "kv",
			Status: api.Status{Status: "active", Since: now}, Leader: leader, Now: now}
	}
	h.must(SetStatusType, set("kv/0", t0))
	err := h.fails(SetStatusType, set("kv/1", t0), api.ErrNotLeader)
	if err.Error() != "this unit is not the leader" {
		t.Errorf("message %q", err)
	}
	h.fails(SetStatusType, set("kv/0", t0.Add(time.Hour)), api.ErrNotLeader)
	h.fails(SetStatusType, &SetStatusRequest{ModelUUID: testModel, Kind: api.StatusKindWorkload, Entity: "kv/1",
		Status: api.Status{Status: "active"}, Leader: "kv/1"}, api.ErrInvalid)
}

func TestRemoveUnitDeletesCharmStateAndAppLeaderSettings(t *testing.T) {
	h, r := agentFixture(t)
	h.must(CommitHookChangesType, commit("kv/0", t0, api.AgentHookChanges{StateSet: map[string]string{"a": "1"},
		LeaderSettings: &api.SettingsChange{Set: map[string]string{"k": "v"}}}))
	h.must(DestroyUnitsType, &DestroyUnitsRequest{ModelUUID: testModel, Units: []string{"kv/0"}})
	h.must(LeaveScopeType, &LeaveScopeRequest{ModelUUID: testModel, RelationID: r.ID, Unit: "kv/0"})
	h.must(EnsureUnitDeadType, &EnsureUnitDeadRequest{ModelUUID: testModel, Unit: "kv/0"})
	h.must(RemoveUnitType, &RemoveUnitRequest{ModelUUID: testModel, Unit: "kv/0"})
	if st, _ := h.snap().UnitStateByName(testModel, "kv/0"); st != nil {
		t.Fatalf("unit state survived its unit: %+v", st)
	}
	h.must(DestroyApplicationType, &DestroyApplicationRequest{ModelUUID: testModel, App: "kv", Force: true})
	h.must(LeaveScopeType, &LeaveScopeRequest{ModelUUID: testModel, RelationID: r.ID, Unit: "web/0"})
	if a := h.app("kv"); a != nil {
		t.Fatalf("kv not removed: %+v", a)
	}
	if ls, _ := h.snap().LeaderSettingsByApp(testModel, "kv"); ls != nil {
		t.Fatalf("leader settings survived the application: %+v", ls)
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}
