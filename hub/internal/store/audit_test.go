package store_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/droverhq/drover/hub/internal/store"
)

// TestAuditNamesModels: an audit entry carries its model's name as it is
// now, and none once the model is gone from the index.
func TestAuditNamesModels(t *testing.T) {
	f := newAdoptFixture(t)
	ctx := t.Context()
	live, gone := uuid.NewString(), uuid.NewString()
	if err := f.s.Models.Insert(ctx, store.Model{UUID: live, Name: "prod", Org: "acme", Owner: f.bob.ID, ControllerUUID: f.ctrl, Status: "active"}); err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{live, gone} {
		if err := f.s.Audit.Append(ctx, store.AuditEntry{At: time.Now(), Org: "acme", Operation: "deploy", ModelUUID: m, Result: store.ResultOK}); err != nil {
			t.Fatal(err)
		}
	}
	es, _, err := f.s.Audit.Query(ctx, store.AuditQuery{All: true, Operation: "deploy", Limit: 10})
	if err != nil || len(es) != 2 {
		t.Fatalf("audit: %+v %v", es, err)
	}
	names := map[string]string{es[0].ModelUUID: es[0].Model, es[1].ModelUUID: es[1].Model}
	if names[live] != "prod" || names[gone] != "" {
		t.Errorf("model names in the audit: %v, want prod for %s and none for %s", names, live, gone)
	}
}

// TestAuditOperationFamilies: operation= matches the operation named, and
// the family it is the first word of; LIKE's wildcards in it are literal.
func TestAuditOperationFamilies(t *testing.T) {
	s, _ := newStore(t)
	ctx := t.Context()
	for _, op := range []string{"login-device", "login-client-credentials", "login", "loginx", "add-model", "add_model", "deploy",
		store.OpModelAdopted, store.OpModelForgotten, store.OpControllerRewound, "model POST things/{id}/new"} {
		if err := s.Audit.Append(ctx, store.AuditEntry{At: time.Now(), Org: "a", Operation: op, Result: store.ResultOK}); err != nil {
			t.Fatal(err)
		}
	}
	for q, want := range map[string][]string{
		"login":        {"login", "login-client-credentials", "login-device"},
		"login-device": {"login-device"},
		"add":          {"add-model"},
		"add_model":    {"add_model"},
		// The hub's own index changes are named in words.
		"model":              {"model POST things/{id}/new", store.OpModelAdopted, store.OpModelForgotten},
		"controller":         {store.OpControllerRewound},
		"controller rewound": {store.OpControllerRewound},
		"%":                  nil,
		"log":                nil,
	} {
		es, _, err := s.Audit.Query(ctx, store.AuditQuery{All: true, Operation: q, Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range es {
			got = append(got, e.Operation)
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("operation=%q matched %q, want %q", q, got, want)
		}
	}
}

// TestAuditBeginAndFinish: an entry written before its request is served
// reads "pending" until it is finished, once, with the request's result;
// it keeps the time, actor and address it was begun with.
func TestAuditBeginAndFinish(t *testing.T) {
	f := newAdoptFixture(t)
	ctx := t.Context()
	m := uuid.NewString()
	if err := f.s.Models.Insert(ctx, store.Model{UUID: m, Name: "prod", Org: "acme", Owner: f.bob.ID, ControllerUUID: f.ctrl, Status: "active"}); err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(-time.Minute).Truncate(time.Microsecond)
	id, err := f.s.Audit.Begin(ctx, store.AuditEntry{At: at, IdentityID: f.bob.ID, Actor: "bob", Org: "acme",
		Operation: "PATCH /v1/models/" + m + "/config", Method: "PATCH", Path: "/v1/models/" + m + "/config", RemoteAddr: "127.0.0.1:5"})
	if err != nil {
		t.Fatal(err)
	}
	read := func() store.AuditEntry {
		t.Helper()
		es, _, err := f.s.Audit.Query(ctx, store.AuditQuery{All: true, Limit: 10})
		if err != nil || len(es) != 1 || es[0].ID != id {
			t.Fatalf("audit: %+v %v", es, err)
		}
		return es[0]
	}
	if e := read(); e.Result != store.ResultPending || e.Status != 0 || e.Actor != "bob" {
		t.Errorf("a begun entry: %+v, want pending", e)
	}
	done := store.AuditEntry{Org: "acme", Operation: "model-config", ModelUUID: m, ControllerUUID: f.ctrl, Status: 200,
		Result: store.ResultOK, Details: map[string]any{"body": map[string]any{"set": "x"}}}
	if err := f.s.Audit.Finish(ctx, id, done); err != nil {
		t.Fatal(err)
	}
	e := read()
	if e.Result != store.ResultOK || e.Status != 200 || e.Operation != "model-config" || e.Model != "prod" ||
		!e.At.Equal(at) || e.Actor != "bob" || e.RemoteAddr != "127.0.0.1:5" || e.Details["body"] == nil {
		t.Errorf("a finished entry: %+v", e)
	}
	if err := f.s.Audit.Finish(ctx, id, done); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("finishing an entry twice: %v, want not found", err)
	}
}

// TestAuditRecordsAnyText: an entry whose request carried text PostgreSQL
// cannot store (NUL, invalid UTF-8) in its path or body is still written,
// with U+FFFD in its place; the append used to fail, and the request went
// unrecorded.
func TestAuditRecordsAnyText(t *testing.T) {
	s, _ := newStore(t)
	ctx := t.Context()
	bad := "nul\x00and\xffbyte"
	id, err := s.Audit.Begin(ctx, store.AuditEntry{At: time.Now(), Org: "a", Operation: "POST /v1/grants/" + bad, Method: "POST", Path: "/v1/grants/" + bad,
		Details: map[string]any{"body": map[string]any{"user": bad, bad: []any{bad, 1.5}}}})
	if err != nil {
		t.Fatalf("begin: %v", err)
	}
	if err := s.Audit.Finish(ctx, id, store.AuditEntry{Org: "a", Operation: "grant", Status: 400, Result: store.ResultError,
		Details: map[string]any{"target": bad}}); err != nil {
		t.Fatalf("finish: %v", err)
	}
	es, _, err := s.Audit.Query(ctx, store.AuditQuery{All: true, Limit: 10})
	const clean = "nul\uFFFDand\uFFFDbyte"
	if err != nil || len(es) != 1 || es[0].Path != "/v1/grants/"+clean || es[0].Details["target"] != clean {
		t.Fatalf("audit: %+v %v", es, err)
	}
}
