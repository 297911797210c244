package state

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/spoke/internal/state/tables"
)

func wantCode(t *testing.T, what string, err error, code api.Code) {
	t.Helper()
	if api.CodeOf(err) != code {
		t.Fatalf("%s: %v, want %s", what, err, code)
	}
}

// TestQuiescedModelTakesOnlyItsAgentsWrites: a quiesced source model
// refuses every change but its agents', keeps its leaders (leases do not
// expire), and takes changes again once released.
func TestQuiescedModelTakesOnlyItsAgentsWrites(t *testing.T) {
	h := newHarness(t)
	h.seed()
	h.deploy("kv", "kv", 2)
	h.must(ClaimLeaseType, &ClaimLeaseRequest{ModelUUID: testModel, App: "kv", Unit: "kv/0", Now: t0, Duration: time.Minute})
	h.must(QuiesceModelType, &QuiesceModelRequest{ModelUUID: testModel, MigrationID: "mig-1", Now: t0})
	h.must(QuiesceModelType, &QuiesceModelRequest{ModelUUID: testModel, MigrationID: "mig-1", Now: t0}) // asked again
	_, err := h.apply(QuiesceModelType, &QuiesceModelRequest{ModelUUID: testModel, MigrationID: "mig-2", Now: t0})
	wantCode(t, "a second migration", err, api.CodeMigrating)

	for name, c := range map[string]struct {
		typ MessageType
		req any
	}{
		"deploy":       {AddApplicationType, &AddApplicationRequest{ModelUUID: testModel, Name: "web", CharmSHA256: sha("web"), Now: t0}},
		"config":       {SetModelConfigType, &SetModelConfigRequest{ModelUUID: testModel, Set: map[string]any{"k": "v"}}},
		"add-unit":     {AddUnitsType, &AddUnitsRequest{ModelUUID: testModel, App: "kv", N: 1, Now: t0}},
		"run":          {EnqueueTaskType, &EnqueueTaskRequest{ModelUUID: testModel, Receiver: "kv/0", Action: "backup", Now: t0}},
		"destroy":      {DestroyModelType, &DestroyModelRequest{ModelUUID: testModel}},
		"revoke lease": {RevokeLeaseType, &RevokeLeaseRequest{ModelUUID: testModel, App: "kv", Holder: "kv/0"}},
	} {
		_, err := h.apply(c.typ, c.req)
		wantCode(t, name, err, api.CodeMigrating)
	}
	// The agents finish what they were running.
	h.must(SetStatusType, &SetStatusRequest{ModelUUID: testModel, Kind: api.StatusKindWorkload, Entity: "kv/0",
		Status: api.Status{Status: "active", Since: t0}})
	h.must(CommitHookChangesType, &CommitHookChangesRequest{ModelUUID: testModel, Now: t0,
		Changes: api.AgentHookChanges{Unit: "kv/0", StateSet: map[string]string{"s": "1"}}})
	// Leadership holds however long the migration takes.
	expired := h.must(ExpireLeasesType, &ExpireLeasesRequest{Now: t0.Add(time.Hour)}).([]string)
	if len(expired) != 0 {
		t.Fatalf("leases expired on a quiesced model: %v", expired)
	}
	if m, _ := h.snap().ModelByUUID(testModel); m.Migration == nil || m.Migration.Role != api.MigrationSource || m.Migration.ID != "mig-1" {
		t.Fatalf("the model's migration: %+v", m.Migration)
	}

	_, err = h.apply(ReleaseModelType, &ReleaseModelRequest{ModelUUID: testModel, MigrationID: "mig-2"})
	wantCode(t, "release by another migration", err, api.CodeMigrating)
	h.must(ReleaseModelType, &ReleaseModelRequest{ModelUUID: testModel, MigrationID: "mig-1"})
	h.must(ReleaseModelType, &ReleaseModelRequest{ModelUUID: testModel, MigrationID: "mig-1"}) // asked again
	h.must(SetModelConfigType, &SetModelConfigRequest{ModelUUID: testModel, Set: map[string]any{"k": "v"}})
	if expired := h.must(ExpireLeasesType, &ExpireLeasesRequest{Now: t0.Add(time.Hour)}).([]string); len(expired) != 1 {
		t.Fatalf("after release the expired lease stays: %v", expired)
	}
}

