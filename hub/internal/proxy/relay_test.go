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
)

func testRelay(t *testing.T) *Relay {
	t.Helper()
	r, err := New(Config{Logger: slog.New(slog.DiscardHandler), Now: time.Now, RouteTTL: time.Minute, IdleTimeout: time.Minute,
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
	r.Remember(req, "m1", Route{Controller: "east"}, r.Generation(), time.Time{})
	if !r.Remembers("tok", "m1") {
		t.Fatal("a route remembered is not")
	}
	r.Forget()
	if r.Remembers("tok", "m1") {
		t.Fatal("a route outlived Forget")
	}
	gen := r.Generation()
	r.Forget() // a permission changed while the decision was made
	r.Remember(req, "m1", Route{Controller: "east"}, gen, time.Time{})
	if r.Remembers("tok", "m1") {
		t.Fatal("a route decided before a Forget was remembered")
	}
}

func TestNewRefusesAnIncompleteConfig(t *testing.T) {
	if _, err := New(Config{RouteTTL: time.Minute}); err == nil {
		t.Fatal("New accepted a Config without its hooks")
	}
}
