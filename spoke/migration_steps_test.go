package spoke

import (
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/internal/version"
	"github.com/droverhq/drover/spoke/internal/state"
)

// wantAPIError fails unless err is an api error of code whose message
// holds every one of parts.
func wantAPIError(t *testing.T, what string, err error, code api.Code, parts ...string) {
	t.Helper()
	if api.CodeOf(err) != code {
		t.Fatalf("%s: %v, want %s", what, err, code)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Fatalf("%s: %q does not say %q", what, err, p)
		}
	}
}

// TestMigrationPrechecks: the source describes the model it can let go
// and refuses a model with a unit in error, naming it; the target refuses
// a description it cannot adopt (an export or a drover version newer than
// its own, machines on another host, a name taken) and accepts one it can.
func TestMigrationPrechecks(t *testing.T) {
	src, dst := newTestCluster(t, 1), newTestCluster(t, 1)
	ctx := t.Context()
	cl := src.client(0)
	model := deployKV(t, cl, "moving")
	step := api.MigrationStep{MigrationID: "mig-1", Key: "mig-1/PRECHECK/0"} // the hub's first attempt is 0
	info, err := cl.ControllerInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}

	// A machine without an agent yet could never report.
	_, err = cl.MigrationPrecheck(ctx, model, step, api.MigrationPrecheckRequest{Role: api.MigrationSource})
	wantAPIError(t, "a machine not provisioned", err, api.CodeInvalid, "machine 0 is not provisioned yet")
	provision := func(area string) {
		t.Helper()
		if _, _, err := src.nodes[0].srv.Propose(ctx, state.SetMachineProvisionedType, &state.SetMachineProvisionedRequest{
			ModelUUID: model, ID: "0", ProviderID: "local:" + hostname(t) + ":0", Addresses: []string{"127.0.0.1"}, Area: area}); err != nil {
			t.Fatal(err)
		}
	}
	// A local machine whose directory the target could not find.
	provision("")
	_, err = cl.MigrationPrecheck(ctx, model, step, api.MigrationPrecheckRequest{Role: api.MigrationSource})
	wantAPIError(t, "a local machine without its area", err, api.CodeInvalid, "machine 0 has no recorded directory")
	provision("/var/lib/drover-machines/east/" + model + "/0")
	desc, err := cl.MigrationPrecheck(ctx, model, step, api.MigrationPrecheckRequest{Role: api.MigrationSource})
	if err != nil {
		t.Fatal(err)
	}
	if desc.ModelUUID != model || desc.ModelName != "moving" || desc.Owner == "" || desc.ControllerUUID != info.UUID ||
		desc.Version != version.Version || desc.ExportVersion != state.ModelExportVersion || desc.Units != 1 || desc.Machines != 1 ||
		!slices.Equal(desc.Agents, []string{"machine-" + model + "-0"}) {
		t.Fatalf("the source's description: %+v", desc)
	}
	_, err = cl.MigrationPrecheck(ctx, model, step, api.MigrationPrecheckRequest{Role: "bystander"})
	wantAPIError(t, "an unknown role", err, api.CodeInvalid)
	_, err = cl.MigrationPrecheck(ctx, "no-such-model", step, api.MigrationPrecheckRequest{Role: api.MigrationSource})
	wantAPIError(t, "an unknown model", err, api.CodeNotFound)

	target := dst.client(0)
	host := hostname(t)
	at := func(change func(d *api.MigrationPrecheckResult)) error {
		d := *desc
		change(&d)
		_, err := target.MigrationPrecheck(ctx, model, step, api.MigrationPrecheckRequest{Role: api.MigrationTarget, Source: &d})
		return err
	}
	if err := at(func(d *api.MigrationPrecheckResult) { d.Hosts = []string{host} }); err != nil {
		t.Fatalf("the target refuses a model it can adopt: %v", err)
	}
	wantAPIError(t, "no description", at(func(d *api.MigrationPrecheckResult) { *d = api.MigrationPrecheckResult{} }), api.CodeInvalid)
	wantAPIError(t, "a newer export", at(func(d *api.MigrationPrecheckResult) { d.ExportVersion = state.ModelExportVersion + 1 }),
		api.CodeInvalid, "reads versions up to")
	wantAPIError(t, "a newer source", at(func(d *api.MigrationPrecheckResult) { d.Version = "99.1.0" }),
		api.CodeInvalid, "target controller runs drover "+version.Version+", older than the source's 99.1.0")
	wantAPIError(t, "machines on another host", at(func(d *api.MigrationPrecheckResult) { d.Hosts = []string{"elsewhere.invalid"} }),
		api.CodeInvalid, "the model's machines run on host elsewhere.invalid; a controller on host "+host+" cannot adopt them")
	dstInfo, err := target.ControllerInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wantAPIError(t, "to the same controller", at(func(d *api.MigrationPrecheckResult) { d.ControllerUUID = dstInfo.UUID }),
		api.CodeInvalid, "already on this controller")
	if _, err := target.AddModel(ctx, api.AddModelRequest{Name: "moving"}); err != nil {
		t.Fatal(err)
	}
	wantAPIError(t, "a name taken", at(func(d *api.MigrationPrecheckResult) {}), api.CodeAlreadyExists, `"moving"`)

	// A unit in error keeps the model where it is.
	if _, _, err := src.nodes[0].srv.Propose(ctx, state.SetStatusType, &state.SetStatusRequest{ModelUUID: model,
		Kind: api.StatusKindAgent, Entity: "kv/0", Status: api.Status{Status: "error", Message: "hook failed: install", Since: time.Now()}}); err != nil {
		t.Fatal(err)
	}
	_, err = cl.MigrationPrecheck(ctx, model, step, api.MigrationPrecheckRequest{Role: api.MigrationSource})
	wantAPIError(t, "a unit in error", err, api.CodeInvalid, "unit kv/0 is in error: fix or resolve it first")
	if _, _, err := src.nodes[0].srv.Propose(ctx, state.SetStatusType, &state.SetStatusRequest{ModelUUID: model,
		Kind: api.StatusKindAgent, Entity: "kv/0", Status: api.Status{Status: "idle", Since: time.Now()}}); err != nil {
		t.Fatal(err)
	}
	// Quiesced for this migration, the model still passes; for another,
	// it is taken.
	if _, err := cl.MigrationQuiesce(ctx, model, api.MigrationStep{MigrationID: "mig-1", Key: "mig-1/QUIESCE/1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.MigrationPrecheck(ctx, model, step, api.MigrationPrecheckRequest{Role: api.MigrationSource}); err != nil {
		t.Fatalf("a precheck asked again once quiesced: %v", err)
	}
	_, err = cl.MigrationPrecheck(ctx, model, api.MigrationStep{MigrationID: "mig-2", Key: "mig-2/PRECHECK/1"},
		api.MigrationPrecheckRequest{Role: api.MigrationSource})
	wantAPIError(t, "a second migration", err, api.CodeMigrating)
}

