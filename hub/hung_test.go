package hub_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/droverhq/drover/authz"
	"github.com/droverhq/drover/hub"
	"github.com/droverhq/drover/hub/internal/hubtest"
	"github.com/droverhq/drover/tests/testkit"
)

// TestHungDatabase: with its database hung (a stalled disk, a stopped
// server: connections open, nothing answered), the hub answers in bounded
// time that its database is unavailable, rather than keeping every request
// waiting until its caller gives up (30 s for drover, told only that it
// could not reach the hub); once the database answers again, so does the
// hub.
func TestHungDatabase(t *testing.T) {
	dsn := hubtest.DSN(t)
	u, _ := url.Parse(dsn)
	p := testkit.NewFaultProxy(t, "unix", filepath.Join(u.Query().Get("host"), ".s.PGSQL."+strconv.Itoa(5432)))
	e := newEnvOn(t, p.DSNThrough(t, dsn), func(c *hub.Config) { c.DatabaseTimeout = time.Second })
	// Unbounded, a request would wait for the database: it gives up in
	// 30 s, as drover does, and the test fails.
	e.client = &http.Client{Timeout: 30 * time.Second}
	t.Cleanup(func() { p.Stall(false) }) // before the hub's cleanup, which would wait on a stalled database
	bob := e.token(e.user("bob", "acme"), 5*time.Minute, "")
	e.want(t, "models", http.StatusOK, bob, http.MethodGet, "/v1/models", nil)

	p.Stall(true)
	for _, r := range []struct{ method, path string }{
		{http.MethodGet, "/v1/models"},
		{http.MethodPost, "/v1/groups"}, // a change: its audit entry comes first
	} {
		code, b := e.do(r.method, r.path, bob, map[string]string{"org": "acme", "name": "ops"})
		wantUnavailable(t, r.method+" "+r.path+" with the database hung", code, b,
			"the hub's database is unavailable (try again shortly; if this lasts, the hub's operator checks its PostgreSQL server)")
	}
	p.Stall(false)
	e.servesAgain(bob, "once its database answers again")
}

// wantUnavailable checks that an answer is the hub's 503 saying msg.
func wantUnavailable(t *testing.T, what string, code int, b []byte, msg string) {
	t.Helper()
	var ae struct{ Code, Message string }
	if err := json.Unmarshal(b, &ae); err != nil || code != http.StatusServiceUnavailable || ae.Code != "unavailable" || ae.Message != msg {
		t.Errorf("%s: %d %s, want 503 %q", what, code, b, msg)
	}
}

// servesAgain waits until the hub lists models for tok again.
func (e *env) servesAgain(tok, when string) {
	e.t.Helper()
	testkit.EventuallyWithin(e.t, 30*time.Second, func() (bool, error) {
		code, _ := e.do(http.MethodGet, "/v1/models", tok, nil)
		return code == http.StatusOK, nil
	}, "the hub serving %s", when)
}

// TestHungPermissionService: with OpenFGA hung, a request that needs a
// decision not cached is answered in bounded time that the permission
// service is unavailable (each request to it is bounded by
// Config.OpenFGATimeout), rather than waiting as long as OpenFGA does.
func TestHungPermissionService(t *testing.T) {
	fga, err := url.Parse(hubtest.OpenFGAURL())
	if err != nil {
		t.Fatal(err)
	}
	p := testkit.NewFaultProxy(t, "tcp", fga.Host)
	e := newEnv(t, func(c *hub.Config) {
		c.OpenFGAURL = "http://" + p.Addr()
		c.OpenFGATimeout = time.Second
	})
	e.client = &http.Client{Timeout: 30 * time.Second} // unbounded, the test fails here
	t.Cleanup(func() { p.Stall(false) })
	bob := e.token(e.user("bob", "acme"), 5*time.Minute, "")
	e.want(t, "models", http.StatusOK, bob, http.MethodGet, "/v1/models", nil)

	p.Stall(true)
	carol := e.token(e.user("carol", "acme"), 5*time.Minute, "") // no decision cached
	code, b := e.do(http.MethodGet, "/v1/models", carol, nil)
	wantUnavailable(t, "models with OpenFGA hung", code, b,
		"the hub cannot reach its permission service (try again shortly; if this lasts, the hub's operator checks OpenFGA)")
	p.Stall(false)
	e.servesAgain(carol, "once OpenFGA answers again")
}

