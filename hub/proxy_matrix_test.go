package hub_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
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
	spoke                   testSpoke
	alice, rita, will, olga store.Identity
	model                   string
	charmSHA, webSHA        string
	kv2SHA                  string // another version of kvstore (refresh)
}

// testSpoke is an in-process controller registered with the test hub.
type testSpoke struct {
	UUID string
	// Admin is the controller's local administrator (HTTP Basic auth):
	// what `drover` uses against the controller directly, bypassing the hub.
	Admin *api.Client
	// Registration is how the hub registered it.
	Registration hub.AddControllerRequest
	// Cred is the local administrator's credential.
	Cred *spoke.AdminCredential
}

// startSpoke runs an in-process controller "east" that trusts the test hub
// and registers it (everyone in the hub may see it and add models).
func startSpoke(t *testing.T, e *env) testSpoke { return startNamedSpoke(t, e, "east", "", true) }

// startNamedSpoke runs an in-process controller that trusts the test hub
// and registers it: private to org if set, public (everyone may see it and
// add models to it) if asked.
func startNamedSpoke(t *testing.T, e *env, name, org string, public bool, opts ...func(*spoke.Config)) testSpoke {
	t.Helper()
	listen, cred := runSpoke(t, name, func(cfg *spoke.Config) {
		cfg.HubURL, cfg.HubJWKSURL = publicURL, e.url+"/.well-known/jwks.json"
		for _, o := range opts {
			o(cfg)
		}
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
	return testSpoke{UUID: cred.ControllerUUID, Admin: admin, Registration: req, Cred: cred}
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

func newProxyFixture(t *testing.T, opts ...func(*hub.Config)) *proxyFixture {
	e := newEnv(t, opts...)
	f := &proxyFixture{env: e}
	f.alice, f.rita, f.will = e.user("alice", "acme"), e.user("rita", "acme"), e.user("will", "acme")
	f.olga = e.user("olga", "globex")
	e.grant(authz.UserObject(f.olga.ID), authz.Administrator, authz.OrgObject("globex"))
	f.spoke = startSpoke(t, e)
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
	f.webSHA = f.uploadCharm(t, "webapp")
	f.kv2SHA = f.uploadArchive(t, kvstoreVariant(t))
	return f
}

// kvstoreVariant is the kvstore sample charm with one more file: another
// version of it, for refresh.
func kvstoreVariant(t *testing.T) []byte {
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(t.TempDir(), "kvstore")
	if err := os.CopyFS(dir, os.DirFS(filepath.Join(filepath.Dir(filepath.Dir(file)), "charms", "kvstore"))); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "VERSION"), []byte("2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := charm.ArchiveDir(dir, &buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// charmArchive is a sample charm, zipped.
func charmArchive(t *testing.T, name string) []byte {
	_, file, _, _ := runtime.Caller(0)
	var buf bytes.Buffer
	if err := charm.ArchiveDir(filepath.Join(filepath.Dir(filepath.Dir(file)), "charms", name), &buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// uploadCharm uploads a sample charm through the hub as alice.
func (f *proxyFixture) uploadCharm(t *testing.T, name string) string {
	return f.uploadArchive(t, charmArchive(t, name))
}

// uploadArchive uploads a charm archive through the hub as alice.
func (f *proxyFixture) uploadArchive(t *testing.T, archive []byte) string {
	code, b := f.do("POST", "/v1/models/"+f.model+"/charms", f.token(f.alice, time.Minute, ""), archive)
	var ch struct {
		SHA256 string `json:"sha256"`
	}
	if code >= 300 || json.Unmarshal(b, &ch) != nil || ch.SHA256 == "" {
		t.Fatalf("upload charm through the hub: %d %s", code, b)
	}
	return ch.SHA256
}

// relationOf is the id of the relation the role's web application is in
// ("0" when it has none: the request is refused before it matters).
func (f *proxyFixture) relationOf(role string) string {
	code, b := f.do("GET", "/v1/models/"+f.model+"/relations", f.token(f.alice, time.Minute, ""), nil)
	var rels []api.Relation
	if code != http.StatusOK || json.Unmarshal(b, &rels) != nil {
		f.t.Fatalf("list relations: %d %s", code, b)
	}
	for _, r := range rels {
		if strings.Contains(r.Key, "web-"+role+":") {
			return fmt.Sprint(r.ID)
		}
	}
	return "0"
}

// routeMatching is the controller's model route ("METHOD pattern") that
// serves method and path, or "".
func routeMatching(method, path string) string {
	path, _, _ = strings.Cut(path, "?")
	segs := strings.Split(path, "/")
	for _, r := range spoke.ModelRoutes() {
		m, pattern, _ := strings.Cut(r, " ")
		ps := strings.Split(pattern, "/")
		if m != method || len(ps) != len(segs) {
			continue
		}
		match := true
		for i := range ps {
			if !strings.HasPrefix(ps[i], "{") && ps[i] != segs[i] {
				match = false
				break
			}
		}
		if match {
			return r
		}
	}
	return ""
}

// pendingTaskOf is the id of a pending task of the role's kv unit ("0"
// when it has none: the request is refused before it matters).
func (f *proxyFixture) pendingTaskOf(role string) string {
	code, b := f.do("GET", "/v1/models/"+f.model+"/tasks?status=pending&receiver=kv-"+role+"/0", f.token(f.alice, time.Minute, ""), nil)
	var tasks []api.Task
	if code != http.StatusOK || json.Unmarshal(b, &tasks) != nil || len(tasks) == 0 {
		return "0"
	}
	return tasks[0].ID
}

// machineOf is the machine of a unit ("0" when there is no such unit: the
// request is refused before it matters).
func (f *proxyFixture) machineOf(unit string) string {
	code, b := f.do("GET", "/v1/models/"+f.model+"/units/"+unit, f.token(f.alice, time.Minute, ""), nil)
	var u api.Unit
	if code != http.StatusOK || json.Unmarshal(b, &u) != nil || u.MachineID == "" {
		return "0"
	}
	return u.MachineID
}

// dial opens the model's watch websocket through the hub with the
// Authorization header auth and returns the handshake's status.
func (f *proxyFixture) dial(t *testing.T, auth string) int {
	h := http.Header{}
	if auth != "" {
		h.Set("Authorization", auth)
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
// other-tenant, reader, writer and the model's administrators (ctrl-admin,
// hub-admin and admin run in that order, admin last: DELETE destroys the
// model). "{role}" in path names the caller's role, so that each writer
// and administrator changes their own application; path may also be
// worked out when the request is made.
type proxyRoute struct {
	name, method, path string
	pathFor            func(role string) string
	body               func(role string) any
	want               [4]int
}

// TestProxyAuthorizationMatrix runs the hub's proxied model routes as every
// kind of caller, against real PostgreSQL, real OpenFGA and a real spoke:
// the hub decides (401, 404 for a hidden model, 403 for a missing
// permission) and what it forwards the spoke accepts.
func TestProxyAuthorizationMatrix(t *testing.T) {
	f := newProxyFixture(t)
	// Administrators of the model by inheritance: carl through the
	// controller hosting it, root through the hub.
	carl, root := f.user("carl", "acme"), f.user("root", "globex")
	f.grant(authz.UserObject(carl.ID), authz.Administrator, authz.ControllerObject(f.spoke.UUID))
	f.grant(authz.UserObject(root.ID), authz.Administrator, authz.HubObject())
	f.settle()
	mp := "/v1/models/" + f.model
	read := [4]int{404, 200, 200, 200}
	write := func(code int) [4]int { return [4]int{404, 403, code, code} }
	obj := func(kv ...any) func(string) any {
		return func(role string) any {
			m := map[string]any{}
			for i := 0; i < len(kv); i += 2 {
				v := kv[i+1]
				switch x := v.(type) {
				case string:
					v = strings.ReplaceAll(x, "{role}", role)
				case []string:
					l := make([]string, len(x))
					for j, s := range x {
						l[j] = strings.ReplaceAll(s, "{role}", role)
					}
					v = l
				}
				m[kv[i].(string)] = v
			}
			return m
		}
	}
	// Every model route of the controller API (spoke/internal/apiserver),
	// in an order in which each change finds what it needs.
	routes := []proxyRoute{
		{name: "GET model", method: "GET", path: mp, want: read},
		{name: "GET status", method: "GET", path: mp + "/status", want: read},
		{name: "GET config", method: "GET", path: mp + "/config", want: read},
		{name: "PATCH config", method: "PATCH", path: mp + "/config",
			body: func(role string) any { return map[string]any{"set": map[string]any{"note-" + role: "x"}} }, want: write(200)},
		{name: "GET model constraints", method: "GET", path: mp + "/constraints", want: read},
		{name: "POST model constraints", method: "POST", path: mp + "/constraints", body: obj("constraints", "cores=1"), want: write(200)},
		{name: "POST charms", method: "POST", path: mp + "/charms",
			body: func(string) any { return charmArchive(t, "kvstore") }, want: write(201)},
		{name: "GET charm", method: "GET", path: mp + "/charms/" + f.charmSHA, want: read},
		{name: "POST applications", method: "POST", path: mp + "/applications",
			body: obj("application", "kv-{role}", "charm-sha256", f.charmSHA, "num-units", 2, "config", map[string]any{"port": 7099}),
			want: write(201)},
		{name: "POST applications (webapp)", method: "POST", path: mp + "/applications",
			body: obj("application", "web-{role}", "charm-sha256", f.webSHA, "num-units", 1), want: write(201)},
		{name: "GET applications", method: "GET", path: mp + "/applications", want: read},
		{name: "GET application", method: "GET", path: mp + "/applications/kv-writer", want: read},
		{name: "GET application config", method: "GET", path: mp + "/applications/kv-writer/config", want: read},
		{name: "PATCH application config", method: "PATCH", path: mp + "/applications/kv-{role}/config",
			body: obj("set", map[string]any{"port": 7100}), want: write(200)},
		{name: "POST units", method: "POST", path: mp + "/applications/kv-{role}/units", body: obj("num-units", 1), want: write(201)},
		{name: "POST scale", method: "POST", path: mp + "/applications/kv-{role}/scale", body: obj("scale", 4), want: write(200)},
		{name: "POST expose", method: "POST", path: mp + "/applications/kv-{role}/expose", body: obj("exposed", true), want: write(200)},
		{name: "POST constraints", method: "POST", path: mp + "/applications/kv-{role}/constraints", body: obj("constraints", "mem=2G"), want: write(200)},
		{name: "POST trust", method: "POST", path: mp + "/applications/kv-{role}/trust", body: obj("trust", true), want: write(200)},
		{name: "POST charm", method: "POST", path: mp + "/applications/kv-{role}/charm",
			body: obj("charm-sha256", f.kv2SHA), want: write(200)},
		{name: "POST resource-blobs", method: "POST", path: mp + "/resource-blobs",
			body: func(role string) any { return []byte("content of " + role) }, want: write(201)},
		{name: "GET application resources", method: "GET", path: mp + "/applications/kv-writer/resources", want: read},
		// kvstore declares no resource: an administrator or writer passes
		// the hub and the controller refuses the name.
		{name: "POST application resources", method: "POST", path: mp + "/applications/kv-{role}/resources",
			body: obj("resources", map[string]any{"config": map[string]any{"sha256": strings.Repeat("a", 64), "size": 1}}), want: write(422)},
		{name: "GET units", method: "GET", path: mp + "/units", want: read},
		{name: "GET unit", method: "GET", path: mp + "/units/kv-writer/0", want: read},
		// Relation data may hold credentials: writers only (show-unit).
		{name: "GET unit relation-info", method: "GET", path: mp + "/units/kv-writer/0/relation-info", want: write(200)},
		// Answered by the controller: the unit is not in error.
		{name: "POST resolved", method: "POST", path: mp + "/units/kv-{role}/0/resolved", body: obj(), want: write(409)},
		{name: "GET machines", method: "GET", path: mp + "/machines", want: read},
		{name: "POST machines", method: "POST", path: mp + "/machines", body: obj("num-machines", 1), want: write(201)},
		{name: "GET machine", method: "GET", path: mp + "/machines/0", want: read},
		{name: "GET status-history", method: "GET", path: mp + "/status-history?kind=workload&entity=kv-writer/0", want: read},
		{name: "POST relations", method: "POST", path: mp + "/relations",
			body: obj("endpoints", []string{"web-{role}:db", "kv-{role}:kv"}), want: write(201)},
		{name: "GET relations", method: "GET", path: mp + "/relations", want: read},
		{name: "POST actions", method: "POST", path: mp + "/actions",
			body: obj("action", "get", "receivers", []string{"kv-{role}/0"}, "params", map[string]any{"key": "k"}), want: write(201)},
		// juju exec runs anything on the units: administrators only.
		{name: "POST actions (juju-exec)", method: "POST", path: mp + "/actions",
			body: obj("action", api.ExecAction, "receivers", []string{"kv-{role}/0"}, "params", map[string]any{"command": "true"}),
			want: [4]int{404, 403, 403, 201}},
		{name: "POST actions (juju-exec on a machine)", method: "POST", path: mp + "/actions",
			body: obj("action", api.ExecAction, "receivers", []string{"machine-0"}, "params", map[string]any{"command": "true"}),
			want: [4]int{404, 403, 403, 201}},
		{name: "GET tasks", method: "GET", path: mp + "/tasks", want: read},
		{name: "POST task cancel", method: "POST", pathFor: func(role string) string { return mp + "/tasks/" + f.pendingTaskOf(role) + "/cancel" },
			want: write(200)},
		{name: "GET task", method: "GET", path: mp + "/tasks/0", want: read},
		{name: "GET logs", method: "GET", path: mp + "/logs", want: read},
		{name: "DELETE relation", method: "DELETE", pathFor: func(role string) string { return mp + "/relations/" + f.relationOf(role) },
			want: write(202)},
		{name: "DELETE unit", method: "DELETE", path: mp + "/units/kv-{role}/1", want: write(202)},
		{name: "DELETE machine", method: "DELETE", path: mp + "/machines/{machine}?force=true", want: write(202)},
		{name: "DELETE application", method: "DELETE", path: mp + "/applications/web-{role}", want: write(202)},
		{name: "DELETE model", method: "DELETE", path: mp, want: [4]int{404, 403, 403, 202}}, // dying: it has applications
	}
	t.Run("covers every model route", func(t *testing.T) {
		covered := map[string]bool{"GET /v1/models/{model}/watch": true} // the watch subtest below
		for _, rt := range routes {
			p := strings.ReplaceAll(rt.path, "{role}", "writer")
			if rt.pathFor != nil {
				p = rt.pathFor("writer")
			}
			covered[routeMatching(rt.method, strings.Replace(p, f.model, "{model}", 1))] = true
		}
		for _, r := range spoke.ModelRoutes() {
			if !covered[r] {
				t.Errorf("the matrix lacks the controller's route %s", r)
			}
		}
	})
	// The model's administrators by the model (authz/model.fga): alice
	// through its organization, carl through its controller and root
	// through the hub (the controller is the hub's, shared). Each runs
	// every route, writes included, with the admin column's answer.
	roles := []struct {
		name string
		id   store.Identity
		want int // index in proxyRoute.want
	}{{"other-tenant", f.olga, 0}, {"reader", f.rita, 1}, {"writer", f.will, 2},
		{"ctrl-admin", carl, 3}, {"hub-admin", root, 3}, {"admin", f.alice, 3}}
	// Controllers and agents are no users of the hub: the controller's own
	// administrator credential and the token it mints for a hub to join it
	// are refused as the others are.
	bad := strangers(t, f.env, f.alice, f.spoke.UUID, uuid.NewString())
	bad["controller-admin"] = "Basic " + base64.StdEncoding.EncodeToString([]byte(f.spoke.Cred.User+":"+f.spoke.Cred.Password))
	hubToken, err := f.spoke.Admin.CreateHubToken(t.Context(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	bad["controller-hub-token"] = "Bearer " + hubToken.Token

	// The watch websocket first, while the model lives.
	t.Run("watch", func(t *testing.T) {
		for name, auth := range bad {
			if code := f.dial(t, auth); code != http.StatusUnauthorized {
				t.Errorf("%s: got %d, want 401", name, code)
			}
		}
		for _, role := range roles {
			want := [4]int{404, 101, 101, 101}[role.want]
			if code := f.dial(t, "Bearer "+f.token(role.id, time.Minute, "")); code != want {
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
			path := func(role string) string {
				if rt.pathFor != nil {
					return rt.pathFor(role)
				}
				p := strings.ReplaceAll(rt.path, "{role}", role)
				if strings.Contains(p, "{machine}") {
					p = strings.ReplaceAll(p, "{machine}", f.machineOf("kv-"+role+"/2"))
				}
				return p
			}
			for name, auth := range bad {
				if code, b := f.doAuth(rt.method, path(name), auth, body(name)); code != http.StatusUnauthorized {
					t.Errorf("%s: got %d %s, want 401", name, code, b)
				}
			}
			for _, role := range roles {
				code, b := f.do(rt.method, path(role.name), f.token(role.id, time.Minute, ""), body(role.name))
				if code != rt.want[role.want] {
					t.Errorf("%s: got %d %s, want %d", role.name, code, b, rt.want[role.want])
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
		entries, _, err := f.st.Audit.Query(t.Context(), store.AuditQuery{All: true, ModelUUID: f.model, Limit: 1000})
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
		for _, want := range []string{"model-config 403", "model-config 200", "deploy 201", "destroy-model 202", "destroy-model 403",
			"integrate 201", "run 201", "remove-unit 202", "resolved 409", "add-charm 201", "refresh 200", "exec 201", "exec 403", "cancel-task 200", "add-machine 201", "set-constraints 200", "trust 200"} {
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

// openWatch opens the model's watch through the hub with tok and reads its
// first frame, which must be a reset; the watch is closed with the test.
func (f *proxyFixture) openWatch(t *testing.T, ctx context.Context, tok string) *websocket.Conn {
	t.Helper()
	u := "ws" + strings.TrimPrefix(f.url, "http") + "/v1/models/" + f.model + "/watch?since=0"
	conn, _, err := websocket.DefaultDialer.DialContext(ctx, u, http.Header{"Authorization": {"Bearer " + tok}})
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	var frame struct{ Type string }
	if err := conn.ReadJSON(&frame); err != nil || frame.Type != "reset" {
		t.Fatalf("first frame: %+v %v", frame, err)
	}
	return conn
}
