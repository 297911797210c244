package hub_test

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/authz"
	"github.com/droverhq/drover/hub/internal/migration"
	"github.com/droverhq/drover/hub/internal/store"
	"github.com/droverhq/drover/tests/testkit"
)

// precheckSpoke is a controller that answers the migration precheck
// route alone: with refusal when set, else with the model it describes.
type precheckSpoke struct {
	store.Controller
	mu      sync.Mutex
	refusal *api.Error
	calls   int
	// paths are the requests' methods and paths; bearer counts those
	// that carried a bearer token.
	paths  []string
	bearer int
}

func (p *precheckSpoke) refuse(e *api.Error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refusal = e
}

func startPrecheckSpoke(t *testing.T, e *env, name string) *precheckSpoke {
	t.Helper()
	p := &precheckSpoke{}
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.calls++
		p.paths = append(p.paths, r.Method+" "+r.URL.Path)
		if strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ") {
			p.bearer++
		}
		if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/precheck") ||
			!strings.HasPrefix(r.URL.Path, "/v1/controller/migrations/") || !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ") {
			http.Error(w, "no such route", http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		// A step's key: <migration-id>/<PHASE>/<attempt>, attempt from 1.
		if parts := strings.Split(r.Header.Get(api.HeaderIdempotencyKey), "/"); len(parts) != 3 || uuid.Validate(parts[0]) != nil ||
			parts[1] == "" || parts[2] == "" || parts[2][0] < '1' || parts[2][0] > '9' {
			w.WriteHeader(http.StatusBadRequest)
			_ = json.NewEncoder(w).Encode(api.Error{Code: api.CodeBadRequest, Message: "bad idempotency key " + r.Header.Get(api.HeaderIdempotencyKey)})
			return
		}
		if p.refusal != nil {
			w.WriteHeader(http.StatusUnprocessableEntity)
			_ = json.NewEncoder(w).Encode(p.refusal)
			return
		}
		_ = json.NewEncoder(w).Encode(api.MigrationPrecheckResult{ModelName: "shop", Machines: 2, Units: 2})
	}))
	t.Cleanup(srv.Close)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	p.Controller = store.Controller{UUID: newUUID(), Name: name, Region: name, Cloud: "localhost",
		APIAddresses: []string{srv.Listener.Addr().String()}, CACert: string(ca)}
	if err := e.st.Controllers.Upsert(t.Context(), p.Controller); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestMigrationAPI: who may migrate, what is refused and how, the
