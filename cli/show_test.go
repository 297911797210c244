package cli

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/droverhq/drover/api"
)

// TestShowUnitWithoutRelationData: show-unit at a hub for someone who may
// only read the model shows the unit, and says its relation data needs
// Write access, rather than failing; a unit that is not there is named.
func TestShowUnitWithoutRelationData(t *testing.T) {
	const id = "6a1f0c2e-0000-4000-8000-00000000000f"
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"models": []api.Model{{UUID: id, Name: "shop", Owner: "alice@example.com"}}})
	})
	mux.HandleFunc("GET /v1/models/"+id+"/status", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(api.FullStatus{Applications: map[string]api.ApplicationStatus{
			"kv": {CharmName: "kv", CharmRev: 2, Units: map[string]api.UnitStatus{"kv/0": {Leader: true, Machine: "0",
				WorkloadStatus: api.StatusDetail{Current: "active", Message: "ok"},
				Subordinates:   map[string]api.UnitStatus{"logfwd/0": {}}}}},
			"logfwd": {CharmName: "logfwd"}}})
	})
	mux.HandleFunc("GET /v1/models/"+id+"/units/kv/0/relation-info", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		_, _ = w.Write([]byte(`{"code":"forbidden","message":"permission denied: alice@example.com needs write access to model shop"}`))
	})
	mux.HandleFunc("GET /v1/models/"+id+"/units/logfwd/0/relation-info", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`[{"relation-id":1,"endpoint":"juju-info","related-endpoint":"juju-info","application-data":{},
			"local-unit":{"in-scope":true,"data":{"ingress-address":"10.0.0.1"}},"related-units":{"kv/0":{"in-scope":true,"data":{}}}}]`))
	})
	a, out, errb := atFakeHub(t, mux)
	if code := a.Run(t.Context(), []string{"show-unit", "kv/0", "-m", "shop"}); code != 0 {
		t.Fatalf("show-unit: exit %d: %s", code, errb)
	}
	if !strings.Contains(out.String(), "kv/0:\n  charm: local:kv-2\n  leader: true\n  life: alive\n  machine: \"0\"\n") ||
		strings.Contains(out.String(), "relation-info") || !strings.Contains(errb.String(), "needs write access") {
		t.Errorf("show-unit for a reader:\n%s%s", out, errb)
	}
	out.Reset()
	errb.Reset()
	if code := a.Run(t.Context(), []string{"show-unit", "logfwd/0", "-m", "shop"}); code != 0 ||
		!strings.Contains(out.String(), "  principal: kv/0\n") || !strings.Contains(out.String(), "ingress-address: 10.0.0.1") || errb.Len() != 0 {
		t.Errorf("show-unit of a subordinate: exit %d\n%s%s", code, out, errb)
	}
	errb.Reset()
	if code := a.Run(t.Context(), []string{"show-unit", "kv/7", "-m", "shop"}); code != 1 || !strings.Contains(errb.String(), `unit "kv/7" not found`) {
		t.Errorf("show-unit of a missing unit: exit %d: %s", code, errb)
	}
}

// TestJujuNamesOfCommands: the names a Juju user types, 3.x's and 2.9's,
// reach drover's commands.
func TestJujuNamesOfCommands(t *testing.T) {
	a, _, _ := testApp(t)
	root := a.newRoot()
	for alias, want := range map[string]string{
		"upgrade-charm": "refresh", "show-action-output": "show-task", "list-users": "users", "list-machines": "machines",
		"list-models": "models", "list-controllers": "controllers", "relate": "integrate", "add-relation": "integrate",
		"resolve": "resolved", "list-actions": "actions", "scale-application": "scale", "get-constraints": "constraints",
	} {
		cmd, _, err := root.Find([]string{alias})
		if err != nil || cmd.Name() != want {
			t.Errorf("%s: found %v (%v), want %s", alias, cmd.Name(), err, want)
		}
	}
}

// TestConstraintsAreCheckedBeforeAnythingIsSent: set-constraints, deploy
// and add-machine refuse constraints Juju would not take, as usage errors.
func TestConstraintsAreCheckedBeforeAnythingIsSent(t *testing.T) {
	for _, args := range [][]string{
		{"set-constraints", "kv", "memory=4G"},
		{"deploy", "./charms/kv", "--constraints", "memory=4G"},
		{"add-machine", "--constraints", "memory=4G"},
	} {
		a, _, errb := testApp(t)
		if code := a.Run(t.Context(), args); code != 2 || !strings.Contains(errb.String(), `unknown constraint "memory"`) {
			t.Errorf("%q: exit %d: %s", args, code, errb)
		}
	}
}