// TestMigrationSucceedsThenRedirects drives a model past its import as
// the hub's driver does: the target takes the source's logs (a transfer
// sent again adds nothing), the source moves through VALIDATION to
// SUCCESS, after which its abort is refused, its model's routes answer a
// redirect naming the target (409, its details the target), its event
// stream names the model no more, and the reap (asked twice) leaves a
// tombstone that keeps redirecting.
func TestMigrationSucceedsThenRedirects(t *testing.T) {
	src, dst := newTestCluster(t, 1), newTestCluster(t, 1)
	ctx := t.Context()
	cl, tcl := src.client(0), dst.client(0)
	model := deployKV(t, cl, "moving")
	step := func(phase string) api.MigrationStep {
		return api.MigrationStep{MigrationID: "mig-1", Key: "mig-1/" + phase + "/1"}
	}
	q, err := cl.MigrationQuiesce(ctx, model, step("QUIESCE"))
	if err != nil {
		t.Fatal(err)
	}
	if q.Migration == nil || q.Migration.Phase != api.MigrationQuiesce {
		t.Fatalf("the quiesced model's migration: %+v", q.Migration)
	}
	export, sum, _, err := cl.MigrationExport(ctx, model, step("EXPORT"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tcl.MigrationImport(ctx, model, step("IMPORT"), export, sum); err != nil {
		t.Fatal(err)
	}
	m, err := tcl.MigrationModel(ctx, model, "mig-1")
	if err != nil || !m.Importing() {
		t.Fatalf("the target's model being imported: %+v, %v", m, err)
	}

	// The charm archive the model names travels beside the export: the
	// target lists it as missing until it is put there, and takes only
	// content that hashes to its name.
	missing, err := tcl.MigrationMissingBlobs(ctx, model, "mig-1")
	if err != nil || len(missing) != 1 {
		t.Fatalf("the target's missing blobs: %v, %v (want the charm archive)", missing, err)
	}
	if have, err := cl.MigrationMissingBlobs(ctx, model, "mig-1"); err != nil || len(have) != 0 {
		t.Fatalf("the source's missing blobs: %v, %v (want none)", have, err)
	}
	blob, err := cl.MigrationBlob(ctx, model, "mig-1", missing[0])
	if err != nil {
		t.Fatal(err)
	}
	_, err = cl.MigrationBlob(ctx, model, "mig-1", strings.Repeat("0", 64))
	wantAPIError(t, "a blob the model does not name", err, api.CodeNotFound)
	err = tcl.MigrationPutBlob(ctx, model, step("IMPORT"), missing[0], append([]byte("x"), blob...))
	wantAPIError(t, "content that does not hash to its name", err, api.CodeInvalid, "nothing was stored")
	for range 2 {
		if err := tcl.MigrationPutBlob(ctx, model, step("IMPORT"), missing[0], blob); err != nil {
			t.Fatal(err)
		}
	}
	if left, err := tcl.MigrationMissingBlobs(ctx, model, "mig-1"); err != nil || len(left) != 0 {
		t.Fatalf("the target's missing blobs once put: %v, %v", left, err)
	}

	// The source's log, sent to the target twice: the second adds
	// nothing; the target's log is then the source's.
	t1 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	recs := []api.LogRecord{
		{Entity: "unit-kv-0", Time: t1, Level: "INFO", Module: "uniter", Message: "ran install"},
		{Entity: "unit-kv-0", Time: t1.Add(time.Second), Level: "INFO", Module: "uniter", Message: "ran start"},
	}
	if err := cl.MigrationSendLogs(ctx, model, step("QUIESCE"), recs); err != nil {
		t.Fatal(err)
	}
	srcLogs, err := cl.MigrationLogs(ctx, model, "mig-1")
	if err != nil || len(srcLogs) != 2 {
		t.Fatalf("the source's log: %+v, %v", srcLogs, err)
	}
	for range 2 {
		if err := tcl.MigrationSendLogs(ctx, model, step("LOGTRANSFER"), srcLogs); err != nil {
			t.Fatal(err)
		}
	}
	got, err := tcl.MigrationLogs(ctx, model, "mig-1")
	if err != nil || len(got) != 2 || got[0].Message != "ran install" || got[1].Message != "ran start" || !got[1].Time.Equal(t1.Add(time.Second)) {
		t.Fatalf("the target's log after two transfers: %+v, %v", got, err)
	}

	westInfo, err := tcl.ControllerInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	west := &api.TargetController{ControllerUUID: westInfo.UUID, ControllerName: westInfo.Name,
		Addresses: []string{dst.nodes[0].cfg.Listen}, CACert: westInfo.CACert}
	_, err = cl.MigrationSetPhase(ctx, model, step("VALIDATION"), api.MigrationValidation, nil)
	wantAPIError(t, "VALIDATION without a target", err, api.CodeInvalid)
	_, err = cl.MigrationSetPhase(ctx, model, step("SUCCESS"), api.MigrationSuccess, west)
	wantAPIError(t, "SUCCESS before VALIDATION", err, api.CodeConflict)
	for range 2 {
		v, err := cl.MigrationSetPhase(ctx, model, step("VALIDATION"), api.MigrationValidation, west)
		if err != nil || v.Migration == nil || v.Migration.Phase != api.MigrationValidation || v.Migration.Target.ControllerUUID != west.ControllerUUID {
			t.Fatalf("VALIDATION: %+v, %v", v, err)
		}
	}
	if _, err := tcl.MigrationActivate(ctx, model, step("SUCCESS")); err != nil {
		t.Fatal(err)
	}
	events, _ := dialEvents(t, src, 0)
	s, err := cl.MigrationSetPhase(ctx, model, step("SUCCESS"), api.MigrationSuccess, west)
	if err != nil || s.Migration.Phase != api.MigrationSuccess {
		t.Fatalf("SUCCESS: %+v, %v", s, err)
	}
	_, err = cl.MigrationRelease(ctx, model, step("ABORTING"))
	wantAPIError(t, "an abort after SUCCESS", err, api.CodeConflict, "reached SUCCESS")

	redirected := func(what string) {
		t.Helper()
		_, err := cl.Model(model).Info(ctx, api.ReadOptions{})
		tg, ok := api.RedirectTarget(err)
		if !ok || tg.ControllerUUID != west.ControllerUUID || tg.Addresses[0] != west.Addresses[0] || tg.CACert != west.CACert {
			t.Fatalf("%s: reading the model answered %v (target %+v)", what, err, tg)
		}
		status, e := src.raw(t, "PATCH", "/v1/models/"+model+"/config", `{"set":{"k":"v"}}`)
		if status != http.StatusConflict || e.Code != api.CodeRedirect {
			t.Fatalf("%s: a write to the model: HTTP %d %+v, want 409 %s", what, status, e, api.CodeRedirect)
		}
	}
	redirected("at SUCCESS")
	// The driver still reads it.
	if m, err := cl.MigrationModel(ctx, model, "mig-1"); err != nil || m.Migration.Phase != api.MigrationSuccess {
		t.Fatalf("the driver's read at SUCCESS: %+v, %v", m, err)
	}

	for range 2 {
		if err := cl.MigrationReap(ctx, model, step("REAP")); err != nil {
			t.Fatal(err)
		}
	}
	redirected("reaped")
	_, err = cl.MigrationModel(ctx, model, "mig-1")
	wantAPIError(t, "the driver's read after the reap", err, api.CodeNotFound)
	tomb, err := src.nodes[0].srv.Store().Snapshot().TombstoneByModel(model)
	if err != nil || tomb.MigrationID != "mig-1" || tomb.ModelName != "moving" || tomb.Target.ControllerUUID != west.ControllerUUID {
		t.Fatalf("the tombstone: %+v, %v", tomb, err)
	}
	// From SUCCESS on the source's stream names the model neither
	// changed nor removed: the hub indexes it on the target.
	marker, err := cl.AddModel(ctx, api.AddModelRequest{Name: "marker"})
	if err != nil {
		t.Fatal(err)
	}
	readEvents(t, events, model, marker.UUID, "the model that migrated away")
	if _, err := tcl.Model(model).Info(ctx, api.ReadOptions{}); err != nil {
		t.Fatalf("the target serves the model: %v", err)
	}
}

func hostname(t *testing.T) string {
	t.Helper()
	h, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	return h
}
