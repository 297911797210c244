package hub_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/droverhq/drover/hub"
	"github.com/droverhq/drover/hub/internal/hubtest"
	"github.com/droverhq/drover/tests/testkit"
)

// unstarted builds a hub replica with cfg and serves its routes, but runs
// none of its workers: the test starts the outbox when it chooses.
func unstarted(t *testing.T, cfg hub.Config) (*env, func()) {
	t.Helper()
	cfg.StateDir = t.TempDir()
	s, err := hub.New(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	e := &env{t: t, hub: s, st: s.Store(), url: srv.URL, cfg: cfg}
	return e, func() {
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- s.Outbox().Run(ctx) }()
		t.Cleanup(func() { cancel(); <-done })
	}
}

// TestPermissionsRestoredAtStart: a hub whose OpenFGA lost its tuples (an
// OpenFGA in memory restarted, a new store) answers 503 until the outbox
// has given them back from PostgreSQL, instead of denying what the
// database grants and listing too few models; a hub whose OpenFGA kept
// them serves at once.
func TestPermissionsRestoredAtStart(t *testing.T) {
	f := newFixture(t)
	alice := f.token(f.alice, 5*time.Minute, "")
	want := f.listed(f.alice)
	if !slices.Contains(want, "prod") {
		t.Fatalf("alice lists %v, want her organization's model prod", want)
	}

	// OpenFGA kept the tuples: no wait.
	kept, _ := unstarted(t, f.cfg)
	if code, b := kept.do(http.MethodGet, "/readyz", "", nil); code != http.StatusOK {
		t.Errorf("readyz of a hub whose OpenFGA kept its tuples: %d %s", code, b)
	}
	if got := kept.listed(f.alice); !slices.Equal(got, want) {
		t.Errorf("a hub whose OpenFGA kept its tuples lists %v, want %v", got, want)
	}

	// OpenFGA lost them (a new store): 503 until they are back.
	cfg := f.cfg
	cfg.OpenFGAStore = hubtest.StoreName()
	lost, startOutbox := unstarted(t, cfg)
	for _, path := range []string{"/v1/models", "/v1/models/" + f.model.UUID + "/status"} {
		code, b := lost.do(http.MethodGet, path, alice, nil)
		var ae struct{ Code, Message string }
		if err := json.Unmarshal(b, &ae); err != nil || code != http.StatusServiceUnavailable || ae.Code != "unavailable" ||
			ae.Message != "the hub is restoring its permission service's tuples from its database after a start "+
				"(try again shortly; 'drover controllers' works again once it is done)" {
			t.Errorf("GET %s while OpenFGA lacks the tuples: %d %s", path, code, b)
		}
	}
	if code, b := lost.do(http.MethodGet, "/readyz", "", nil); code != http.StatusServiceUnavailable || !json.Valid(b) ||
		string(b) != `{"status":"restoring permissions"}`+"\n" {
		t.Errorf("readyz while OpenFGA lacks the tuples: %d %q", code, b)
	}
	startOutbox()
	testkit.EventuallyWithin(t, time.Minute, func() (bool, error) {
		code, _ := lost.do(http.MethodGet, "/readyz", "", nil)
		return code == http.StatusOK, nil
	}, "the hub ready once the tuples are restored")
	if got := lost.listed(f.alice); !slices.Equal(got, want) {
		t.Errorf("once restored, alice lists %v, want %v", got, want)
	}
}

// TestRestoreIsBounded: a restore that cannot finish (here, no outbox
// delivers anything) keeps the API answering 503 only so long.
func TestRestoreIsBounded(t *testing.T) {
	f := newFixture(t)
	cfg := f.cfg
	hub.SetRestoreLimit(&cfg, 300*time.Millisecond)
	cfg.OpenFGAStore = hubtest.StoreName()
	lost, _ := unstarted(t, cfg) // its outbox never runs
	if code, _ := lost.do(http.MethodGet, "/readyz", "", nil); code != http.StatusServiceUnavailable {
		t.Fatalf("readyz at start while OpenFGA lacks the tuples: %d", code)
	}
	testkit.EventuallyWithin(t, 30*time.Second, func() (bool, error) {
		code, _ := lost.do(http.MethodGet, "/readyz", "", nil)
		return code == http.StatusOK, nil
	}, "the API served once the restore's limit has passed")
}
