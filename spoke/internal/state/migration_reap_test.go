package state

import (
	"testing"
	"time"

	"github.com/droverhq/drover/api"
)

var westTarget = &api.TargetController{ControllerUUID: "c2", ControllerName: "west", Addresses: []string{"127.0.0.1:17071"}, CACert: "PEM"}

func phase(id, p string, target *api.TargetController) *SetMigrationPhaseRequest {
	return &SetMigrationPhaseRequest{ModelUUID: testModel, MigrationID: id, Phase: p, Target: target}
}

// TestMigrationPhases: a quiesced source moves QUIESCE → VALIDATION →
// SUCCESS for its migration only, each step idempotent, never back nor
// past a phase, and its abort is refused from SUCCESS on.
func TestMigrationPhases(t *testing.T) {
	h := newHarness(t)
	h.seed()
	_, err := h.apply(SetMigrationPhaseType, phase("mig-1", api.MigrationValidation, westTarget))
	wantCode(t, "a phase on a model not quiesced", err, api.CodeConflict)

	h.must(QuiesceModelType, &QuiesceModelRequest{ModelUUID: testModel, MigrationID: "mig-1", Now: t0})
	if m, _ := h.snap().ModelByUUID(testModel); m.Migration.Phase != api.MigrationQuiesce {
		t.Fatalf("a quiesced model's phase is %q, want QUIESCE", m.Migration.Phase)
	}
	h.must(SetMigrationPhaseType, phase("mig-1", api.MigrationQuiesce, nil)) // where it is
	for name, c := range map[string]struct {
		req  *SetMigrationPhaseRequest
		code api.Code
	}{
		"no target":         {phase("mig-1", api.MigrationValidation, nil), api.CodeInvalid},
		"unknown phase":     {phase("mig-1", "LIMBO", westTarget), api.CodeInvalid},
		"another migration": {phase("mig-2", api.MigrationValidation, westTarget), api.CodeMigrating},
		"a phase skipped":   {phase("mig-1", api.MigrationSuccess, westTarget), api.CodeConflict},
	} {
		_, err := h.apply(SetMigrationPhaseType, c.req)
		wantCode(t, name, err, c.code)
	}
	h.must(SetMigrationPhaseType, phase("mig-1", api.MigrationValidation, westTarget))
	h.must(SetMigrationPhaseType, phase("mig-1", api.MigrationValidation, westTarget)) // asked again
	_, err = h.apply(SetMigrationPhaseType, phase("mig-1", api.MigrationQuiesce, nil))
	wantCode(t, "a step back", err, api.CodeConflict)
	other := *westTarget
	other.ControllerUUID = "c3"
	_, err = h.apply(SetMigrationPhaseType, phase("mig-1", api.MigrationValidation, &other))
	wantCode(t, "the same phase towards another controller", err, api.CodeConflict)
	m, _ := h.snap().ModelByUUID(testModel)
	if m.Migration.Phase != api.MigrationValidation || m.Migration.Target == nil || m.Migration.Target.ControllerUUID != "c2" {
		t.Fatalf("after VALIDATION the migration is %+v", m.Migration)
	}
	// Before SUCCESS an abort still releases the model.
	h.must(SetMigrationPhaseType, phase("mig-1", api.MigrationSuccess, westTarget))
	h.must(SetMigrationPhaseType, phase("mig-1", api.MigrationSuccess, westTarget)) // asked again
	_, err = h.apply(SetMigrationPhaseType, phase("mig-1", api.MigrationValidation, westTarget))
	wantCode(t, "back from SUCCESS", err, api.CodeConflict)
	_, err = h.apply(ReleaseModelType, &ReleaseModelRequest{ModelUUID: testModel, MigrationID: "mig-1"})
	wantCode(t, "an abort after SUCCESS", err, api.CodeConflict)
}

