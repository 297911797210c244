package state

import (
	"slices"
	"testing"

	"github.com/droverhq/drover/api"
)

func TestAddApplication(t *testing.T) {
	h := newHarness(t)
	h.seed()
	res := h.deploy("kv", "kv", 3, "", "0")
	if !slices.Equal(res.Units, []string{"kv/0", "kv/1", "kv/2"}) || !slices.Equal(res.Machines, []string{"0", "1"}) {
		t.Fatalf("units %v machines %v", res.Units, res.Machines)
	}
	if h.unit("kv/1").MachineID != "0" || h.unit("kv/2").MachineID != "1" {
		t.Errorf("placement ignored")
	}
	// Peer relation created with the next relation id, and juju-info added.
	if r, _ := h.snap().RelationByKey(testModel, "kv:cluster"); r == nil || r.ID != 0 {
		t.Fatalf("peer relation %+v", r)
	}
	if !slices.ContainsFunc(h.app("kv").Endpoints, func(e api.Endpoint) bool { return e.Name == "juju-info" }) {
		t.Error("no implicit juju-info endpoint")
	}
	res = h.deploy("web", "web", 2, "lxd:0", "kv/2")
	if h.unit("web/0").MachineID != "0" || h.unit("web/1").MachineID != "1" || len(res.Machines) != 0 {
		t.Errorf("web placement: %v %v", h.unit("web/0").MachineID, h.unit("web/1").MachineID)
	}
	res = h.deploy("logger", "logger", 0)
	if len(res.Units) != 0 || len(res.Machines) != 0 {
		t.Error("subordinate got units")
	}
	m, _ := h.snap().ModelByUUID(testModel)
	if m.NextMachine != 2 || m.NextRelation != 1 {
		t.Errorf("sequences: machine %d relation %d", m.NextMachine, m.NextRelation)
	}

	idx, _ := h.snap().LatestIndex()
	for _, tc := range []struct {
		name string
		req  AddApplicationRequest
		want error
	}{
		{"duplicate", AddApplicationRequest{Name: "kv", CharmSHA256: sha("kv")}, api.ErrAlreadyExists},
		{"no charm", AddApplicationRequest{Name: "x", CharmSHA256: sha("nope")}, api.ErrNotFound},
		{"bad name", AddApplicationRequest{Name: "X_1", CharmSHA256: sha("kv")}, api.ErrInvalid},
		{"subordinate with units", AddApplicationRequest{Name: "l2", CharmSHA256: sha("logger"), NumUnits: 1}, api.ErrInvalid},
		{"negative", AddApplicationRequest{Name: "x", CharmSHA256: sha("kv"), NumUnits: -1}, api.ErrInvalid},
		{"too many placements", AddApplicationRequest{Name: "x", CharmSHA256: sha("kv"), NumUnits: 1, Placement: []string{"0", "0"}}, api.ErrInvalid},
		{"missing machine", AddApplicationRequest{Name: "x", CharmSHA256: sha("kv"), NumUnits: 2, Placement: []string{"", "9"}}, api.ErrNotFound},
		{"missing unit", AddApplicationRequest{Name: "x", CharmSHA256: sha("kv"), NumUnits: 1, Placement: []string{"kv/9"}}, api.ErrNotFound},
		{"bad placement", AddApplicationRequest{Name: "x", CharmSHA256: sha("kv"), NumUnits: 1, Placement: []string{"zone=a"}}, api.ErrInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h.t = t
			tc.req.ModelUUID = testModel
			h.fails(AddApplicationType, &tc.req, tc.want)
		})
	}
	h.t = t
	// Failed commands change nothing, not even the first unit's new machine.
	if got, _ := h.snap().LatestIndex(); got != idx {
		t.Errorf("a failed command moved the index from %d to %d", idx, got)
	}
	if ms, _ := h.snap().ListMachines(testModel); len(ms) != 2 {
		t.Errorf("%d machines after failed deploys", len(ms))
	}
	h.fails(AddApplicationType, &AddApplicationRequest{ModelUUID: "nope", Name: "x", CharmSHA256: sha("kv")}, api.ErrNotFound)
}

