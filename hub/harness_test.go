package hub_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/droverhq/drover/authz"
	"github.com/droverhq/drover/hub"
	"github.com/droverhq/drover/hub/devidp"
	"github.com/droverhq/drover/hub/internal/hubtest"
	"github.com/droverhq/drover/hub/internal/store"
	"github.com/droverhq/drover/tests/testkit"
)

const publicURL = "https://hub.test"

type env struct {
	t   *testing.T
	hub *hub.Server
	st  *store.Store
	url string
	// client reaches url (default http.DefaultClient).
	client *http.Client
	cfg    hub.Config
}

// newEnv starts a hub on a fresh database and OpenFGA store, with its
// outbox worker running, served over plain HTTP by httptest.
func newEnv(t *testing.T, opts ...func(*hub.Config)) *env {
	t.Helper()
	return newEnvOn(t, hubtest.DSN(t), opts...)
}

// newEnvOn is newEnv on the migrated database dsn; opts change the hub's
// configuration.
func newEnvOn(t *testing.T, dsn string, opts ...func(*hub.Config)) *env {
	t.Helper()
	cfg := hub.Config{DSN: dsn, OpenFGAURL: hubtest.OpenFGAURL(), OpenFGAStore: hubtest.StoreName(),
		OIDCIssuer: idp.URL(), OIDCClientID: devidp.HubClientID, Listen: "127.0.0.1:0", PublicURL: publicURL,
		StateDir: t.TempDir(), DefaultOrg: "acme", Logger: testLogger(t),
		ServiceAccounts: []hub.ServiceAccount{{ClientID: saAcme.ID, Org: "acme"}, {ClientID: saGlobex.ID, Org: "globex"}}}
	for _, o := range opts {
		o(&cfg)
	}
	return serveHub(t, cfg)
}

// serveHub starts a hub replica with cfg, its outbox worker, its
// listener for other replicas' permission changes and its federation
// stream's worker running, served over
// plain HTTP by httptest.
func serveHub(t *testing.T, cfg hub.Config) *env {
	t.Helper()
	s, err := hub.New(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 3)
	go func() { done <- s.Outbox().Run(ctx) }()
	go func() { done <- s.FollowAuthz(ctx) }()
	go func() { done <- s.RunFederation(ctx) }()
	srv := httptest.NewServer(s.Handler())
	go srv.Config.Serve(s.HandbackListener())
	t.Cleanup(func() { srv.Close(); cancel(); <-done; <-done; <-done })
	return &env{t: t, hub: s, st: s.Store(), url: srv.URL, cfg: cfg}
}

// replica starts another hub replica on e's database and OpenFGA store.
func (e *env) replica() *env {
	e.t.Helper()
	cfg := e.cfg
	cfg.StateDir = e.t.TempDir()
	return serveHub(e.t, cfg)
}

// user creates (logs in) a person in org.
func (e *env) user(name, org string) store.Identity {
	e.t.Helper()
	id, _, err := e.st.Identities.Login(e.t.Context(), store.Identity{Issuer: idp.URL(), Subject: name, Email: name + "@example.com"}, org, time.Now())
	if err != nil {
		e.t.Fatal(err)
	}
	return id
}

// hubAdmin logs in a person ("root" in acme) made administrator of the
// hub, and returns a token of theirs.
func (e *env) hubAdmin() string {
	e.t.Helper()
	root := e.user("root", "acme")
	e.grant(authz.UserObject(root.ID), authz.Administrator, authz.HubObject())
	e.settle()
	return e.token(root, 5*time.Minute, "")
}

func (e *env) grant(user string, rel authz.Relation, object string) {
	e.t.Helper()
	if err := e.st.Grants.Add(e.t.Context(), authz.Tuple{User: user, Relation: rel, Object: object}); err != nil {
		e.t.Fatal(err)
	}
	e.hub.Outbox().Kick()
}

// settle waits until the outbox has delivered everything to OpenFGA.
func (e *env) settle() {
	e.t.Helper()
	e.hub.Outbox().Kick()
	testkit.Eventually(e.t.Context(), e.t, func() (bool, error) {
		p, err := e.st.Outbox.Pending(e.t.Context(), 1)
		return len(p) == 0, err
	}, "authz outbox drained")
}

func (e *env) token(id store.Identity, ttl time.Duration, aud string) string {
	e.t.Helper()
	tok, err := e.hub.MintAccessToken(id, ttl, aud)
	if err != nil {
		e.t.Fatal(err)
	}
	return tok
}

// addModel adds a model named name in region through the hub as the
// holder of tok, and returns its UUID.
func (e *env) addModel(tok, name, region string) string {
	e.t.Helper()
	code, b := e.do(http.MethodPost, "/v1/models", tok, map[string]string{"name": name, "region": region})
	var m struct{ UUID string }
	if code != http.StatusCreated || json.Unmarshal(b, &m) != nil || m.UUID == "" {
		e.t.Fatalf("add model %s: %d %s", name, code, b)
	}
	return m.UUID
}

// want sends a request as do does and ends the test unless it is answered
// with code; it returns the answer's body.
func (e *env) want(t *testing.T, what string, code int, token, method, path string, body any) []byte {
	t.Helper()
	got, b := e.do(method, path, token, body)
	if got != code {
		t.Fatalf("%s: %d %s, want %d", what, got, b, code)
	}
	return b
}

// do sends a request with an optional bearer token and body (JSON, or a
// []byte sent as a zip archive), and returns the status and body.
func (e *env) do(method, path, token string, body any) (int, []byte) {
	e.t.Helper()
	if token != "" {
		token = "Bearer " + token
	}
	return e.doAuth(method, path, token, body)
}

// doAuth is do with the request's Authorization header (none if empty).
func (e *env) doAuth(method, path, authorization string, body any) (int, []byte) {
	e.t.Helper()
	var rd io.Reader
	ctype := "application/json"
	switch b := body.(type) {
	case nil:
	case []byte:
		rd, ctype = bytes.NewReader(b), "application/zip"
	default:
		j, _ := json.Marshal(b)
		rd = bytes.NewReader(j)
	}
	req, _ := http.NewRequestWithContext(e.t.Context(), method, e.url+path, rd)
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	if body != nil {
		req.Header.Set("Content-Type", ctype)
	}
	hc := e.client
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// testLogger sends the hub's log to the test's when HUB_TEST_LOG is set
// (debugging); nil (discard) otherwise.
func testLogger(t *testing.T) *slog.Logger {
	if os.Getenv("HUB_TEST_LOG") == "" {
		return nil
	}
	return slog.New(slog.NewTextHandler(tlogW{t}, nil))
}

type tlogW struct{ t *testing.T }

func (w tlogW) Write(b []byte) (int, error) { w.t.Log(string(b)); return len(b), nil }

// serveUntilReady runs serve until the test ends and waits for ready to
// close. At the end it cancels serve, reports the error serve returned
// (strict: any error; otherwise only one from before the cancel), then
// runs after.
func serveUntilReady(t *testing.T, what string, ready <-chan struct{}, serve func(context.Context) error, strict bool, after func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && (strict || ctx.Err() == nil) {
			t.Errorf("%s: %v", what, err)
		}
		if after != nil {
			after()
		}
	})
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("%s stopped: %v", what, err)
	}
}