// TestReleaseBeforeSuccess: an abort in VALIDATION ends the migration.
func TestReleaseBeforeSuccess(t *testing.T) {
	h := newHarness(t)
	h.seed()
	h.must(QuiesceModelType, &QuiesceModelRequest{ModelUUID: testModel, MigrationID: "mig-1", Now: t0})
	h.must(SetMigrationPhaseType, phase("mig-1", api.MigrationValidation, westTarget))
	h.must(ReleaseModelType, &ReleaseModelRequest{ModelUUID: testModel, MigrationID: "mig-1"})
	if m, _ := h.snap().ModelByUUID(testModel); m.Migration != nil {
		t.Fatalf("released model keeps %+v", m.Migration)
	}
}

// TestMigratedModelRedirects: from SUCCESS on every command on the model
// but the migration's, its agents' writes too, is answered with a
// redirect naming the target, and its leases stay frozen.
func TestMigratedModelRedirects(t *testing.T) {
	h := newHarness(t)
	h.seed()
	h.deploy("kv", "kv", 1)
	h.must(ClaimLeaseType, &ClaimLeaseRequest{ModelUUID: testModel, App: "kv", Unit: "kv/0", Now: t0, Duration: time.Minute})
	h.must(QuiesceModelType, &QuiesceModelRequest{ModelUUID: testModel, MigrationID: "mig-1", Now: t0})
	h.must(SetMigrationPhaseType, phase("mig-1", api.MigrationValidation, westTarget))
	// In VALIDATION the agents still finish their hooks.
	h.must(SetStatusType, &SetStatusRequest{ModelUUID: testModel, Kind: api.StatusKindWorkload, Entity: "kv/0",
		Status: api.Status{Status: "active", Since: t0}})
	h.must(SetMigrationPhaseType, phase("mig-1", api.MigrationSuccess, westTarget))

	for name, c := range map[string]struct {
		typ MessageType
		req any
	}{
		"config":      {SetModelConfigType, &SetModelConfigRequest{ModelUUID: testModel, Set: map[string]any{"k": "v"}}},
		"agent write": {SetStatusType, &SetStatusRequest{ModelUUID: testModel, Kind: api.StatusKindWorkload, Entity: "kv/0", Status: api.Status{Status: "active", Since: t0}}},
		"hook commit": {CommitHookChangesType, &CommitHookChangesRequest{ModelUUID: testModel, Now: t0, Changes: api.AgentHookChanges{Unit: "kv/0"}}},
		"lease":       {ClaimLeaseType, &ClaimLeaseRequest{ModelUUID: testModel, App: "kv", Unit: "kv/0", Now: t0, Duration: time.Minute}},
	} {
		_, err := h.apply(c.typ, c.req)
		wantCode(t, name, err, api.CodeRedirect)
		if tg, ok := api.RedirectTarget(err); !ok || tg.ControllerUUID != "c2" || tg.Addresses[0] != westTarget.Addresses[0] {
			t.Errorf("%s: the redirect names %+v, want the target", name, tg)
		}
	}
	if expired := h.must(ExpireLeasesType, &ExpireLeasesRequest{Now: t0.Add(time.Hour)}).([]string); len(expired) != 0 {
		t.Fatalf("leases of a migrated model expired: %v", expired)
	}
	name, tg, ok, err := h.snap().MigratedTo(testModel)
	if err != nil || !ok || name != "m" || tg.ControllerUUID != "c2" {
		t.Fatalf("MigratedTo = %q %+v %v %v", name, tg, ok, err)
	}
}