func TestApplicationSettings(t *testing.T) {
	h := newHarness(t)
	h.seed()
	h.deploy("kv", "kv", 1)
	h.deploy("web", "web", 1)
	a := h.must(SetApplicationConfigType, &SetApplicationConfigRequest{ModelUUID: testModel, App: "kv",
		Set: map[string]any{"port": 7000, "name": "x"}}).(*api.Application)
	a = h.must(SetApplicationConfigType, &SetApplicationConfigRequest{ModelUUID: testModel, App: "kv", Unset: []string{"name"}}).(*api.Application)
	if len(a.Config) != 1 {
		t.Errorf("config %v", a.Config)
	}
	h.fails(SetApplicationConfigType, &SetApplicationConfigRequest{ModelUUID: testModel, App: "nope"}, api.ErrNotFound)
	h.must(SetExposedType, &SetExposedRequest{ModelUUID: testModel, App: "kv", Exposed: true})
	if a := h.must(SetTrustType, &SetTrustRequest{ModelUUID: testModel, App: "kv", Trust: true}).(*api.Application); !a.Trust {
		t.Error("trust not set")
	}
	h.fails(SetTrustType, &SetTrustRequest{ModelUUID: testModel, App: "nope", Trust: true}, api.ErrNotFound)
	h.must(SetConstraintsType, &SetConstraintsRequest{ModelUUID: testModel, App: "kv", Constraints: "mem=4G"})
	if a := h.app("kv"); !a.Exposed || a.Constraints != "mem=4G" {
		t.Errorf("%+v", a)
	}
	// Upgrading kv to a charm without "db" is refused while kv:db is related.
	h.relate("web:db", "kv")
	h.fails(SetCharmType, &SetCharmRequest{ModelUUID: testModel, App: "kv", CharmSHA256: sha("kv2")}, api.ErrConflict)
	h.fails(SetCharmType, &SetCharmRequest{ModelUUID: testModel, App: "kv", CharmSHA256: sha("logger")}, api.ErrInvalid)
	h.fails(SetCharmType, &SetCharmRequest{ModelUUID: testModel, App: "kv", CharmSHA256: sha("none")}, api.ErrNotFound)
	h.must(SetCharmType, &SetCharmRequest{ModelUUID: testModel, App: "web", CharmSHA256: sha("web")})
	if h.app("web").CharmRevision != 1 {
		t.Error("CharmRevision not bumped")
	}
	h.must(DestroyRelationType, &DestroyRelationRequest{ModelUUID: testModel, Endpoints: [2]string{"web:db", "kv:db"}})
	a = h.must(SetCharmType, &SetCharmRequest{ModelUUID: testModel, App: "kv", CharmSHA256: sha("kv2")}).(*api.Application)
	if a.CharmRevision != 1 || slices.ContainsFunc(a.Endpoints, func(e api.Endpoint) bool { return e.Name == "db" }) {
		t.Errorf("upgrade: %+v", a)
	}
	// The config changes with the charm; a forced upgrade is recorded for
	// the agents until the next charm change.
	h.fails(SetCharmType, &SetCharmRequest{ModelUUID: testModel, App: "kv", CharmSHA256: sha("kv"), Set: map[string]any{"a": 1}, Unset: []string{"a"}}, api.ErrInvalid)
	a = h.must(SetCharmType, &SetCharmRequest{ModelUUID: testModel, App: "kv", CharmSHA256: sha("kv"), ForceUnits: true,
		Set: map[string]any{"size": 3}, Unset: []string{"port"}}).(*api.Application)
	if a.CharmRevision != 2 || !a.ForceCharmUpgrade || len(a.Config) != 1 || a.Config["size"] == nil {
		t.Errorf("forced upgrade with config: %+v", a)
	}
	if a = h.must(SetCharmType, &SetCharmRequest{ModelUUID: testModel, App: "kv", CharmSHA256: sha("kv2")}).(*api.Application); a.ForceCharmUpgrade || len(a.Config) != 1 {
		t.Errorf("unforced upgrade: %+v", a)
	}
}

