package migration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/cli/internal/modelcmd"
	"github.com/droverhq/drover/cli/internal/modelcmd/modelcmdtest"
)

// fakeHub is a test double of the hub's migration API (api/migrations.go)
// and of the model and controller listings the commands read. Each
// migration plays a script of states: every GET of it answers the
// current state, then moves to the next one (when advance allows).
type fakeHub struct {
	t      *testing.T
	models []fakeModel

	mu sync.Mutex
	// script is the states a new migration of a model plays, by model
	// name (default: the happy path).
	script map[string][]api.Migration
	// advance, when set, says whether migration id may move on; it is
	// called with mu held.
	advance    func(h *fakeHub, id string) bool
	migrations map[string]*fakeMigration
	order      []string // migration ids, oldest first
	started    int
	active     int // started and not yet seen final
	maxActive  int
	aborts     []string // ids asked to abort
	gets       map[string]int
	lastQuery  string
	// onGet runs after each GET of a migration (outside mu).
	onGet func(id string, n int)
}

type fakeModel struct{ uuid, name, owner, controller string }

type fakeMigration struct {
	states []api.Migration
	at     int
	seen   bool // its final state was answered
}

func (f *fakeMigration) current() api.Migration { return f.states[f.at] }

func newFakeHub(t *testing.T, models ...fakeModel) *fakeHub {
	return &fakeHub{t: t, models: models, script: map[string][]api.Migration{}, migrations: map[string]*fakeMigration{}, gets: map[string]int{}}
}

// happyPath is a migration of m from its controller to target, phase by
// phase, with the agents reporting.
func happyPath(id string, m fakeModel, target string) []api.Migration {
	base := api.Migration{ID: id, ModelUUID: m.uuid, ModelName: m.name, SourceController: m.controller, TargetController: target,
		StartedAt: modelcmdtest.Now()}
	steps := []struct {
		phase, msg  string
		ok, pending int
	}{
		{"PRECHECK", "performing prechecks", 0, 0},
		{"QUIESCE", "waiting for agents to report back", 1, 2},
		{"QUIESCE", "waiting for agents to report back", 3, 0},
		{"EXPORT", "exporting model", 0, 0},
		{"IMPORT", "importing model into target controller", 0, 0},
		{"VALIDATION", "waiting for agents to reach the target", 3, 0},
		{"SUCCESS", "", 0, 0},
		{"REAP", "removing the model from the source controller", 0, 0},
		{"DONE", "", 0, 0},
	}
	out := make([]api.Migration, len(steps))
	for i, s := range steps {
		out[i] = base
		out[i].Phase, out[i].Message = s.phase, s.msg
		out[i].Agents = api.MigrationAgents{OK: s.ok, Pending: s.pending}
	}
	end := modelcmdtest.Now().Add(2 * time.Minute)
	out[len(out)-1].EndedAt = &end
	return out
}

// abortedPath is a migration that fails in QUIESCE and is aborted.
func abortedPath(id string, m fakeModel, target string) []api.Migration {
	h := happyPath(id, m, target)[:2]
	fail := h[1]
	fail.Agents = api.MigrationAgents{OK: 2, Failed: 1, Reasons: map[string]string{"unit-db-0": "hook failed: install"}}
	aborting := fail
	aborting.Phase, aborting.Message, aborting.Failure = "ABORTING", "aborting", "agent unit-db-0 failed to quiesce"
	aborted := aborting
	aborted.Phase, aborted.Message = "ABORTED", ""
	end := modelcmdtest.Now().Add(time.Minute)
	aborted.EndedAt = &end
	return append(h, fail, aborting, aborted)
}

