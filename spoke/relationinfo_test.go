package spoke

import (
	"maps"
	"testing"
	"time"

	"github.com/droverhq/drover/api"
)

// TestUnitRelationInfo: show-unit's relation-info gives each relation of
// a unit with the related application's bag, the unit's own, and the
// related units in scope with theirs; a peer relation relates the
// application to itself.
func TestUnitRelationInfo(t *testing.T) {
	e := newAgentEnv(t, 1)
	ctx := t.Context()
	kv0, web := e.dial(t, 0, "0"), e.dial(t, 0, "2")
	var lr api.AgentLeaderResult
	if err := kv0.call(api.AgentClaimLeader, api.AgentLeaderParams{Unit: "kv/0", Duration: time.Minute}, &lr); err != nil || !lr.Leader {
		t.Fatalf("claim: %+v %v", lr, err)
	}
	for _, a := range []struct {
		ag   *testAgent
		unit string
	}{{kv0, "kv/0"}, {web, "web/0"}} {
		if err := a.ag.call(api.AgentEnterScope, api.AgentScopeParams{Unit: a.unit, RelationID: e.rel, Settings: map[string]string{"at": a.unit}}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := kv0.call(api.AgentCommitHook, api.AgentHookChanges{Unit: "kv/0", Relations: []api.SettingsChange{
		{RelationID: e.rel, Set: map[string]string{"host": "h"}},
		{RelationID: e.rel, App: true, Set: map[string]string{"password": "pw"}}}}, nil); err != nil {
		t.Fatal(err)
	}
	infos, err := e.cl.Model(e.model).UnitRelationInfo(ctx, "web/0", api.ReadOptions{Consistent: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(infos) != 1 {
		t.Fatalf("web/0's relations: %+v", infos)
	}
	got := infos[0]
	if got.RelationID != e.rel || got.Endpoint != "db" || got.RelatedEndpoint != "kv" ||
		!maps.Equal(got.ApplicationData, map[string]string{"password": "pw"}) ||
		!got.LocalUnit.InScope || got.LocalUnit.Data["at"] != "web/0" ||
		len(got.RelatedUnits) != 1 || !got.RelatedUnits["kv/0"].InScope ||
		!maps.Equal(got.RelatedUnits["kv/0"].Data, map[string]string{"at": "kv/0", "host": "h"}) {
		t.Fatalf("web/0's relation-info: %+v", got)
	}
	infos, err = e.cl.Model(e.model).UnitRelationInfo(ctx, "kv/1")
	if err != nil {
		t.Fatal(err)
	}
	var peer, db *api.UnitRelationInfo
	for i := range infos {
		switch infos[i].RelationID {
		case e.peer:
			peer = &infos[i]
		case e.rel:
			db = &infos[i]
		}
	}
	if peer == nil || peer.Endpoint != "cluster" || peer.RelatedEndpoint != "cluster" || peer.LocalUnit.InScope || len(peer.RelatedUnits) != 0 {
		t.Fatalf("kv/1's peer relation: %+v", peer)
	}
	if db == nil || db.LocalUnit.InScope || !db.RelatedUnits["web/0"].InScope || len(db.ApplicationData) != 0 {
		t.Fatalf("kv/1 (not in scope) in the db relation: %+v", db)
	}
	if _, err := e.cl.Model(e.model).UnitRelationInfo(ctx, "kv/9"); err == nil {
		t.Fatal("relation-info of a unit that does not exist")
	}
}
