package spoke

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/droverhq/drover/api"
)

// validate posts an agent's api.AgentValidateRequest to node 0 of c and
// returns the answer's status and error.
func validate(t *testing.T, c *testCluster, tag, secret, migration string) (int, api.Error) {
	t.Helper()
	body, _ := json.Marshal(api.AgentValidateRequest{MigrationID: migration})
	req, err := http.NewRequestWithContext(t.Context(), "POST", "https://"+c.nodes[0].cfg.Listen+api.PathAgentValidate, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth(tag, secret)
	resp, err := testHTTPClient(c.cred.CACert).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var e api.Error
	if b, _ := io.ReadAll(resp.Body); len(b) > 0 {
		json.Unmarshal(b, &e)
	}
	return resp.StatusCode, e
}

// setPhase moves the source model's migration on c through the phase
// route, as the hub's driver does.
func setPhase(t *testing.T, c *testCluster, model, phase string, target *api.TargetController) {
	t.Helper()
	m, err := c.nodes[0].srv.Store().Snapshot().ModelByUUID(model)
	if err != nil || m.Migration == nil {
		t.Fatalf("model %s is not migrating: %v", model, err)
	}
	id := m.Migration.ID
	body, err := json.Marshal(api.MigrationPhaseRequest{MigrationID: id, Phase: phase, Target: target})
	if err != nil {
		t.Fatal(err)
	}
	status, _, b := c.migrationCall(t, "POST", model, "phase", id+"/"+phase+"/1", body, nil)
	wantStep(t, "phase "+phase, status, http.StatusOK, b)
}

// TestMinionProtocolOnTheControllers: the source's agents see their
// model's migration in their state and report on it under their own tag;
// the target checks their credentials for the migration importing the
// model; once the migration succeeded, the source redirects an agent
// logging in to the target.
func TestMinionProtocolOnTheControllers(t *testing.T) {
	env := newAgentEnv(t, 1)
	src, model := env.c, env.model
	dst := newTestCluster(t, 1)
	tag := "machine-" + model + "-0"
	a := env.dial(t, 0, "0")
	a.waitState(t, "the first state", func(ms *api.MachineState) bool { return ms.Machine == "0" })
	if ms := a.waitState(t, "a state", func(*api.MachineState) bool { return true }); ms.Migration != nil {
		t.Fatalf("a model not migrating shows its agents a migration: %+v", ms.Migration)
	}
	report := func(id, phase string, ok bool) error {
		return a.call(api.AgentMigrationReport, api.MinionReport{MigrationID: id, Phase: phase, Success: ok, Message: "m"}, nil)
	}
	wantCode(t, "a report on a model not migrating", report("mig-1", api.MigrationQuiesce, true), api.CodeConflict, "not migrating")

	// Quiesced, the model's agents see the migration in QUIESCE and
	// report, under the tag they logged in with.
	status, _, b := src.migrationCall(t, "POST", model, "quiesce", "mig-1/QUIESCE/1", stepBody("mig-1"), nil)
	wantStep(t, "quiesce", status, http.StatusOK, b)
	a.waitState(t, "the migration in QUIESCE", func(ms *api.MachineState) bool {
		return ms.Migration != nil && ms.Migration.ID == "mig-1" && ms.Migration.Phase == api.MigrationQuiesce && ms.Migration.Target == nil
	})
	wantCode(t, "a report on another migration", report("mig-2", api.MigrationQuiesce, true), api.CodeConflict, "not mig-2")
	if err := report("mig-1", api.MigrationQuiesce, true); err != nil {
		t.Fatalf("a quiesced model refused its agent's report: %v", err)
	}
	err := a.call(api.AgentMigrationReport, map[string]any{"migration-id": "mig-1", "phase": api.MigrationQuiesce, "tag": "machine-" + model + "-1"}, nil)
	wantCode(t, "a report naming a tag", err, api.CodeBadRequest, "unknown field")
	m, err := src.nodes[0].srv.Store().Snapshot().ModelByUUID(model)
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := m.Migration.Minions[tag]; !ok || len(m.Migration.Minions) != 1 || r.MigrationID != "mig-1" ||
		r.Phase != api.MigrationQuiesce || !r.Success || r.Time.IsZero() {
		t.Fatalf("the model's minion reports: %+v", m.Migration.Minions)
	}

	// The target checks an agent's credential only for the migration
	// importing the model: before the import it knows no such agent.
	code, e := validate(t, dst, tag, "secret-0", "mig-1")
	if code != http.StatusUnauthorized {
		t.Fatalf("validate before the import: HTTP %d %+v, want 401", code, e)
	}
	status, hdr, export := src.migrationCall(t, "GET", model, "export?migration=mig-1", "mig-1/EXPORT/1", nil, nil)
	wantStep(t, "export", status, http.StatusOK, export)
	status, _, b = dst.migrationCall(t, "POST", model, "import?migration=mig-1", "mig-1/IMPORT/1", export,
		map[string]string{api.HeaderExportSHA256: hdr.Get(api.HeaderExportSHA256)})
	wantStep(t, "import", status, http.StatusOK, b)
	if code, e := validate(t, dst, tag, "secret-0", "mig-1"); code != http.StatusNoContent {
		t.Fatalf("validate with the agent's credential: HTTP %d %+v, want 204", code, e)
	}
	if code, e := validate(t, dst, tag, "wrong", "mig-1"); code != http.StatusUnauthorized || e.Code != api.CodeUnauthorized {
		t.Fatalf("validate with a bad secret: HTTP %d %+v, want 401", code, e)
	}
	if code, e := validate(t, dst, tag, "secret-0", "mig-9"); code != http.StatusConflict || e.Code != api.CodeConflict {
		t.Fatalf("validate for another migration: HTTP %d %+v, want 409", code, e)
	}

	// VALIDATION, then SUCCESS: the agents see the phase and the target.
	target := &api.TargetController{ControllerUUID: "west-uuid", ControllerName: "west",
		Addresses: []string{dst.nodes[0].cfg.Listen}, CACert: dst.cred.CACert}
	setPhase(t, src, model, api.MigrationValidation, target)
	a.waitState(t, "the migration in VALIDATION", func(ms *api.MachineState) bool {
		return ms.Migration != nil && ms.Migration.Phase == api.MigrationValidation && ms.Migration.Target != nil &&
			ms.Migration.Target.CACert == dst.cred.CACert && ms.Migration.Target.Addresses[0] == dst.nodes[0].cfg.Listen
	})
	if err := report("mig-1", api.MigrationValidation, false); err != nil {
		t.Fatal(err)
	}
	setPhase(t, src, model, api.MigrationSuccess, target)
	a.waitState(t, "the migration in SUCCESS", func(ms *api.MachineState) bool {
		return ms.Migration != nil && ms.Migration.Phase == api.MigrationSuccess
	})
	if err := report("mig-1", api.MigrationSuccess, true); err != nil {
		t.Fatalf("an agent connected at SUCCESS cannot report: %v", err)
	}

	// An agent logging in to the source now is told where the model went,
	// in the handshake's answer.
	_, resp, err := dialAgent(t.Context(), src.nodes[0].cfg.Listen, []byte(src.cred.CACert), "machine-"+model+"-1", "secret-1", 0)
	if err == nil || resp == nil || resp.StatusCode != http.StatusConflict {
		t.Fatalf("an agent logging in after SUCCESS: %v (%v), want 409", err, resp)
	}
	b, _ = io.ReadAll(resp.Body)
	var redirect api.Error
	if err := json.Unmarshal(b, &redirect); err != nil || redirect.Code != api.CodeRedirect {
		t.Fatalf("the handshake's answer %s: %v", b, err)
	}
	got, ok := api.RedirectTarget(&redirect)
	if !ok || got.ControllerUUID != "west-uuid" || got.Addresses[0] != dst.nodes[0].cfg.Listen {
		t.Fatalf("the redirect names %+v, %v", got, ok)
	}
	// A bad credential is refused as such, not redirected.
	_, resp, err = dialAgent(t.Context(), src.nodes[0].cfg.Listen, []byte(src.cred.CACert), "machine-"+model+"-1", "wrong", 0)
	if err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a bad credential after SUCCESS: %v (%v), want 401", err, resp)
	}

	// An activated model is not being imported: validate refuses.
	status, _, b = dst.migrationCall(t, "POST", model, "activate", "mig-1/SUCCESS/1", stepBody("mig-1"), nil)
	wantStep(t, "activate", status, http.StatusOK, b)
	if code, e := validate(t, dst, tag, "secret-0", "mig-1"); code != http.StatusConflict || e.Code != api.CodeConflict {
		t.Fatalf("validate after the activation: HTTP %d %+v, want 409", code, e)
	}
}
