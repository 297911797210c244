package state

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/api"
)

func TestAddRelationResolution(t *testing.T) {
	h := newHarness(t)
	h.seed()
	h.deploy("kv", "kv", 1)
	h.deploy("web", "web", 2)
	h.deploy("proxy", "proxy", 1)
	h.deploy("logger", "logger", 0)
	h.fails(DestroyRelationType, &DestroyRelationRequest{ModelUUID: testModel, ID: 0}, api.ErrInvalid) // peer

	err := h.fails(AddRelationType, &AddRelationRequest{ModelUUID: testModel, Endpoints: [2]string{"web", "kv"}}, api.ErrInvalid)
	want := `ambiguous relation: "web kv" could refer to "kv:db web:cache"; "kv:db web:db"`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("got %q, want it to contain %q", err, want)
	}
	var apiErr *api.Error
	if !errors.As(err, &apiErr) || apiErr.Code != api.CodeInvalid {
		t.Fatalf("not an *api.Error: %v", err)
	}
	for _, tc := range []struct {
		name string
		eps  [2]string
		want error
	}{
		{"no match", [2]string{"proxy", "kv"}, api.ErrInvalid},
		{"unknown endpoint", [2]string{"web:nope", "kv"}, api.ErrInvalid},
		{"itself", [2]string{"kv", "kv"}, api.ErrInvalid},
		{"missing app", [2]string{"kv", "nope"}, api.ErrNotFound},
		{"peer endpoints", [2]string{"kv:cluster", "web"}, api.ErrInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h.t = t
			h.fails(AddRelationType, &AddRelationRequest{ModelUUID: testModel, Endpoints: tc.eps}, tc.want)
		})
	}
	h.t = t
	r := h.relate("web:db", "kv")
	if r.Key != "kv:db web:db" || r.ID != 1 || r.Endpoints[0].Application != "kv" {
		t.Fatalf("relation %+v", r)
	}
	h.fails(AddRelationType, &AddRelationRequest{ModelUUID: testModel, Endpoints: [2]string{"kv", "web:db"}}, api.ErrAlreadyExists)
	if r := h.relate("proxy", "web"); r.Key != "proxy:backend web:website" {
		t.Errorf("single candidate: %q", r.Key)
	}

	// The subordinate's juju-info requirer matches the implicit provider;
	// one logger unit appears next to each web unit, on its machine.
	r = h.relate("logger", "web")
	if r.Key != "logger:host web:juju-info" || r.Endpoints[1].Scope != "container" {
		t.Fatalf("container relation %+v", r)
	}
	for i, p := range []string{"web/0", "web/1"} {
		u := h.unit(unitName("logger", i))
		if u == nil || u.Principal != p || u.MachineID != h.unit(p).MachineID {
			t.Fatalf("subordinate of %s: %+v", p, u)
		}
	}
	h.must(AddUnitsType, &AddUnitsRequest{ModelUUID: testModel, App: "web", N: 1, Now: t0})
	if u := h.unit("logger/2"); u == nil || u.Principal != "web/2" {
		t.Fatalf("new principal unit got no subordinate: %+v", u)
	}
	h.fails(DestroyUnitsType, &DestroyUnitsRequest{ModelUUID: testModel, Units: []string{"logger/0"}}, api.ErrInvalid)
	// A principal cannot die before its subordinates are gone.
	h.must(DestroyUnitsType, &DestroyUnitsRequest{ModelUUID: testModel, Units: []string{"web/0"}})
	if h.unit("logger/0").Life != api.Dying {
		t.Error("subordinate not dying with its principal")
	}
	h.fails(EnsureUnitDeadType, &EnsureUnitDeadRequest{ModelUUID: testModel, Unit: "web/0"}, api.ErrConflict)

	h.must(DestroyApplicationType, &DestroyApplicationRequest{ModelUUID: testModel, App: "kv"})
	h.fails(AddRelationType, &AddRelationRequest{ModelUUID: testModel, Endpoints: [2]string{"kv", "web:cache"}}, api.ErrConflict)

	// Container scope needs a subordinate side.
	h.must(AddCharmType, &AddCharmRequest{Charm: api.Charm{SHA256: sha("c1"), Name: "c1",
		Endpoints: []api.Endpoint{{Name: "x", Role: api.RoleRequirer, Interface: "http", Scope: "container"}}}})
	h.must(AddApplicationType, &AddApplicationRequest{ModelUUID: testModel, Name: "c1", CharmSHA256: sha("c1"), NumUnits: 1})
	h.fails(AddRelationType, &AddRelationRequest{ModelUUID: testModel, Endpoints: [2]string{"c1", "web"}}, api.ErrInvalid)

	h.fails(DestroyRelationType, &DestroyRelationRequest{ModelUUID: testModel, ID: 99}, api.ErrNotFound)
}