func (h *fakeHub) handler() http.Handler {
	mux := http.NewServeMux()
	reply := func(w http.ResponseWriter, status int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(v)
	}
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, r *http.Request) {
		var list []map[string]any
		for _, m := range h.models {
			list = append(list, map[string]any{"uuid": m.uuid, "name": m.name, "owner": m.owner, "life": "alive", "status": "available",
				"controller": m.controller, "controller-uuid": "ctl-" + m.controller})
		}
		reply(w, 200, map[string]any{"models": list})
	})
	mux.HandleFunc("GET /v1/controllers", func(w http.ResponseWriter, r *http.Request) {
		reply(w, 200, map[string]any{"controllers": []map[string]any{{"name": "east"}, {"name": "west"}}})
	})
	mux.HandleFunc("POST /v1/migrations", func(w http.ResponseWriter, r *http.Request) {
		var req api.MigrateRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			modelcmdtest.AnswerError(w, 400, api.CodeBadRequest, err.Error())
			return
		}
		h.mu.Lock()
		defer h.mu.Unlock()
		var m *fakeModel
		for i := range h.models {
			if h.models[i].uuid == req.Model {
				m = &h.models[i]
			}
		}
		if m == nil {
			modelcmdtest.AnswerError(w, 404, api.CodeNotFound, fmt.Sprintf("model %q not found", req.Model))
			return
		}
		h.started++
		id := fmt.Sprintf("mig-%d", h.started)
		states := happyPath(id, *m, req.TargetController)
		if s, ok := h.script[m.name]; ok {
			states = make([]api.Migration, len(s))
			for i := range s {
				states[i] = s[i]
				states[i].ID = id
			}
		}
		h.migrations[id] = &fakeMigration{states: states}
		h.order = append(h.order, id)
		h.active++
		h.maxActive = max(h.maxActive, h.active)
		reply(w, http.StatusCreated, states[0])
	})
	mux.HandleFunc("GET /v1/migrations", func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		defer h.mu.Unlock()
		q := r.URL.Query()
		h.lastQuery = r.URL.RawQuery
		list := []api.Migration{}
		for i := len(h.order) - 1; i >= 0; i-- {
			m := h.migrations[h.order[i]].current()
			if (q.Get("model") != "" && q.Get("model") != m.ModelUUID) || (q.Get("active") == "true" && m.Final()) {
				continue
			}
			list = append(list, m)
		}
		reply(w, 200, list)
	})
	mux.HandleFunc("GET /v1/migrations/{id}", func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		h.mu.Lock()
		f, ok := h.migrations[id]
		if !ok {
			h.mu.Unlock()
			modelcmdtest.AnswerError(w, 404, api.CodeNotFound, "migration not found")
			return
		}
		m := f.current()
		if m.Final() && !f.seen {
			f.seen = true
			h.active--
		}
		if f.at < len(f.states)-1 && (h.advance == nil || h.advance(h, id)) {
			f.at++
		}
		h.gets[id]++
		n, onGet := h.gets[id], h.onGet
		h.mu.Unlock()
		reply(w, 200, m)
		if onGet != nil {
			onGet(id, n)
		}
	})
	mux.HandleFunc("POST /v1/migrations/{id}/abort", func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		h.mu.Lock()
		defer h.mu.Unlock()
		f, ok := h.migrations[id]
		if !ok {
			modelcmdtest.AnswerError(w, 404, api.CodeNotFound, "migration not found")
			return
		}
		h.aborts = append(h.aborts, id)
		cur := f.current()
		cur.AbortRequested = true
		aborting, aborted := cur, cur
		aborting.Phase, aborting.Message = "ABORTING", "aborting: asked by alice@example.com"
		aborted.Phase, aborted.Message, aborted.Failure = "ABORTED", "", "aborted by alice@example.com"
		f.states, f.at = []api.Migration{cur, aborting, aborted}, 0
		reply(w, 200, cur)
	})
	mux.HandleFunc("POST /v1/migrations/{id}/retry-reap", func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		h.mu.Lock()
		defer h.mu.Unlock()
		f, ok := h.migrations[id]
		if !ok || f.current().Phase != "REAPFAILED" {
			modelcmdtest.AnswerError(w, 409, api.CodeConflict, "migration is not REAPFAILED")
			return
		}
		reap, done := f.current(), f.current()
		reap.Phase, reap.Failure, reap.Message = "REAP", "", ""
		done.Phase, done.Failure, done.Message = "DONE", "", ""
		f.states, f.at = []api.Migration{reap, done}, 0
		reply(w, 200, reap)
	})
	return mux
}

// addMigration records a migration in states (the first current).
func (h *fakeHub) addMigration(states ...api.Migration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.migrations[states[0].ID] = &fakeMigration{states: states}
	h.order = append(h.order, states[0].ID)
}

// env is an Env logged in to the fake hub.
func (h *fakeHub) env() (*modelcmd.Env, *bytes.Buffer, *bytes.Buffer) {
	return modelcmdtest.AtFakeHub(h.t, h.handler())
}

// run runs one command built by build on e, as App does (usage errors
// and all), polling every millisecond.
func run(ctx context.Context, e *modelcmd.Env, build func(*Commands) *cobra.Command, args ...string) error {
	cmd := build(&Commands{Env: e, Poll: time.Millisecond})
	cmd.SetArgs(args)
	cmd.SetOut(e.Stdout)
	cmd.SetErr(e.Stderr)
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return modelcmd.UsageError{Err: err} })
	return cmd.ExecuteContext(ctx)
}

var (
	shop = fakeModel{uuid: "6a1f0c2e-0000-4000-8000-000000000001", name: "shop", owner: "alice@example.com", controller: "east"}
	db   = fakeModel{uuid: "6a1f0c2e-0000-4000-8000-000000000002", name: "db", owner: "alice@example.com", controller: "east"}
	web  = fakeModel{uuid: "6a1f0c2e-0000-4000-8000-000000000003", name: "web", owner: "alice@example.com", controller: "east"}
	far  = fakeModel{uuid: "6a1f0c2e-0000-4000-8000-000000000004", name: "far", owner: "alice@example.com", controller: "west"}
)
