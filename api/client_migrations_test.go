package api_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"sync"
	"testing"

	"github.com/droverhq/drover/api"
)

// TestMigrationClientRoutes: each hub migration call goes to its
// documented route with its documented body and query, and decodes the
// answer; the listing reads a bare array and a wrapped one; a refusal
// keeps its code.
func TestMigrationClientRoutes(t *testing.T) {
	var mu sync.Mutex
	var got []string
	var body string
	m := api.Migration{ID: "mig-1", ModelName: "shop", Phase: "QUIESCE", Agents: api.MigrationAgents{OK: 2, Pending: 1}}
	wrapped := false
	mux := http.NewServeMux()
	answer := func(w http.ResponseWriter, r *http.Request, v any) {
		mu.Lock()
		got = append(got, r.Method+" "+r.URL.Path+"?"+r.URL.RawQuery)
		b, _ := io.ReadAll(r.Body)
		body = string(b)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	}
	mux.HandleFunc("POST /v1/migrations", func(w http.ResponseWriter, r *http.Request) { answer(w, r, m) })
	mux.HandleFunc("GET /v1/migrations", func(w http.ResponseWriter, r *http.Request) {
		if wrapped {
			answer(w, r, map[string]any{"migrations": []api.Migration{m}})
			return
		}
		answer(w, r, []api.Migration{m})
	})
	mux.HandleFunc("GET /v1/migrations/mig-1", func(w http.ResponseWriter, r *http.Request) { answer(w, r, m) })
	mux.HandleFunc("GET /v1/migrations/mig-1/events", func(w http.ResponseWriter, r *http.Request) {
		answer(w, r, []api.MigrationEvent{{Seq: 1, Kind: "phase", Phase: "PRECHECK"}})
	})
	mux.HandleFunc("POST /v1/migrations/mig-1/abort", func(w http.ResponseWriter, r *http.Request) { answer(w, r, m) })
	mux.HandleFunc("POST /v1/migrations/mig-1/retry-reap", func(w http.ResponseWriter, r *http.Request) { answer(w, r, m) })
	mux.HandleFunc("GET /v1/migrations/gone", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_ = json.NewEncoder(w).Encode(api.Error{Code: api.CodeNotFound, Message: "migration not found"})
	})
	ca := newTestCA(t)
	srv := ca.serve(t, mux)
	c := newClient(t, api.ClientConfig{Addresses: []string{addr(srv)}, CACert: ca.pem})
	ctx := t.Context()

	if out, err := c.Migrate(ctx, api.MigrateRequest{Model: "shop", TargetController: "west"}); err != nil || out.ID != "mig-1" {
		t.Fatalf("Migrate: %+v, %v", out, err)
	}
	if body != `{"model":"shop","target-controller":"west"}` {
		t.Errorf("Migrate sent %s", body)
	}
	list, err := c.Migrations(ctx, api.MigrationFilter{Model: "shop", Controller: "east", Phase: "DONE", Active: true})
	if err != nil || len(list) != 1 || list[0].Agents.OK != 2 {
		t.Fatalf("Migrations: %+v, %v", list, err)
	}
	wrapped = true
	if list, err := c.Migrations(ctx, api.MigrationFilter{}); err != nil || len(list) != 1 || list[0].ID != "mig-1" {
		t.Fatalf("Migrations, wrapped: %+v, %v", list, err)
	}
	if out, err := c.Migration(ctx, "mig-1"); err != nil || out.Phase != "QUIESCE" {
		t.Fatalf("Migration: %+v, %v", out, err)
	}
	if ev, err := c.MigrationEvents(ctx, "mig-1"); err != nil || len(ev) != 1 || ev[0].Phase != "PRECHECK" {
		t.Fatalf("MigrationEvents: %+v, %v", ev, err)
	}
	if _, err := c.AbortMigration(ctx, "mig-1"); err != nil {
		t.Fatalf("AbortMigration: %v", err)
	}
	if _, err := c.RetryReap(ctx, "mig-1"); err != nil {
		t.Fatalf("RetryReap: %v", err)
	}
	if _, err := c.Migration(ctx, "gone"); !errors.Is(err, api.ErrNotFound) {
		t.Errorf("an unknown migration: %v, want not found", err)
	}
	want := []string{
		"POST /v1/migrations?",
		"GET /v1/migrations?active=true&controller=east&model=shop&phase=DONE",
		"GET /v1/migrations?",
		"GET /v1/migrations/mig-1?",
		"GET /v1/migrations/mig-1/events?",
		"POST /v1/migrations/mig-1/abort?",
		"POST /v1/migrations/mig-1/retry-reap?",
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != len(want) {
		t.Fatalf("requests %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("request %d: %q, want %q", i, got[i], want[i])
		}
	}
}