func TestScopesAndLeaderOnlyAppData(t *testing.T) {
	h := newHarness(t)
	h.seed()
	h.deploy("kv", "kv", 2)
	h.deploy("web", "web", 1)
	h.deploy("proxy", "proxy", 1)
	rel := h.relate("web:db", "kv")
	for _, tc := range []struct {
		name string
		req  EnterScopeRequest
		want error
	}{
		{"missing relation", EnterScopeRequest{RelationID: 42, Unit: "kv/0"}, api.ErrNotFound},
		{"missing unit", EnterScopeRequest{RelationID: rel.ID, Unit: "kv/7"}, api.ErrNotFound},
		{"foreign unit", EnterScopeRequest{RelationID: rel.ID, Unit: "proxy/0"}, api.ErrInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h.t = t
			tc.req.ModelUUID = testModel
			h.fails(EnterScopeType, &tc.req, tc.want)
		})
	}
	h.t = t
	for _, u := range []string{"kv/0", "kv/1", "web/0"} {
		h.must(EnterScopeType, &EnterScopeRequest{ModelUUID: testModel, RelationID: rel.ID, Unit: u})
	}
	if m, _ := h.snap().ScopeMembers(testModel, rel.ID); len(m) != 3 {
		t.Fatalf("%d members", len(m))
	}
	set := func(unit string, app bool, now time.Time, kv map[string]string) (*api.RelationData, error) {
		v, err := h.apply(SetRelationDataType, &SetRelationDataRequest{ModelUUID: testModel, RelationID: rel.ID,
			Unit: unit, App: app, Set: kv, Now: now})
		bag, _ := v.(*api.RelationData)
		return bag, err
	}
	bag, err := set("kv/0", false, t0, map[string]string{"host": "10.0.0.1"})
	if err != nil || bag.Version != 1 || bag.Owner != "kv/0" {
		t.Fatalf("unit bag %+v %v", bag, err)
	}
	if bag, _ = set("kv/0", false, t0, map[string]string{"host": "10.0.0.1"}); bag.Version != 1 {
		t.Error("version bumped without a change")
	}
	if _, err := set("kv/0", true, t0, map[string]string{"pw": "x"}); !errors.Is(err, api.ErrNotLeader) ||
		!strings.Contains(err.Error(), "cannot write relation settings") {
		t.Fatalf("app bag without lease: %v", err)
	}
	l := h.must(ClaimLeaseType, &ClaimLeaseRequest{ModelUUID: testModel, App: "kv", Unit: "kv/0", Now: t0, Duration: time.Minute}).(*api.Lease)
	if l.Term != 1 {
		t.Errorf("term %d", l.Term)
	}
	h.fails(ClaimLeaseType, &ClaimLeaseRequest{ModelUUID: testModel, App: "kv", Unit: "kv/1", Now: t0, Duration: time.Minute}, api.ErrConflict)
	h.fails(ClaimLeaseType, &ClaimLeaseRequest{ModelUUID: testModel, App: "kv", Unit: "web/0", Now: t0, Duration: time.Minute}, api.ErrInvalid)
	if bag, err := set("kv/0", true, t0.Add(30*time.Second), map[string]string{"pw": "x"}); err != nil || bag.Owner != "kv" || bag.Version != 1 {
		t.Fatalf("leader app write: %+v %v", bag, err)
	}
	if _, err := set("kv/1", true, t0, map[string]string{"pw": "y"}); !errors.Is(err, api.ErrNotLeader) {
		t.Fatalf("non-leader app write: %v", err)
	}
	if _, err := set("kv/0", true, t0.Add(time.Minute), map[string]string{"pw": "z"}); !errors.Is(err, api.ErrNotLeader) {
		t.Fatalf("write at expiry: %v", err)
	}
	checkLeaseTerms(t, h)

	_, err = h.apply(SetRelationDataType, &SetRelationDataRequest{ModelUUID: testModel, RelationID: rel.ID, Unit: "proxy/0"})
	if !errors.Is(err, api.ErrConflict) {
		t.Errorf("write out of scope: %v", err)
	}
	if _, err := set("kv/0", false, t0, map[string]string{"big": strings.Repeat("x", MaxBagSize)}); !errors.Is(err, api.ErrTooLarge) {
		t.Errorf("oversized bag: %v", err)
	}

	checkForceRemoveLeavesScope(t, h, rel.ID)
}