func TestUnitsAndScale(t *testing.T) {
	h := newHarness(t)
	h.seed()
	h.deploy("kv", "kv", 1)
	res := h.must(AddUnitsType, &AddUnitsRequest{ModelUUID: testModel, App: "kv", N: 2, Now: t0}).(*AddApplicationResult)
	if !slices.Equal(res.Units, []string{"kv/1", "kv/2"}) || h.app("kv").Scale != 3 {
		t.Fatalf("add units %v scale %d", res.Units, h.app("kv").Scale)
	}
	h.fails(AddUnitsType, &AddUnitsRequest{ModelUUID: testModel, App: "kv", N: 0}, api.ErrInvalid)
	h.must(ScaleApplicationType, &ScaleApplicationRequest{ModelUUID: testModel, App: "kv", Scale: 1, Now: t0})
	if h.unit("kv/0").Life != api.Alive || h.unit("kv/1").Life != api.Dying || h.unit("kv/2").Life != api.Dying {
		t.Fatal("shrink did not take the highest units")
	}
	res = h.must(ScaleApplicationType, &ScaleApplicationRequest{ModelUUID: testModel, App: "kv", Scale: 2, Now: t0}).(*AddApplicationResult)
	if !slices.Equal(res.Units, []string{"kv/3"}) || h.app("kv").Scale != 2 {
		t.Fatalf("grow: %v (unit numbers are never reused)", res.Units)
	}
	h.fails(ScaleApplicationType, &ScaleApplicationRequest{ModelUUID: testModel, App: "kv", Scale: -1}, api.ErrInvalid)

	h.fails(RemoveUnitType, &RemoveUnitRequest{ModelUUID: testModel, Unit: "kv/1"}, api.ErrConflict)
	h.fails(DestroyUnitsType, &DestroyUnitsRequest{ModelUUID: testModel, Units: []string{"kv/9"}}, api.ErrNotFound)
	h.must(DestroyUnitsType, &DestroyUnitsRequest{ModelUUID: testModel, Units: []string{"kv/3"}, Force: true})
	if h.unit("kv/3") != nil {
		t.Error("forced unit not removed")
	}
	h.fails(DestroyMachineType, &DestroyMachineRequest{ModelUUID: testModel, ID: "0"}, api.ErrConflict)
	h.must(DestroyMachineType, &DestroyMachineRequest{ModelUUID: testModel, ID: "0", Force: true})
	if h.unit("kv/0") != nil {
		t.Error("forced machine kept its unit")
	}
	h.fails(RemoveMachineType, &RemoveMachineRequest{ModelUUID: testModel, ID: "1"}, api.ErrConflict)
	h.must(RemoveMachineType, &RemoveMachineRequest{ModelUUID: testModel, ID: "0"})
}

func TestDestroyApplicationCascade(t *testing.T) {
	h := newHarness(t)
	h.seed()
	h.deploy("kv", "kv", 2)
	h.deploy("web", "web", 1)
	rel := h.relate("web:db", "kv:db")
	h.must(EnterScopeType, &EnterScopeRequest{ModelUUID: testModel, RelationID: rel.ID, Unit: "kv/0", Settings: map[string]string{"a": "1"}})
	h.must(DestroyApplicationType, &DestroyApplicationRequest{ModelUUID: testModel, App: "kv"})
	if h.app("kv").Life != api.Dying || h.unit("kv/0").Life != api.Dying || h.unit("kv/1").Life != api.Dying {
		t.Fatal("units not dying")
	}
	r, _ := h.snap().RelationByID(testModel, rel.ID)
	if r == nil || r.Life != api.Dying {
		t.Fatalf("relation %+v", r)
	}
	// The peer relation had nobody in scope: gone at once.
	if p, _ := h.snap().RelationByKey(testModel, "kv:cluster"); p != nil {
		t.Error("empty peer relation kept")
	}
	h.fails(EnterScopeType, &EnterScopeRequest{ModelUUID: testModel, RelationID: rel.ID, Unit: "web/0"}, api.ErrConflict)
	h.fails(EnsureUnitDeadType, &EnsureUnitDeadRequest{ModelUUID: testModel, Unit: "kv/0"}, api.ErrConflict)
	h.must(LeaveScopeType, &LeaveScopeRequest{ModelUUID: testModel, RelationID: rel.ID, Unit: "kv/0"})
	if r, _ := h.snap().RelationByID(testModel, rel.ID); r != nil {
		t.Fatal("dying relation with empty scope not removed")
	}
	if b, _ := h.snap().RelationDataBag(testModel, rel.ID, "kv/0", false); b != nil {
		t.Fatal("bags of a removed relation kept")
	}
	for _, u := range []string{"kv/0", "kv/1"} {
		h.must(EnsureUnitDeadType, &EnsureUnitDeadRequest{ModelUUID: testModel, Unit: u})
		if h.app("kv") == nil {
			t.Fatal("application removed while it still had units")
		}
		h.must(RemoveUnitType, &RemoveUnitRequest{ModelUUID: testModel, Unit: u})
	}
	if h.app("kv") != nil {
		t.Fatal("application not removed with its last unit")
	}
	h.must(DestroyApplicationType, &DestroyApplicationRequest{ModelUUID: testModel, App: "web", Force: true})
	if h.app("web") != nil || h.unit("web/0") != nil {
		t.Fatal("forced destroy left the application")
	}
}