// controllers' prechecks answered at once, one active migration per
// model, listing, events, show-model's last migration, abort and
// retry-reap.
func TestMigrationAPI(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	bob, carol, dave := e.user("bob", "acme"), e.user("carol", "acme"), e.user("dave", "acme")
	east, west, north := startPrecheckSpoke(t, e, "east"), startPrecheckSpoke(t, e, "west"), startPrecheckSpoke(t, e, "north")
	model := newUUID()
	if err := e.st.Models.Insert(ctx, store.Model{UUID: model, Name: "shop", Org: "acme", Owner: bob.ID, ControllerUUID: east.UUID}); err != nil {
		t.Fatal(err)
	}
	e.grant(authz.UserObject(bob.ID), authz.CanAddModel, authz.ControllerObject(west.UUID))
	e.grant(authz.UserObject(carol.ID), authz.Reader, authz.ModelObject(model))
	e.grant(authz.UserObject(carol.ID), authz.CanAddModel, authz.ControllerObject(west.UUID))
	e.settle()
	bobTok, carolTok, daveTok := e.token(bob, 5*time.Minute, ""), e.token(carol, 5*time.Minute, ""), e.token(dave, 5*time.Minute, "")
	migrate := func(tok, model, target string) (int, []byte) {
		return e.do(http.MethodPost, "/v1/migrations", tok, api.MigrateRequest{Model: model, TargetController: target})
	}
	refusals := []struct {
		what, tok, model, target string
		code                     int
		says                     string
	}{
		{"an unknown model", bobTok, "nope", "west", http.StatusNotFound, `model "nope"`},
		{"a model the caller cannot see", daveTok, "shop", "west", http.StatusNotFound, `model "shop"`},
		{"an unknown controller", bobTok, "shop", "south", http.StatusNotFound, `controller "south"`},
		{"the model's own controller", bobTok, "shop", "east", http.StatusUnprocessableEntity, "model shop is already on controller east"},
		{"a reader of the model", carolTok, "acme/shop", "west", http.StatusForbidden, "needs admin access to model shop"},
		{"no add-model on the target", bobTok, model, "north", http.StatusForbidden, "needs add-model access to controller north"},
		{"no body", bobTok, "", "", http.StatusBadRequest, "must name the model"},
	}
	for _, c := range refusals {
		code, b := migrate(c.tok, c.model, c.target)
		var ae api.Error
		if code != c.code || json.Unmarshal(b, &ae) != nil || !strings.Contains(ae.Message, c.says) {
			t.Errorf("%s: %d %s, want %d saying %q", c.what, code, b, c.code, c.says)
		}
	}
	north.mu.Lock()
	reached := north.calls
	north.mu.Unlock()
	if reached != 0 {
		t.Errorf("a refused request reached a controller")
	}

	// The controllers' prechecks answer at once, in their words; nothing
	// is recorded.
	east.refuse(&api.Error{Code: api.CodeInvalid, Message: "unit web/0 is in error"})
	if code, b := migrate(bobTok, "shop", "west"); code != http.StatusUnprocessableEntity || !strings.Contains(string(b), "unit web/0 is in error") {
		t.Errorf("a unit in error: %d %s, want 422 naming it", code, b)
	}
	east.refuse(nil)
	west.refuse(&api.Error{Code: api.CodeAlreadyExists, Message: "a model named shop exists on controller west"})
	if code, b := migrate(bobTok, "shop", "west"); code != http.StatusConflict || !strings.Contains(string(b), "a model named shop exists") {
		t.Errorf("a name clash on the target: %d %s, want 409 naming it", code, b)
	}
	west.refuse(nil)
	if ms, _ := e.st.Migrations.List(ctx, store.MigrationFilter{}); len(ms) != 0 {
		t.Fatalf("refused migrations were recorded: %+v", ms)
	}

	b := e.want(t, "bob migrates shop to west", http.StatusCreated, bobTok, http.MethodPost, "/v1/migrations",
		api.MigrateRequest{Model: "shop", TargetController: "west"})
	var m api.Migration
	if err := json.Unmarshal(b, &m); err != nil || m.Phase != "PRECHECK" || m.SourceController != "east" ||
		m.TargetController != "west" || m.ModelUUID != model || m.RequestedBy != bob.Name() {
		t.Fatalf("the migration: %s (%v)", b, err)
	}
	if code, b := migrate(bobTok, "shop", "west"); code != http.StatusConflict || !strings.Contains(string(b), m.ID) {
		t.Errorf("a second migration of shop: %d %s, want 409 naming the first", code, b)
	}

	list := func(tok, query string) []api.Migration {
		t.Helper()
		var ms []api.Migration
		if err := json.Unmarshal(e.want(t, "list "+query, http.StatusOK, tok, http.MethodGet, "/v1/migrations?"+query, nil), &ms); err != nil {
			t.Fatal(err)
		}
		return ms
	}
	for query, n := range map[string]int{"": 1, "model=shop": 1, "controller=west": 1, "controller=east": 1,
		"controller=north": 0, "phase=PRECHECK": 1, "phase=done": 0, "active=true": 1} {
		if got := list(bobTok, query); len(got) != n {
			t.Errorf("list %q: %d migrations, want %d", query, len(got), n)
		}
	}
	if got := list(daveTok, ""); len(got) != 0 {
		t.Errorf("dave, who cannot see shop, lists %+v", got)
	}
	e.want(t, "dave reads the migration", http.StatusNotFound, daveTok, http.MethodGet, "/v1/migrations/"+m.ID, nil)
	e.want(t, "carol reads the migration", http.StatusOK, carolTok, http.MethodGet, "/v1/migrations/"+m.ID, nil)
	var evs []api.MigrationEvent
	if err := json.Unmarshal(e.want(t, "events", http.StatusOK, bobTok, http.MethodGet, "/v1/migrations/"+m.ID+"/events", nil), &evs); err != nil ||
		len(evs) == 0 || evs[0].Kind != "phase" || evs[0].Phase != "PRECHECK" {
		t.Errorf("events %+v (%v)", evs, err)
	}
	var shown api.ModelIndex
	if err := json.Unmarshal(e.want(t, "show-model", http.StatusOK, bobTok, http.MethodGet, "/v1/models/"+model, nil), &shown); err != nil ||
		shown.LastMigration == nil || shown.LastMigration.ID != m.ID {
		t.Errorf("show-model's last migration: %+v (%v)", shown.LastMigration, err)
	}

	// Abort: the model's administrators alone, before SUCCESS.
	e.want(t, "carol aborts", http.StatusForbidden, carolTok, http.MethodPost, "/v1/migrations/"+m.ID+"/abort", nil)
	e.want(t, "retry-reap in PRECHECK", http.StatusConflict, bobTok, http.MethodPost, "/v1/migrations/"+m.ID+"/retry-reap", nil)
	if err := json.Unmarshal(e.want(t, "bob aborts", http.StatusOK, bobTok, http.MethodPost, "/v1/migrations/"+m.ID+"/abort", nil), &m); err != nil ||
		!m.AbortRequested {
		t.Errorf("after abort: %+v (%v)", m, err)
	}

	// A migration past SUCCESS is not aborted; one in REAPFAILED is reaped
	// again.
	now := time.Now()
	for _, to := range []migration.Phase{migration.Aborting, migration.Aborted} {
		if _, err := e.st.Migrations.Advance(ctx, m.ID, migration.Phase(m.Phase), to, "", now); err != nil {
			t.Fatal(err)
		}
		m.Phase = string(to)
	}
	if err := json.Unmarshal(e.want(t, "migrate again", http.StatusCreated, bobTok, http.MethodPost, "/v1/migrations",
		api.MigrateRequest{Model: model, TargetController: "west"}), &m); err != nil {
		t.Fatal(err)
	}
	for _, to := range []migration.Phase{migration.Quiesce, migration.Export, migration.Import, migration.Validation, migration.Success} {
		if _, err := e.st.Migrations.Advance(ctx, m.ID, migration.Phase(m.Phase), to, "", now); err != nil {
			t.Fatal(err)
		}
		m.Phase = string(to)
	}
	if code, b := e.do(http.MethodPost, "/v1/migrations/"+m.ID+"/abort", bobTok, nil); code != http.StatusConflict ||
		!strings.Contains(string(b), "cannot be aborted") {
		t.Errorf("abort in SUCCESS: %d %s, want 409", code, b)
	}
	for _, to := range []migration.Phase{migration.LogTransfer, migration.Reap, migration.ReapFailed} {
		if _, err := e.st.Migrations.Advance(ctx, m.ID, migration.Phase(m.Phase), to, "", now); err != nil {
			t.Fatal(err)
		}
		m.Phase = string(to)
	}
	if err := json.Unmarshal(e.want(t, "retry-reap", http.StatusOK, bobTok, http.MethodPost, "/v1/migrations/"+m.ID+"/retry-reap", nil), &m); err != nil ||
		m.Phase != "REAP" {
		t.Errorf("after retry-reap: %+v (%v)", m, err)
	}

	// Every mutating call is audited, every phase change too.
	es, _, err := e.st.Audit.Query(ctx, store.AuditQuery{All: true, ModelUUID: model, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	ops := map[string]int{}
	for _, a := range es {
		ops[a.Operation]++
	}
	if ops["migrate"] < 2 || ops["abort-migration"] < 2 || ops["retry-reap"] < 2 || ops[store.OpMigrationPhase] != 11 {
		t.Errorf("audited operations %v", ops)
	}
}

// TestTheHubDrivesMigrations: the hub runs the driver, which calls the
// controllers with its tokens: a source that does not serve the quiesce
// route aborts the migration, whose abort then removes the import and
// releases the source, and ends ABORTED naming what failed.
func TestTheHubDrivesMigrations(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	bob := e.user("bob", "acme")
	east, west := startPrecheckSpoke(t, e, "east"), startPrecheckSpoke(t, e, "west")
	model := newUUID()
	if err := e.st.Models.Insert(ctx, store.Model{UUID: model, Name: "shop", Org: "acme", Owner: bob.ID, ControllerUUID: east.UUID}); err != nil {
		t.Fatal(err)
	}
	e.grant(authz.UserObject(bob.ID), authz.CanAddModel, authz.ControllerObject(west.UUID))
	e.settle()
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- e.hub.RunMigrations(rctx) }()
	t.Cleanup(func() { cancel(); <-done })
	var m api.Migration
	if err := json.Unmarshal(e.want(t, "migrate", http.StatusCreated, e.token(bob, time.Minute, ""), http.MethodPost, "/v1/migrations",
		api.MigrateRequest{Model: "shop", TargetController: "west"}), &m); err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyWithin(t, 30*time.Second, func() (bool, error) {
		got, err := e.st.Migrations.ByID(ctx, m.ID)
		return got.Phase == migration.Aborted, err
	}, "the migration aborted")
	got, _ := e.st.Migrations.ByID(ctx, m.ID)
	if !strings.Contains(got.Failure, "QUIESCE") || !strings.Contains(got.Failure, "/quiesce") {
		t.Errorf("failure %q, want it to name the quiesce", got.Failure)
	}
	for _, c := range []*precheckSpoke{east, west} {
		c.mu.Lock()
		paths, bearer := c.paths, c.bearer
		c.mu.Unlock()
		if bearer != len(paths) {
			t.Errorf("%s: %d of %d requests carried a bearer token", c.Name, bearer, len(paths))
		}
		want := "/abort-import"
		if c == east {
			want = "/release"
		}
		if !slices.ContainsFunc(paths, func(p string) bool { return strings.HasSuffix(p, want) }) {
			t.Errorf("%s was asked %v, not %s", c.Name, paths, want)
		}
	}
}