// checkLeaseTerms continues TestScopesAndLeaderOnlyAppData with kv/0
// holding kv's lease from t0 for a minute.
func checkLeaseTerms(t *testing.T, h *harness) {
	t.Helper()
	// Extending keeps the term; a new holder after expiry bumps it.
	l := h.must(ClaimLeaseType, &ClaimLeaseRequest{ModelUUID: testModel, App: "kv", Unit: "kv/0", Now: t0.Add(59 * time.Second), Duration: time.Minute}).(*api.Lease)
	if l.Term != 1 || !l.Expiry.Equal(t0.Add(119*time.Second)) {
		t.Errorf("extend: %+v", l)
	}
	expired := h.must(ExpireLeasesType, &ExpireLeasesRequest{Now: t0.Add(2 * time.Minute)}).([]string)
	if len(expired) != 1 || expired[0] != testModel+"/kv" {
		t.Errorf("expired %v", expired)
	}
	l = h.must(ClaimLeaseType, &ClaimLeaseRequest{ModelUUID: testModel, App: "kv", Unit: "kv/1", Now: t0.Add(2 * time.Minute), Duration: time.Minute}).(*api.Lease)
	if l.Term != 2 || l.Holder != "kv/1" {
		t.Errorf("new holder: %+v", l)
	}
	h.fails(RevokeLeaseType, &RevokeLeaseRequest{ModelUUID: testModel, App: "kv", Holder: "kv/0"}, api.ErrConflict)
	h.must(RevokeLeaseType, &RevokeLeaseRequest{ModelUUID: testModel, App: "kv", Holder: "kv/1"})
	h.fails(RevokeLeaseType, &RevokeLeaseRequest{ModelUUID: testModel, App: "kv", Holder: "kv/1"}, api.ErrNotFound)
}

// checkForceRemoveLeavesScope continues TestScopesAndLeaderOnlyAppData:
// kv/0 is in the scope of relation relID with a bag.
func checkForceRemoveLeavesScope(t *testing.T, h *harness, relID int) {
	t.Helper()
	// Force-removing a unit takes it out of scope and deletes its bags.
	h.must(DestroyUnitsType, &DestroyUnitsRequest{ModelUUID: testModel, Units: []string{"kv/0"}, Force: true})
	if b, _ := h.snap().RelationDataBag(testModel, relID, "kv/0", false); b != nil {
		t.Error("forced unit's bag kept")
	}
	if m, _ := h.snap().ScopeMembers(testModel, relID); len(m) != 2 {
		t.Errorf("%d members after force", len(m))
	}
	h.fails(LeaveScopeType, &LeaveScopeRequest{ModelUUID: testModel, RelationID: relID, Unit: "kv/0"}, api.ErrNotFound)
}
