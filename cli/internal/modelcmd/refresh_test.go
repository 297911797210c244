package modelcmd_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/droverhq/drover/cli/internal/clientstore"
	"github.com/droverhq/drover/cli/internal/modelcmd"
	"github.com/droverhq/drover/cli/internal/modelcmd/modelcmdtest"
)

// fakeJWT is a token the client can read the expiry of (the signature is
// the hub's business).
func fakeJWT(n int, exp time.Time) string {
	payload, _ := json.Marshal(map[string]any{"exp": exp.Unix(), "n": n})
	return "e30." + base64.RawURLEncoding.EncodeToString(payload) + ".sig"
}

// TestRefreshSharedWithOtherProcesses: drover processes sharing a client
// store renew one hub session without spending each other's refresh
// tokens (the hub rotates them: only the latest works). A process whose
// session another renewed since it loaded the store takes that renewal;
// once that has expired too, it renews with the latest refresh token. A
// session the store no longer holds (logout, or a login as someone else)
// is renewed for the process alone and the store is left as it is.
func TestRefreshSharedWithOtherProcesses(t *testing.T) {
	hub := &rotatingHub{live: map[string]bool{"r0": true, "rb": true}}
	mux := http.NewServeMux()
	mux.Handle("POST /v1/auth/token", hub)
	a, _, _ := modelcmdtest.AtFakeHub(t, mux)
	dir, err := clientstore.DefaultStoreDir(a.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	st := &clientstore.Store{Dir: dir}
	expired := fakeJWT(0, time.Now().Add(-time.Minute))
	setStored := func(acct clientstore.Account) {
		t.Helper()
		if err := st.Update(func(s *clientstore.State) error { s.Accounts["hub"] = &acct; return nil }); err != nil {
			t.Fatal(err)
		}
	}
	load := func() (*clientstore.ControllerDetails, *clientstore.Account) {
		t.Helper()
		s, err := st.Load()
		if err != nil {
			t.Fatal(err)
		}
		return s.Controllers["hub"], s.Accounts["hub"]
	}
	setStored(clientstore.Account{User: "alice@example.com", Token: expired, RefreshToken: "r0"})
	d, procA := load()
	_, procB := load() // both loaded before either renewed

	tokA, err := modelcmd.RefreshHubSession(t.Context(), "hub", d, procA)
	if err != nil {
		t.Fatalf("first renewal: %v", err)
	}
	tokB, err := modelcmd.RefreshHubSession(t.Context(), "hub", d, procB)
	if err != nil || tokB != tokA || procB.RefreshToken != "r1" || hub.renewals() != 1 {
		t.Fatalf("the second process: %q, %v, refresh token %q, %d renewals; want A's token, r1, 1", tokB, err, procB.RefreshToken, hub.renewals())
	}
	if _, stored := load(); stored.Token != tokA || stored.RefreshToken != "r1" {
		t.Fatalf("stored %+v, want the renewal", stored)
	}

	// Later the renewal in the store has expired too when C, which loaded
	// the store before it, renews: C renews with the store's refresh token.
	setStored(clientstore.Account{User: "alice@example.com", Token: fakeJWT(1, time.Now().Add(-time.Second)), RefreshToken: "r1"})
	_, procC := load()
	procC.Token, procC.RefreshToken = expired, "r0" // what it loaded back then
	if _, err := modelcmd.RefreshHubSession(t.Context(), "hub", d, procC); err != nil || procC.RefreshToken != "r2" || hub.renewals() != 2 {
		t.Fatalf("a process behind an expired renewal: %v, refresh token %q, %d renewals; want r2, 2", err, procC.RefreshToken, hub.renewals())
	}
	if _, stored := load(); stored.RefreshToken != "r2" {
		t.Fatalf("stored refresh token %q, want r2", stored.RefreshToken)
	}

	// Someone else logged in meanwhile: C's session is renewed for C, and
	// the store keeps bob's.
	bob := clientstore.Account{User: "bob@example.com", Token: fakeJWT(99, time.Now().Add(time.Hour)), RefreshToken: "rb"}
	setStored(bob)
	procC.Token = fakeJWT(2, time.Now().Add(-time.Second))
	if _, err := modelcmd.RefreshHubSession(t.Context(), "hub", d, procC); err != nil || procC.RefreshToken != "r3" {
		t.Fatalf("renewing after another login: %v, refresh token %q", err, procC.RefreshToken)
	}
	if _, stored := load(); *stored != (clientstore.Account{User: bob.User, Token: bob.Token, RefreshToken: "rb", Store: stored.Store}) {
		t.Fatalf("the store's account became %+v, want bob's", stored)
	}

	// Logged out: nothing to take from the store, and a spent refresh
	// token is refused with what to do.
	setStored(clientstore.Account{User: "alice@example.com"})
	procA.Token = expired
	if _, err := modelcmd.RefreshHubSession(t.Context(), "hub", d, procA); err == nil || !strings.Contains(err.Error(), "run 'drover login' again") {
		t.Fatalf("renewing a spent session after logout: %v", err)
	}
	if _, stored := load(); stored.Token != "" || stored.RefreshToken != "" {
		t.Fatalf("logout undone: %+v", stored)
	}
}

// rotatingHub is a hub's token endpoint that rotates refresh tokens as
// the hub does: each live token works once, and renewal n answers r<n>
// with an access token for 15 minutes.
type rotatingHub struct {
	mu   sync.Mutex
	live map[string]bool // refresh tokens not spent
	n    int             // renewals so far
}

func (h *rotatingHub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm()
	h.mu.Lock()
	defer h.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	rt := r.Form.Get("refresh_token")
	if r.Form.Get("grant_type") != "refresh_token" || !h.live[rt] {
		w.WriteHeader(http.StatusBadRequest)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": "invalid_grant"})
		return
	}
	delete(h.live, rt)
	h.n++
	next := fmt.Sprintf("r%d", h.n)
	h.live[next] = true
	_ = json.NewEncoder(w).Encode(map[string]any{"access_token": fakeJWT(h.n, time.Now().Add(15*time.Minute)),
		"refresh_token": next, "expires_in": 900})
}

// renewals is how many renewals the hub granted.
func (h *rotatingHub) renewals() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n
}

