package cli

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/droverhq/drover/api"
)

// TestEnvironmentNamesTheModel: DROVER_MODEL and DROVER_CONTROLLER name
// the model and controller a process works on, over the client store's
// current ones and without changing them, as JUJU_MODEL and
// JUJU_CONTROLLER do for juju: parallel scripts sharing one store each
// keep their own. 'drover switch' then refuses, as juju's does.
func TestEnvironmentNamesTheModel(t *testing.T) {
	const prod, test = "6a1f0c2e-0000-4000-8000-0000000000a1", "6a1f0c2e-0000-4000-8000-0000000000a2"
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"models":[
			{"uuid":"` + prod + `","name":"prod","owner":"alice@example.com","life":"alive","status":"available","controller":"east","controller-uuid":"c1"},
			{"uuid":"` + test + `","name":"test","owner":"alice@example.com","life":"alive","status":"available","controller":"east","controller-uuid":"c1"}]}`))
	})
	for uuid, name := range map[string]string{prod: "prod", test: "test"} {
		mux.HandleFunc("GET /v1/models/"+uuid+"/status", func(w http.ResponseWriter, r *http.Request) {
			_ = json.NewEncoder(w).Encode(api.FullStatus{Model: api.ModelStatus{Name: name}})
		})
	}
	a, out, errb := atFakeHub(t, mux)
	if code := a.Run(t.Context(), []string{"switch", "prod"}); code != 0 {
		t.Fatalf("switch prod: exit %d: %s", code, errb)
	}
	env := map[string]string{}
	storeEnv := a.Getenv
	a.Getenv = func(k string) string {
		if v, ok := env[k]; ok {
			return v
		}
		return storeEnv(k)
	}
	run := func(args ...string) (string, string, int) {
		t.Helper()
		out.Reset()
		errb.Reset()
		code := a.Run(t.Context(), args)
		return out.String(), errb.String(), code
	}
	statusOf := func() string {
		t.Helper()
		o, e, code := run("status", "--format", "json")
		var fs api.FullStatus
		if code != 0 || json.Unmarshal([]byte(o), &fs) != nil {
			t.Fatalf("status: exit %d: %s %s", code, o, e)
		}
		return fs.Model.Name
	}
	if got := statusOf(); got != "prod" {
		t.Fatalf("status without DROVER_MODEL shows %s, want prod", got)
	}
	for _, v := range []string{"test", "hub:test", "alice@example.com/test", test} {
		env["DROVER_MODEL"] = v
		if got := statusOf(); got != "test" {
			t.Errorf("DROVER_MODEL=%s: status shows %s, want test", v, got)
		}
	}
	env["DROVER_MODEL"] = "test"
	if o, _, _ := run("switch"); o != "hub:test\n" {
		t.Errorf("switch with DROVER_MODEL=test prints %q, want hub:test", o)
	}
	if o, _, _ := run("models"); !strings.Contains(o, "test*") || strings.Contains(o, "prod*") {
		t.Errorf("models with DROVER_MODEL=test marks another model current:\n%s", o)
	}
	if _, e, code := run("switch", "prod"); code == 0 || !strings.Contains(e, `cannot switch when DROVER_MODEL is overriding the model (set to "test")`) {
		t.Errorf("switch with DROVER_MODEL set: exit %d: %s", code, e)
	}
	env["DROVER_MODEL"] = "other:test"
	if _, e, code := run("status"); code == 0 || !strings.Contains(e, `controller "other" (named by DROVER_MODEL) not found`) {
		t.Errorf("DROVER_MODEL on an unknown controller: exit %d: %s", code, e)
	}
	delete(env, "DROVER_MODEL")
	env["DROVER_CONTROLLER"] = "nosuch"
	if _, e, code := run("models"); code == 0 || !strings.Contains(e, `controller "nosuch" (named by DROVER_CONTROLLER) not found`) {
		t.Errorf("DROVER_CONTROLLER naming an unknown controller: exit %d: %s", code, e)
	}
	delete(env, "DROVER_CONTROLLER")
	if got := statusOf(); got != "prod" {
		t.Errorf("the store's current model after DROVER_MODEL was used: %s, want prod (unchanged)", got)
	}
}