// TestReapKeepsATombstone: a model at SUCCESS is reaped to a tombstone,
// every row gone; reaping again changes nothing; a reap before SUCCESS
// or by another migration is refused; an import of the model brings it
// back and drops the tombstone.
func TestReapKeepsATombstone(t *testing.T) {
	h := newHarness(t)
	fillAll(h)
	export := h.exportModel(t)
	reap := &ReapModelRequest{ModelUUID: testModel, MigrationID: "mig-1", Now: t0.Add(time.Hour)}
	_, err := h.apply(ReapModelType, reap)
	wantCode(t, "a reap of a model not migrating", err, api.CodeConflict)
	h.must(QuiesceModelType, &QuiesceModelRequest{ModelUUID: testModel, MigrationID: "mig-1", Now: t0})
	_, err = h.apply(ReapModelType, reap)
	wantCode(t, "a reap before SUCCESS", err, api.CodeConflict)
	h.must(SetMigrationPhaseType, phase("mig-1", api.MigrationValidation, westTarget))
	h.must(SetMigrationPhaseType, phase("mig-1", api.MigrationSuccess, westTarget))
	_, err = h.apply(ReapModelType, &ReapModelRequest{ModelUUID: testModel, MigrationID: "mig-2", Now: t0})
	wantCode(t, "a reap by another migration", err, api.CodeMigrating)

	h.must(ReapModelType, reap)
	h.must(ReapModelType, reap)                                                     // asked again
	h.must(SetMigrationPhaseType, phase("mig-1", api.MigrationSuccess, westTarget)) // a late replay of SUCCESS
	noRowsOf(t, h, "reaped model")
	tomb, err := h.snap().TombstoneByModel(testModel)
	if err != nil {
		t.Fatal(err)
	}
	if tomb.MigrationID != "mig-1" || tomb.ModelName != "m" || tomb.Owner != "admin" || tomb.Target.ControllerUUID != "c2" || !tomb.Time.Equal(reap.Now) {
		t.Fatalf("tombstone %+v", tomb)
	}
	if _, tg, ok, err := h.snap().MigratedTo(testModel); err != nil || !ok || tg.ControllerUUID != "c2" {
		t.Fatalf("a reaped model's MigratedTo: %+v %v %v", tg, ok, err)
	}
	_, err = h.apply(SetModelConfigType, &SetModelConfigRequest{ModelUUID: testModel, Set: map[string]any{"k": "v"}})
	wantCode(t, "a change to a reaped model", err, api.CodeNotFound)
	if _, err := h.snap().TombstoneByModel("other"); api.CodeOf(err) != api.CodeNotFound {
		t.Fatalf("TombstoneByModel of an unknown model: %v", err)
	}

	// The model comes back.
	h.must(ImportModelType, &ImportModelRequest{MigrationID: "mig-9", Export: export, Now: t0})
	if _, err := h.snap().TombstoneByModel(testModel); api.CodeOf(err) != api.CodeNotFound {
		t.Fatalf("the tombstone of a model imported again: %v", err)
	}
	all, _ := h.snap().ListTombstones()
	for _, tomb := range all {
		if tomb.ModelUUID == testModel {
			t.Fatalf("the tombstone of a model imported again is listed: %+v", tomb)
		}
	}
}

// TestImportReplacesALeftover: an import of another migration that never
// activated does not block the next one (Juju #20361); a live model of
// the same UUID does.
func TestImportReplacesALeftover(t *testing.T) {
	src := newHarness(t)
	fillAll(src)
	export := src.exportModel(t)
	want := exportRows(t, src)
	dst := newHarness(t)
	dst.must(ImportModelType, &ImportModelRequest{MigrationID: "mig-1", Export: export, Now: t0})
	dst.must(ImportModelType, &ImportModelRequest{MigrationID: "mig-2", Export: export, Now: t0})
	m, _ := dst.snap().ModelByUUID(testModel)
	if m.Migration == nil || m.Migration.ID != "mig-2" {
		t.Fatalf("after a second import the model's migration is %+v", m.Migration)
	}
	_, err := dst.apply(ActivateModelType, &ActivateModelRequest{ModelUUID: testModel, MigrationID: "mig-1"})
	wantCode(t, "activation by the replaced import", err, api.CodeConflict)
	dst.must(ActivateModelType, &ActivateModelRequest{ModelUUID: testModel, MigrationID: "mig-2"})
	if got := exportRows(t, dst); got != want {
		t.Fatalf("the replacing import differs from the source:\n got %s\nwant %s", got, want)
	}
	_, err = dst.apply(ImportModelType, &ImportModelRequest{MigrationID: "mig-3", Export: export, Now: t0})
	wantCode(t, "an import over a live model", err, api.CodeAlreadyExists)
}