// exportRows reads an export back with each row's raft indexes cleared and
// the model's migration marks dropped: what must survive a migration.
func exportRows(t *testing.T, h *harness) string {
	t.Helper()
	var buf bytes.Buffer
	if _, err := ExportModel(h.snap(), testModel, "c", h.index, &buf); err != nil {
		t.Fatal(err)
	}
	rows, err := ReadModelExport(&buf)
	if err != nil {
		t.Fatal(err)
	}
	m := fresh(rows.Model)
	m.Migration, m.ImportedBy = nil, ""
	out := map[string]any{"model": m, "charms": len(rows.Charms)}
	for table, rs := range rows.Rows {
		var clean []any
		for _, r := range rs {
			clean = append(clean, fresh(r))
		}
		out[table] = clean
	}
	b, err := json.MarshalIndent(out, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestImportActivateAbort: an export imports into another controller as a
// hidden model every command refuses; activating it makes it the
// controller's own, equal to the source's; an import aborted leaves no
// row; each step may be asked again.
func TestImportActivateAbort(t *testing.T) {
	src := newHarness(t)
	fillAll(src)
	export := src.exportModel(t)
	want := exportRows(t, src)

	dst := newHarness(t)
	dst.must(ControllerInitType, &ControllerInitRequest{UUID: "c2", Name: "west", CACert: "PEM"})
	_, err := dst.apply(ImportModelType, &ImportModelRequest{MigrationID: "mig-1", Export: []byte("junk"), Now: t0})
	wantCode(t, "a corrupt export", err, api.CodeInvalid)
	dst.must(ImportModelType, &ImportModelRequest{MigrationID: "mig-1", Export: export, Now: t0})
	dst.must(ImportModelType, &ImportModelRequest{MigrationID: "mig-1", Export: export, Now: t0}) // asked again
	_, err = dst.apply(SetModelConfigType, &SetModelConfigRequest{ModelUUID: testModel, Set: map[string]any{"k": "v"}})
	wantCode(t, "a change to a model being imported", err, api.CodeMigrating)
	_, err = dst.apply(SetStatusType, &SetStatusRequest{ModelUUID: testModel, Kind: api.StatusKindWorkload, Entity: "kv/0",
		Status: api.Status{Status: "active", Since: t0}})
	wantCode(t, "an agent's write to a model being imported", err, api.CodeMigrating)
	_, err = dst.apply(ActivateModelType, &ActivateModelRequest{ModelUUID: testModel, MigrationID: "mig-2"})
	wantCode(t, "activation by another migration", err, api.CodeConflict)

	dst.must(ActivateModelType, &ActivateModelRequest{ModelUUID: testModel, MigrationID: "mig-1"})
	dst.must(ActivateModelType, &ActivateModelRequest{ModelUUID: testModel, MigrationID: "mig-1"}) // asked again
	_, err = dst.apply(AbortImportType, &AbortImportRequest{ModelUUID: testModel, MigrationID: "mig-1"})
	wantCode(t, "abort after activation", err, api.CodeConflict)
	if got := exportRows(t, dst); got != want {
		t.Fatalf("the imported model differs from the source's:\n got %s\nwant %s", got, want)
	}
	m, _ := dst.snap().ModelByUUID(testModel)
	if m.Migration != nil || m.ImportedBy != "mig-1" {
		t.Fatalf("activated model: migration %+v, imported by %q", m.Migration, m.ImportedBy)
	}
	// The model is the controller's own: changes apply, sequences go on.
	res := dst.must(AddApplicationType, &AddApplicationRequest{ModelUUID: testModel, Name: "kv2", CharmSHA256: sha("kv"), NumUnits: 1, Now: t0}).(*AddApplicationResult)
	if src, _ := src.snap().ModelByUUID(testModel); res.Machines[0] != strconv.Itoa(src.NextMachine) {
		t.Errorf("a new machine after the import is %s, want %d (the source's next)", res.Machines[0], src.NextMachine)
	}

	// An import aborted leaves nothing of the model, and may be aborted
	// again; its model cannot then be activated.
	other := newHarness(t)
	other.must(ImportModelType, &ImportModelRequest{MigrationID: "mig-3", Export: export, Now: t0})
	other.must(AbortImportType, &AbortImportRequest{ModelUUID: testModel, MigrationID: "mig-3"})
	other.must(AbortImportType, &AbortImportRequest{ModelUUID: testModel, MigrationID: "mig-3"})
	_, err = other.apply(ActivateModelType, &ActivateModelRequest{ModelUUID: testModel, MigrationID: "mig-3"})
	wantCode(t, "activation after abort", err, api.CodeNotFound)
	noRowsOf(t, other, "aborted import")
	// The same model may be imported again after an abort.
	other.must(ImportModelType, &ImportModelRequest{MigrationID: "mig-4", Export: export, Now: t0})
}

// TestImportRefusesANameTaken: an owner's model names stay unique.
func TestImportRefusesANameTaken(t *testing.T) {
	src := newHarness(t)
	src.seed()
	export := src.exportModel(t)
	dst := newHarness(t)
	dst.must(AddModelType, &AddModelRequest{UUID: "another-uuid", Name: "m", Owner: "admin", Now: t0})
	_, err := dst.apply(ImportModelType, &ImportModelRequest{MigrationID: "mig-1", Export: export, Now: t0})
	wantCode(t, "an import whose owner already has the name", err, api.CodeAlreadyExists)
}

// TestReportMinion: a quiesced source model keeps each agent's latest
// report; a model not migrating, or another migration's report, is
// refused.
func TestReportMinion(t *testing.T) {
	h := newHarness(t)
	h.seed()
	h.deploy("kv", "kv", 1)
	report := func(tag, id, phase string) (any, error) {
		return h.apply(ReportMinionType, &ReportMinionRequest{ModelUUID: testModel, Tag: tag,
			Report: api.MinionReport{MigrationID: id, Phase: phase, Success: true, Time: t0}})
	}
	_, err := report("machine-0", "mig-1", api.MigrationQuiesce)
	wantCode(t, "a report on a model not migrating", err, api.CodeConflict)
	h.must(QuiesceModelType, &QuiesceModelRequest{ModelUUID: testModel, MigrationID: "mig-1", Now: t0})
	_, err = report("machine-0", "mig-2", api.MigrationQuiesce)
	wantCode(t, "a report on another migration", err, api.CodeConflict)
	_, err = report("machine-0", "mig-1", "EXPORT")
	wantCode(t, "a report on a phase agents do not see", err, api.CodeInvalid)
	if _, err := report("machine-0", "mig-1", api.MigrationQuiesce); err != nil {
		t.Fatalf("a quiesced model refused its agent's report: %v", err)
	}
	if _, err := report("machine-1", "mig-1", api.MigrationQuiesce); err != nil {
		t.Fatal(err)
	}
	if _, err := report("machine-0", "mig-1", api.MigrationValidation); err != nil {
		t.Fatal(err)
	}
	m, _ := h.snap().ModelByUUID(testModel)
	want := map[string]api.MinionReport{
		"machine-0": {MigrationID: "mig-1", Phase: api.MigrationValidation, Success: true, Time: t0},
		"machine-1": {MigrationID: "mig-1", Phase: api.MigrationQuiesce, Success: true, Time: t0},
	}
	if !reflect.DeepEqual(m.Migration.Minions, want) {
		t.Fatalf("minions %+v, want %+v", m.Migration.Minions, want)
	}
	h.must(ReleaseModelType, &ReleaseModelRequest{ModelUUID: testModel, MigrationID: "mig-1"})
	_, err = report("machine-0", "mig-1", api.MigrationQuiesce)
	wantCode(t, "a report after the release", err, api.CodeConflict)
}

// exportModel is the export of testModel as h holds it, from controller
// "c1".
func (h *harness) exportModel(t *testing.T) []byte {
	t.Helper()
	var export bytes.Buffer
	if _, err := ExportModel(h.snap(), testModel, "c1", h.index, &export); err != nil {
		t.Fatal(err)
	}
	return export.Bytes()
}

// noRowsOf fails t for every row of testModel h's store holds, in the
// models table and every table of a model's entities; what names the
// model in the failure.
func noRowsOf(t *testing.T, h *harness, what string) {
	t.Helper()
	txn := h.snap().txn
	for _, table := range append([]string{tables.Models}, tables.ModelTables...) {
		index, args := byModel(table, testModel)
		if table == tables.Models {
			index = "id"
		}
		if obj, err := txn.First(table, index, args...); err != nil || obj != nil {
			t.Errorf("%s keeps a row of the %s: %v %v", table, what, obj, err)
		}
	}
}