// TestServiceAccountProcessesEndWithLogout: a service account renews its
// session with its client secret, which logging out cannot revoke at the
// issuer; a process of it (a long status --watch) therefore stops renewing
// once the store no longer holds its session: after 'drover logout', and
// after a login as someone else.
func TestServiceAccountProcessesEndWithLogout(t *testing.T) {
	var logins atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/auth/token", func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		w.Header().Set("Content-Type", "application/json")
		if r.Form.Get("grant_type") != "client_credentials" {
			w.WriteHeader(http.StatusBadRequest)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": "unsupported_grant_type"})
			return
		}
		n := int(logins.Add(1))
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": fakeJWT(n, time.Now().Add(15*time.Minute)), "expires_in": 900})
	})
	a, _, _ := modelcmdtest.AtFakeHub(t, mux)
	dir, err := clientstore.DefaultStoreDir(a.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	st := &clientstore.Store{Dir: dir}
	ci := clientstore.Account{User: "ci", ClientID: "ci", ClientSecret: "s3cret", Token: fakeJWT(0, time.Now().Add(-time.Minute))}
	set := func(acct clientstore.Account) {
		t.Helper()
		if err := st.Update(func(s *clientstore.State) error { s.Accounts["hub"] = &acct; return nil }); err != nil {
			t.Fatal(err)
		}
	}
	set(ci)
	s, err := st.Load()
	if err != nil {
		t.Fatal(err)
	}
	d, proc := s.Controllers["hub"], s.Accounts["hub"]
	if _, err := modelcmd.RefreshHubSession(t.Context(), "hub", d, proc); err != nil || logins.Load() != 1 {
		t.Fatalf("renewing while logged in: %v (%d logins)", err, logins.Load())
	}
	for what, stored := range map[string]clientstore.Account{
		"after logout":             {User: "ci", ClientID: "ci"},
		"after another login":      {User: "alice@example.com", Token: fakeJWT(50, time.Now().Add(time.Hour)), RefreshToken: "ra"},
		"after another SA's login": {User: "ci-other", ClientID: "ci-other", ClientSecret: "x", Token: fakeJWT(60, time.Now().Add(time.Hour))},
	} {
		set(stored)
		proc.Token = fakeJWT(0, time.Now().Add(-time.Minute))
		before := logins.Load()
		_, err := modelcmd.RefreshHubSession(t.Context(), "hub", d, proc)
		if err == nil || !strings.Contains(err.Error(), "service account ci is no longer logged in to hub \"hub\"; run 'drover login' again") ||
			logins.Load() != before {
			t.Errorf("%s: renewal %v (%d logins before, %d after)", what, err, before, logins.Load())
		}
	}
}

func TestTokenExpired(t *testing.T) {
	now := time.Now()
	for _, c := range []struct {
		tok  string
		want bool
	}{
		{fakeJWT(0, now.Add(time.Minute)), false},
		{fakeJWT(0, now.Add(5*time.Second)), true}, // within the margin
		{fakeJWT(0, now.Add(-time.Minute)), true},
		{"e30.e30.sig", true}, // no exp
		{"not a jwt", true},
		{"a.!!!.c", true},
	} {
		if got := modelcmd.TokenExpired(c.tok, now); got != c.want {
			t.Errorf("modelcmd.TokenExpired(%q) = %v, want %v", c.tok, got, c.want)
		}
	}
}
