package state

import (
	"bytes"
	"testing"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/spoke/internal/state/tables"
)

// TestStatusRevisions: every write that changes what a model's status is
// built from moves that model's status revision to its index, and no
// other model's; writes status does not show (relation data, config, a
// lease only extended) leave it; removing a model
// drops its revision; and a restored store, which has none, falls back to
// a revision no lower than the true one.
func TestStatusRevisions(t *testing.T) {
	h := newHarness(t)
	h.must(ControllerInitType, &ControllerInitRequest{UUID: "c1", Name: "east", CACert: "PEM"})
	h.seed()
	const other = "model-uuid-2"
	h.must(AddModelType, &AddModelRequest{UUID: other, Name: "other", Owner: "admin", Now: t0})
	h.deploy("kv", "kv", 1)
	h.deploy("web", "web", 1)
	rev := func(model string) uint64 { t.Helper(); return revisionOf(t, h, model) }
	otherRev := rev(other)
	var rel *api.Relation
	for _, c := range []struct {
		what  string
		typ   MessageType
		req   func() any
		moves bool
	}{
		{"workload status", SetStatusType, func() any {
			return &SetStatusRequest{ModelUUID: testModel, Kind: api.StatusKindWorkload, Entity: "kv/0",
				Status: api.Status{Status: "active", Since: t0}}
		}, true},
		{"a relation", AddRelationType, func() any {
			return &AddRelationRequest{ModelUUID: testModel, Endpoints: [2]string{"web:db", "kv"}, Now: t0}
		}, true},
		{"a unit entering scope", EnterScopeType, func() any {
			return &EnterScopeRequest{ModelUUID: testModel, RelationID: rel.ID, Unit: "kv/0"}
		}, true},
		{"a leader elected", ClaimLeaseType, func() any {
			return &ClaimLeaseRequest{ModelUUID: testModel, App: "kv", Unit: "kv/0", Now: t0, Duration: time.Minute}
		}, true},
		{"relation data", SetRelationDataType, func() any {
			return &SetRelationDataRequest{ModelUUID: testModel, RelationID: rel.ID, Unit: "kv/0", App: true,
				Set: map[string]string{"pw": "x"}, Now: t0}
		}, false},
		{"the lease extended", ClaimLeaseType, func() any {
			return &ClaimLeaseRequest{ModelUUID: testModel, App: "kv", Unit: "kv/0", Now: t0.Add(30 * time.Second), Duration: time.Minute}
		}, false},
		{"the lease claimed again after it ran out", ClaimLeaseType, func() any {
			return &ClaimLeaseRequest{ModelUUID: testModel, App: "kv", Unit: "kv/0", Now: t0.Add(5 * time.Minute), Duration: time.Minute}
		}, true},
		{"model config", SetModelConfigType, func() any {
			return &SetModelConfigRequest{ModelUUID: testModel, Set: map[string]any{"n": 3}}
		}, false},
		{"a machine provisioned", SetMachineProvisionedType, func() any {
			return &SetMachineProvisionedRequest{ModelUUID: testModel, ID: "0", ProviderID: "i-0", Addresses: []string{"10.0.0.1"}}
		}, true},
		{"a unit destroyed", DestroyUnitsType, func() any {
			return &DestroyUnitsRequest{ModelUUID: testModel, Units: []string{"web/0"}}
		}, true},
	} {
		before := rev(testModel)
		v := h.must(c.typ, c.req())
		if r, ok := v.(*api.Relation); ok {
			rel = r
		}
		switch got := rev(testModel); {
		case c.moves && got != h.index:
			t.Errorf("%s: revision %d, want the command's index %d", c.what, got, h.index)
		case !c.moves && got != before:
			t.Errorf("%s: revision moved from %d to %d", c.what, before, got)
		}
		if got := rev(other); got != otherRev {
			t.Fatalf("%s: the other model's revision moved from %d to %d", c.what, otherRev, got)
		}
	}

	checkRevisionsAcrossModels(t, h, other)
}

func revisionOf(t testing.TB, h *harness, model string) uint64 {
	t.Helper()
	r, err := h.snap().StatusRevision(model)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// checkRevisionsAcrossModels continues TestStatusRevisions: the
// controller record moves every model's revision, a removed model's
// revision goes with it, and a restored store never goes below the true
// revision.
func checkRevisionsAcrossModels(t *testing.T, h *harness, other string) {
	t.Helper()
	rev := func(model string) uint64 { t.Helper(); return revisionOf(t, h, model) }
	// The controller record is in every model's status.
	h.must(SetPlacementType, &SetPlacementRequest{Cloud: "lab", Region: "eu-west-1"})
	if rev(testModel) != h.index || rev(other) != h.index {
		t.Fatalf("placement at %d: revisions %d and %d", h.index, rev(testModel), rev(other))
	}

	// A removed model's revision goes with it.
	h.must(DestroyModelType, &DestroyModelRequest{ModelUUID: other, Now: t0}) // empty: removed at once
	if m, err := h.snap().ModelByUUID(other); err != nil || m != nil {
		t.Fatalf("the destroyed model: %v %v", m, err)
	}
	if obj, err := h.snap().txn.First(tables.StatusRevisions, "id", other); err != nil || obj != nil {
		t.Fatalf("the removed model's revision: %v %v", obj, err)
	}

	// A restored store falls back to the status tables' last index: never
	// lower than a model's true revision.
	want := rev(testModel)
	var buf bytes.Buffer
	if err := WriteSnapshot(h.snap(), &buf); err != nil {
		t.Fatal(err)
	}
	if err := h.fsm.Store().Restore(&buf); err != nil {
		t.Fatal(err)
	}
	if obj, err := h.snap().txn.First(tables.StatusRevisions, "id", testModel); err != nil || obj != nil {
		t.Fatalf("a restored store has revisions: %v %v", obj, err)
	}
	if got := rev(testModel); got < want {
		t.Fatalf("restored: revision %d, lower than %d", got, want)
	}
}
