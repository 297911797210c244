package proxy

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/droverhq/drover/authz"
	"github.com/droverhq/drover/hub/internal/authn"
	"github.com/droverhq/drover/hub/internal/store"
)

func testRelay(t *testing.T) *Relay {
	t.Helper()
	r, err := New(Config{Logger: slog.New(slog.DiscardHandler), Now: time.Now, RouteTTL: time.Minute, IdleTimeout: time.Minute, MaxLiveCalls: -1,
		Handler: http.NotFoundHandler(), Count: func(string, int) {},
		Enabled:      func(context.Context, []string) (map[string]bool, error) { return nil, nil },
		Check:        func(context.Context, authn.Principal, authz.Relation, string) (bool, error) { return false, nil },
		SessionsLive: func(context.Context, []string) (map[string]bool, error) { return nil, nil }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(t.Context()) })
	return r
}

// TestRememberedRoutes: the hub's seam for remembered reads. A route is
// remembered for the credential presented, forgotten on Forget, and not
// remembered at all when a Forget came between the decision (Generation)
// and Remember.
func TestRememberedRoutes(t *testing.T) {
	r := testRelay(t)
	req := httptest.NewRequest(http.MethodGet, "/v1/models/m1/status", nil)
	req.Header.Set("Authorization", "Bearer tok")
	if id, ok := Memoizable(req); !ok || id != "m1" {
		t.Fatalf("Memoizable = %q, %v", id, ok)
	}
	r.Remember(req, "m1", Route{Controller: "east"}, "", r.Generation(), time.Time{})
	if !r.Remembers("tok", "m1") {
		t.Fatal("a route remembered is not")
	}
	r.Forget()
	if r.Remembers("tok", "m1") {
		t.Fatal("a route outlived Forget")
	}
	gen := r.Generation()
	r.Forget() // a permission changed while the decision was made
	r.Remember(req, "m1", Route{Controller: "east"}, "", gen, time.Time{})
	if r.Remembers("tok", "m1") {
		t.Fatal("a route decided before a Forget was remembered")
	}
}

// TestEndSession: a session's end drops the routes remembered for its
// tokens and ends the long-lived calls opened with them, and leaves every
// other session's; a route decided while it ended is not remembered.
func TestEndSession(t *testing.T) {
	r := testRelay(t)
	read := func(tok string) *http.Request {
		req := httptest.NewRequest(http.MethodGet, "/v1/models/m1/status", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		return req
	}
	r.Remember(read("tok-a"), "m1", Route{Controller: "east"}, "sid-a", r.Generation(), time.Time{})
	r.Remember(read("tok-b"), "m1", Route{Controller: "east"}, "sid-b", r.Generation(), time.Time{})
	watch := func(sid string) (context.Context, func()) {
		p := authn.Principal{Identity: store.Identity{ID: "id-" + sid}, SID: sid}
		tracked, done, err := r.Track(httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/v1/models/m1/watch", nil), p, authz.Reader, "m1")
		if err != nil {
			t.Fatal(err)
		}
		return tracked.Context(), done
	}
	a, doneA := watch("sid-a")
	defer doneA()
	b, doneB := watch("sid-b")
	defer doneB()
	gen := r.Generation() // a read of a's being decided

	r.EndSession("sid-a")
	if r.Remembers("tok-a", "m1") {
		t.Error("the ended session's route is still remembered")
	}
	if !r.Remembers("tok-b", "m1") {
		t.Error("another session's route was dropped")
	}
	if a.Err() == nil {
		t.Error("the ended session's watch goes on")
	}
	if b.Err() != nil {
		t.Error("another session's watch ended")
	}
	r.Remember(read("tok-a"), "m1", Route{Controller: "east"}, "sid-a", gen, time.Time{})
	if r.Remembers("tok-a", "m1") {
		t.Error("a route decided while its session ended was remembered")
	}
}

func TestNewRefusesAnIncompleteConfig(t *testing.T) {
	if _, err := New(Config{RouteTTL: time.Minute}); err == nil {
		t.Fatal("New accepted a Config without its hooks")
	}
}
