package cli

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/api"
)

// TestShowModelMigration: show-model at a hub shows the model's latest
// migration: Juju's status fields and Drover's migration section.
func TestShowModelMigration(t *testing.T) {
	const id = "6a1f0c2e-0000-4000-8000-0000000000a1"
	start := time.Date(2026, 11, 21, 21, 0, 0, 0, time.UTC)
	end := start.Add(90 * time.Second)
	mig := api.Migration{ID: "mig-4", ModelUUID: id, ModelName: "prod", SourceController: "east", TargetController: "west",
		Phase: "ABORTED", Failure: "agent unit-kv-0 cannot reach the target",
		Agents:    api.MigrationAgents{OK: 2, Failed: 1, Reasons: map[string]string{"unit-kv-0": "dial west: connection refused"}},
		StartedAt: start, EndedAt: &end}
	listed := map[string]any{"uuid": id, "name": "prod", "owner": "alice@example.com", "life": "alive", "status": "available",
		"controller": "east", "controller-uuid": "c1"}
	mux := http.NewServeMux()
	answer := func(w http.ResponseWriter, v any) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	}
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, r *http.Request) {
		answer(w, map[string]any{"models": []any{listed}})
	})
	mux.HandleFunc("GET /v1/models/"+id, func(w http.ResponseWriter, r *http.Request) {
		one := map[string]any{"last-migration": mig}
		for k, v := range listed {
			one[k] = v
		}
		answer(w, one)
	})
	mux.HandleFunc("GET /v1/models/"+id+"/config", func(w http.ResponseWriter, r *http.Request) {
		answer(w, map[string]any{"automatically-retry-hooks": true})
	})
	a, out, errb := atFakeHub(t, mux)
	if code := a.Run(t.Context(), []string{"show-model", "prod", "--format", "json"}); code != 0 {
		t.Fatalf("show-model: exit %d: %s", code, errb)
	}
	var got map[string]struct {
		Status    map[string]any `json:"status"`
		Migration map[string]any `json:"migration"`
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	st, sec := got["prod"].Status, got["prod"].Migration
	if st["migration"] != "migration aborted: agent unit-kv-0 cannot reach the target" ||
		st["migration-start"] != "2026-11-21T21:00:00Z" || st["migration-end"] != "2026-11-21T21:01:30Z" {
		t.Errorf("status %v", st)
	}
	want := `{"agents":{"failed":1,"ok":2,"pending":0,"reasons":{"unit-kv-0":"dial west: connection refused"}},"end":"2026-11-21T21:01:30Z","failure":"agent unit-kv-0 cannot reach the target","from":"east","id":"mig-4","phase":"ABORTED","start":"2026-11-21T21:00:00Z","to":"west"}`
	if b, _ := json.Marshal(sec); string(b) != want {
		t.Errorf("migration section\n%s\nwant\n%s", b, want)
	}
	out.Reset()
	if code := a.Run(t.Context(), []string{"show-model", "prod"}); code != 0 ||
		!strings.Contains(out.String(), "  migration:\n    agents:\n      failed: 1\n") {
		t.Errorf("show-model in YAML: exit %d\n%s", code, out)
	}
}

// TestMigrateExitCodes: a migration that ends ABORTED exits 1 with the
// reason after ERROR; a mistake in the arguments exits 2.
func TestMigrateExitCodes(t *testing.T) {
	const id = "6a1f0c2e-0000-4000-8000-0000000000a2"
	mig := api.Migration{ID: "mig-9", ModelUUID: id, ModelName: "prod", SourceController: "east", TargetController: "west",
		Phase: "ABORTED", Failure: "target controller west refused the model: version too old"}
	mux := http.NewServeMux()
	answer := func(w http.ResponseWriter, status int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(v)
	}
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, r *http.Request) {
		answer(w, 200, map[string]any{"models": []any{map[string]any{"uuid": id, "name": "prod", "owner": "alice@example.com",
			"status": "available", "controller": "east", "controller-uuid": "c1"}}})
	})
	mux.HandleFunc("POST /v1/migrations", func(w http.ResponseWriter, r *http.Request) {
		started := mig
		started.Phase, started.Failure = "PRECHECK", ""
		answer(w, http.StatusCreated, started)
	})
	mux.HandleFunc("GET /v1/migrations/mig-9", func(w http.ResponseWriter, r *http.Request) { answer(w, 200, mig) })
	a, out, errb := atFakeHub(t, mux)
	if code := a.Run(t.Context(), []string{"migrate", "prod", "west", "--wait"}); code != 1 ||
		errb.String() != "ERROR migration mig-9 of model \"prod\" to controller \"west\" aborted: target controller west refused the model: version too old; the model stays on controller \"east\"\n" {
		t.Errorf("an aborted migration: exit %d\n%s%s", code, out, errb)
	}
	errb.Reset()
	if code := a.Run(t.Context(), []string{"migrate", "prod"}); code != 2 || !strings.HasPrefix(errb.String(), "ERROR migrate: expected a model and the controller") {
		t.Errorf("one argument: exit %d: %s", code, errb)
	}
}

// TestMigrateCompletesModels: migrate's first argument completes the
// hub's model names; its second (a controller behind the hub) does not.
func TestMigrateCompletesModels(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"models": []any{map[string]any{"uuid": "6a1f0c2e-0000-4000-8000-0000000000a3",
			"name": "prod", "owner": "alice@example.com", "status": "available", "controller": "east", "controller-uuid": "c1"}}})
	})
	a, out, errb := atFakeHub(t, mux)
	if code := a.Run(t.Context(), []string{"__completeNoDesc", "migrate", "pr"}); code != 0 || out.String() != "prod\n:4\n" {
		t.Errorf("migrate's model: exit %d %q %s", code, out, errb)
	}
	out.Reset()
	if code := a.Run(t.Context(), []string{"__completeNoDesc", "migrate", "prod", ""}); code != 0 || out.String() != ":4\n" {
		t.Errorf("migrate's controller: exit %d %q %s", code, out, errb)
	}
}
