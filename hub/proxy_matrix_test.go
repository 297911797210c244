package hub_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/authz"
	"github.com/droverhq/drover/charm"
	"github.com/droverhq/drover/hub"
	"github.com/droverhq/drover/hub/internal/store"
	"github.com/droverhq/drover/spoke"
	"github.com/droverhq/drover/tests/testkit"
)

// proxyFixture is a hub with one real spoke registered (it trusts the
// hub) and one model on it owned by alice (acme); rita reads it, will
// writes it, olga administers another tenant.
type proxyFixture struct {
	*env
	alice, rita, will, olga store.Identity
	model                   string
	charmSHA                string
}

// testSpoke is an in-process controller registered with the test hub.
type testSpoke struct {
	UUID string
	// Admin is the controller's local administrator (HTTP Basic auth):
	// what `drover` uses against the controller directly, bypassing the hub.
	Admin *api.Client
}

// startSpoke runs an in-process controller "east" that trusts the test hub
// and registers it (everyone in the hub may see it and add models).
func startSpoke(t *testing.T, e *env) testSpoke { return startNamedSpoke(t, e, "east", "", true) }

// startNamedSpoke runs an in-process controller that trusts the test hub
// and registers it: private to org if set, public (everyone may see it and
// add models to it) if asked.
func startNamedSpoke(t *testing.T, e *env, name, org string, public bool) testSpoke {
	t.Helper()
	listen, cred := runSpoke(t, name, func(cfg *spoke.Config) {
		cfg.HubURL, cfg.HubJWKSURL = publicURL, e.url+"/.well-known/jwks.json"
	})
	req := hub.AddControllerRequest{Name: name, URL: "https://" + listen, CACert: cred.CACert, Region: name, Cloud: "localhost", Org: org}
	testkit.EventuallyWithin(t, 30*time.Second, func() (bool, error) {
		_, err := e.hub.RegisterController(t.Context(), req, public)
		return err == nil, err
	}, "spoke registered with the hub")
	admin, err := api.NewClient(api.ClientConfig{Addresses: []string{listen}, CACert: []byte(cred.CACert),
		User: cred.User, Password: cred.Password, Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(admin.Close)
	return testSpoke{UUID: cred.ControllerUUID, Admin: admin}
}

// runSpoke runs an in-process one-node controller until the test ends and
// returns its API address and admin credential.
func runSpoke(t *testing.T, name string, adjust func(*spoke.Config)) (string, *spoke.AdminCredential) {
	t.Helper()
	listen := testkit.FreeAddr(t)
	ready := make(chan struct{})
	dir := t.TempDir()
	cfg := spoke.Config{DataDir: dir, Listen: listen, RaftListen: testkit.FreeAddr(t), Name: name,
		Bootstrap: true, Ready: ready,
		RaftHeartbeat: 100 * time.Millisecond, RaftElection: 100 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)}
	if adjust != nil {
		adjust(&cfg)
	}
	s, err := spoke.New(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	serveUntilReady(t, "spoke", ready, s.Serve, false, nil)
	cred, err := spoke.ReadAdminCredential(dir)
	if err != nil {
		t.Fatal(err)
	}
	return listen, cred
}

func newProxyFixture(t *testing.T) *proxyFixture {
	e := newEnv(t)
	f := &proxyFixture{env: e}
	f.alice, f.rita, f.will = e.user("alice", "acme"), e.user("rita", "acme"), e.user("will", "acme")
	f.olga = e.user("olga", "globex")
	e.grant(authz.UserObject(f.olga.ID), authz.Administrator, authz.OrgObject("globex"))
	startSpoke(t, e)
	e.settle()
	code, b := f.do("POST", "/v1/models", f.token(f.alice, time.Minute, ""), map[string]string{"name": "prod", "region": "east"})
	if code != http.StatusCreated && code != http.StatusOK {
		t.Fatalf("add model: %d %s", code, b)
	}
	var m struct{ UUID string }
	if err := json.Unmarshal(b, &m); err != nil || m.UUID == "" {
		t.Fatalf("add model answer %s: %v", b, err)
	}
	f.model = m.UUID
	e.grant(authz.UserObject(f.rita.ID), authz.Reader, authz.ModelObject(f.model))
	e.grant(authz.UserObject(f.will.ID), authz.Writer, authz.ModelObject(f.model))
	e.settle()
	f.charmSHA = f.uploadCharm(t, "kvstore")
	return f
}

// uploadCharm uploads a sample charm through the hub as alice.
func (f *proxyFixture) uploadCharm(t *testing.T, name string) string {
	_, file, _, _ := runtime.Caller(0)
	var buf bytes.Buffer
	if err := charm.ArchiveDir(filepath.Join(filepath.Dir(filepath.Dir(file)), "charms", name), &buf); err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequestWithContext(t.Context(), "POST", f.url+"/v1/models/"+f.model+"/charms", &buf)
	req.Header.Set("Authorization", "Bearer "+f.token(f.alice, time.Minute, ""))
	req.Header.Set("Content-Type", "application/zip")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var ch struct {
		SHA256 string `json:"sha256"`
	}
	if resp.StatusCode >= 300 || json.Unmarshal(b, &ch) != nil || ch.SHA256 == "" {
		t.Fatalf("upload charm through the hub: %d %s", resp.StatusCode, b)
	}
	return ch.SHA256
}

// dial opens the model's watch websocket through the hub and returns the
// handshake's status.
func (f *proxyFixture) dial(t *testing.T, token string) int {
	h := http.Header{}
	if token != "" {
		h.Set("Authorization", "Bearer "+token)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	u := "ws" + strings.TrimPrefix(f.url, "http") + "/v1/models/" + f.model + "/watch?since=0"
	conn, resp, err := websocket.DefaultDialer.DialContext(ctx, u, h)
	if conn != nil {
		defer conn.Close()
		var frame struct{ Type string }
		if err := conn.ReadJSON(&frame); err != nil || frame.Type != "reset" {
			t.Errorf("first frame through the hub: %+v, %v", frame, err)
		}
	}
	if resp == nil {
		t.Fatalf("watch dial: %v", err)
	}
	return resp.StatusCode
}

// proxyRoute is one proxied model route; want holds the status for
// other-tenant, reader, writer and admin, in the order they run (admin
// last: DELETE destroys the model).
type proxyRoute struct {
	name, method, path string
	body               func(role string) any
	want               [4]int
}

// TestProxyAuthorizationMatrix runs the hub's proxied model routes as every
// kind of caller, against real PostgreSQL, real OpenFGA and a real spoke:
// the hub decides (401, 404 for a hidden model, 403 for a missing
// permission) and what it forwards the spoke accepts.
func TestProxyAuthorizationMatrix(t *testing.T) {
	f := newProxyFixture(t)
	mp := "/v1/models/" + f.model
	routes := []proxyRoute{
		{name: "GET status", method: "GET", path: mp + "/status", want: [4]int{404, 200, 200, 200}},
		{name: "GET applications", method: "GET", path: mp + "/applications", want: [4]int{404, 200, 200, 200}},
		{name: "PATCH config", method: "PATCH", path: mp + "/config",
			body: func(role string) any { return map[string]any{"set": map[string]any{"note-" + role: "x"}} },
			want: [4]int{404, 403, 200, 200}},
		{name: "POST applications", method: "POST", path: mp + "/applications",
			body: func(role string) any {
				return map[string]any{"application": "kv-" + role, "charm-sha256": f.charmSHA, "config": map[string]any{"port": 7099}}
			},
			want: [4]int{404, 403, 201, 201}},
		{name: "DELETE model", method: "DELETE", path: mp, want: [4]int{404, 403, 403, 204}},
	}
	roles := []struct {
		name string
		id   store.Identity
	}{{"other-tenant", f.olga}, {"reader", f.rita}, {"writer", f.will}, {"admin", f.alice}}
	bad := map[string]string{
		"no-token":       "",
		"wrong-audience": f.token(f.alice, time.Minute, "some-controller-uuid"),
		"expired":        f.token(f.alice, -time.Minute, ""),
	}

	// The watch websocket first, while the model lives.
	t.Run("watch", func(t *testing.T) {
		for name, tok := range bad {
			if code := f.dial(t, tok); code != http.StatusUnauthorized {
				t.Errorf("%s: got %d, want 401", name, code)
			}
		}
		for i, role := range roles {
			want := [4]int{404, 101, 101, 101}[i]
			if code := f.dial(t, f.token(role.id, time.Minute, "")); code != want {
				t.Errorf("%s: got %d, want %d", role.name, code, want)
			}
		}
	})
	for _, rt := range routes {
		t.Run(rt.name, func(t *testing.T) {
			body := func(role string) any {
				if rt.body == nil {
					return nil
				}
				return rt.body(role)
			}
			for name, tok := range bad {
				if code, b := f.do(rt.method, rt.path, tok, body(name)); code != http.StatusUnauthorized {
					t.Errorf("%s: got %d %s, want 401", name, code, b)
				}
			}
			for i, role := range roles {
				code, b := f.do(rt.method, rt.path, f.token(role.id, time.Minute, ""), body(role.name))
				if code != rt.want[i] {
					t.Errorf("%s: got %d %s, want %d", role.name, code, b, rt.want[i])
				}
			}
		})
	}
	// Every proxied change was audited with its model, allowed or not, under
	// the Juju command's name, with what it acted on and with the values of
	// settings redacted. The entry is written once the handler returns,
	// which may be after the client has read the answer: wait for the last
	// one.
	testkit.EventuallyWithin(t, 10*time.Second, func() (bool, error) {
		entries, _, err := f.st.QueryAudit(t.Context(), store.AuditQuery{All: true, ModelUUID: f.model, Limit: 1000})
		if err != nil {
			return false, err
		}
		got := map[string]int{}
		var deploy *store.AuditEntry
		for i, e := range entries {
			got[fmt.Sprintf("%s %d", e.Operation, e.Status)]++
			if e.Operation == "deploy" && e.Details["target"] == "kv-writer" {
				deploy = &entries[i]
			}
		}
		for _, want := range []string{"model-config 403", "model-config 200", "deploy 201", "destroy-model 204", "destroy-model 403"} {
			if got[want] == 0 {
				return false, fmt.Errorf("audit lacks %q: %v", want, got)
			}
		}
		if deploy == nil {
			return false, fmt.Errorf("no deploy entry names its application: %v", got)
		}
		d, _ := json.Marshal(deploy.Details["body"])
		if !strings.Contains(string(d), `"config":{"port":"[redacted]"}`) || strings.Contains(string(d), "7099") ||
			!strings.Contains(string(d), `"application":"kv-writer"`) {
			t.Fatalf("deploy's recorded body %s: want the application, and the config's keys without their values", d)
		}
		return true, nil
	}, "every proxied change audited")
}