// TestHungIdentityProvider: a login while the OIDC issuer takes requests
// and answers nothing is answered, in bounded time, that the hub cannot
// reach its identity provider; the hub's client for it had a 30 s bound,
// the time drover waits, so drover said it could not reach the hub.
func TestHungIdentityProvider(t *testing.T) {
	idpNet := &switchedTransport{}
	e := newEnv(t, func(c *hub.Config) {
		c.OIDCHTTPClient = &http.Client{Transport: idpNet} // no Timeout of its own
		hub.SetOIDCTimeout(c, 500*time.Millisecond)
	})
	idpNet.hung.Store(true)
	hc := &http.Client{Timeout: 30 * time.Second} // unbounded, the test fails here
	resp, err := hc.PostForm(e.url+"/v1/auth/token",
		url.Values{"grant_type": {"client_credentials"}, "client_id": {saAcme.ID}, "client_secret": {saAcme.Secret}})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct{ Code, Message string }
	_ = json.NewDecoder(resp.Body).Decode(&body)
	if resp.StatusCode != http.StatusServiceUnavailable ||
		body.Message != "the hub cannot reach its identity provider (try again shortly; if this lasts, the hub's operator checks the OIDC issuer)" {
		t.Errorf("a service account's login with the issuer hung: %d %+v", resp.StatusCode, body)
	}
}

// TestReadOnlyDatabase: a database that takes no writes (the hub pointed at
// a standby, a primary being failed over) still serves reads; a change is
// refused as the database being unavailable, which clients retry, where it
// was a 500 "internal error".
func TestReadOnlyDatabase(t *testing.T) {
	dsn := hubtest.DSN(t)
	e := newEnvOn(t, dsn)
	alice := e.user("alice", "acme")
	e.grant(authz.UserObject(alice.ID), authz.Administrator, authz.OrgObject("acme"))
	e.settle()
	tok := e.token(alice, 5*time.Minute, "")
	u, _ := url.Parse(dsn)
	readOnly := func(on bool) {
		t.Helper()
		pg, db := hubtest.Postgres(), pgx.Identifier{strings.TrimPrefix(u.Path, "/")}.Sanitize()
		stmt := "ALTER DATABASE " + db + " RESET default_transaction_read_only"
		if on {
			stmt = "ALTER DATABASE " + db + " SET default_transaction_read_only = on"
		}
		if err := pg.Exec(t.Context(), "postgres", stmt); err != nil {
			t.Fatal(err)
		}
		// Sessions take the setting when they start.
		if err := pg.Exec(t.Context(), "postgres", "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1",
			strings.TrimPrefix(u.Path, "/")); err != nil {
			t.Fatal(err)
		}
	}
	readOnly(true)
	e.servesAgain(tok, "reads from a read-only database")
	code, b := e.do(http.MethodPost, "/v1/groups", tok, map[string]string{"org": "acme", "name": "ops"})
	wantUnavailable(t, "a change while the database takes no writes", code, b,
		"the hub's database is unavailable (try again shortly; if this lasts, the hub's operator checks its PostgreSQL server)")
	readOnly(false)
	testkit.EventuallyWithin(t, 30*time.Second, func() (bool, error) {
		code, _ := e.do(http.MethodPost, "/v1/groups", tok, map[string]string{"org": "acme", "name": "ops"})
		return code == http.StatusCreated || code == http.StatusOK, nil
	}, "changes served once the database takes writes again")
}
