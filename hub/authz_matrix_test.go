package hub_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/google/uuid"

	"github.com/droverhq/drover/authz"
	"github.com/droverhq/drover/hub"
	"github.com/droverhq/drover/hub/internal/store"
)

// fixture: tenant acme with its private controller east and model prod;
// alice administers acme, rita reads prod, will writes prod; olga
// administers another tenant, globex. carl, root and hal: newMatrixFixture.
type fixture struct {
	*env
	alice, rita, will, olga, dave, carl, root, hal store.Identity
	ctrl, otherCtrl                                store.Controller
	model                                          store.Model
	group                                          store.Group
	// migration is prod's migration from east to north, in PRECHECK.
	migration string
}

func newFixture(t *testing.T) *fixture {
	e := newEnv(t)
	f := &fixture{env: e}
	f.alice, f.rita, f.will, f.dave = e.user("alice", "acme"), e.user("rita", "acme"), e.user("will", "acme"), e.user("dave", "acme")
	f.olga = e.user("olga", "globex")
	ctx := t.Context()
	e.grant(authz.UserObject(f.alice.ID), authz.Administrator, authz.OrgObject("acme"))
	e.grant(authz.UserObject(f.olga.ID), authz.Administrator, authz.OrgObject("globex"))
	f.ctrl = store.Controller{UUID: uuid.NewString(), Name: "east", Org: "acme", Region: "east", APIAddresses: []string{"127.0.0.1:1"}}
	if err := e.st.Controllers.Upsert(ctx, f.ctrl); err != nil {
		t.Fatal(err)
	}
	f.model = store.Model{UUID: uuid.NewString(), Name: "prod", Org: "acme", Owner: f.alice.ID, ControllerUUID: f.ctrl.UUID}
	if err := e.st.Models.Insert(ctx, f.model); err != nil {
		t.Fatal(err)
	}
	globexCtrl := store.Controller{UUID: uuid.NewString(), Name: "west", Org: "globex"}
	if err := e.st.Controllers.Upsert(ctx, globexCtrl); err != nil {
		t.Fatal(err)
	}
	f.otherCtrl = globexCtrl
	if err := e.st.Models.Insert(ctx, store.Model{UUID: uuid.NewString(), Name: "prod", Org: "globex", Owner: f.olga.ID, ControllerUUID: globexCtrl.UUID}); err != nil {
		t.Fatal(err)
	}
	for _, g := range []struct {
		who store.Identity
		rel authz.Relation
	}{{f.rita, authz.Reader}, {f.will, authz.Writer}} {
		e.grant(authz.UserObject(g.who.ID), g.rel, authz.ModelObject(f.model.UUID))
		e.grant(authz.UserObject(g.who.ID), authz.Reader, authz.ControllerObject(f.ctrl.UUID))
	}
	var err error
	if f.group, err = e.st.Groups.Create(ctx, "acme", "ops"); err != nil {
		t.Fatal(err)
	}
	for _, a := range []store.AuditEntry{
		{Org: "acme", ModelUUID: f.model.UUID, Operation: "deploy", Actor: "alice@example.com"},
		{Org: "globex", Operation: "deploy", Actor: "olga@example.com"},
	} {
		a.At, a.Result = time.Now(), store.ResultOK
		if err := e.st.Audit.Append(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	e.settle()
	return f
}

// newMatrixFixture is newFixture with the callers only the matrix needs:
// carl, east's superuser, and root and hal, the hub's administrators.
func newMatrixFixture(t *testing.T) *fixture {
	f := newFixture(t)
	f.carl, f.root, f.hal = f.user("carl", "acme"), f.user("root", "acme"), f.user("hal", "acme")
	f.grant(authz.UserObject(f.carl.ID), authz.Administrator, authz.ControllerObject(f.ctrl.UUID))
	f.grant(authz.UserObject(f.root.ID), authz.Administrator, authz.HubObject())
	f.grant(authz.UserObject(f.hal.ID), authz.Administrator, authz.HubObject())
	// north, acme's other controller, where carl may add models too.
	north := store.Controller{UUID: uuid.NewString(), Name: "north", Org: "acme", Region: "north", APIAddresses: []string{"127.0.0.1:1"}}
	if err := f.st.Controllers.Upsert(t.Context(), north); err != nil {
		t.Fatal(err)
	}
	f.grant(authz.UserObject(f.carl.ID), authz.CanAddModel, authz.ControllerObject(north.UUID))
	m, err := f.st.Migrations.Start(t.Context(), store.NewMigration{ModelUUID: f.model.UUID, ModelName: f.model.Name,
		SourceController: f.ctrl.UUID, TargetController: north.UUID, RequestedBy: "alice@example.com"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	f.migration = m.ID
	f.settle()
	return f
}

type route struct {
	name   string
	method string
	path   string
	body   func(f *fixture, role string) any
	before func(f *fixture)
	// want is the status for each of matrixRoles, in order: reader,
	// writer, admin (of acme), other-tenant (admin of globex),
	// ctrl-admin (east's superuser) and hub-admin.
	want [6]int
}

func routes(f *fixture) []route {
	grantBody := func(*fixture, string) any {
		return map[string]string{"user": "dave@example.com", "level": "read", "model": f.model.UUID}
	}
	return []route{
		{name: "whoami", method: "GET", path: "/v1/whoami", want: [6]int{200, 200, 200, 200, 200, 200}},
		{name: "hub info", method: "GET", path: "/v1/hub", want: [6]int{200, 200, 200, 200, 200, 200}},
		// The federation stream is a websocket (TestFederationStreamRefusals
		// and the other TestFederationStream tests): a plain GET is a bad request.
		{name: "federation stream", method: "GET", path: "/v1/watch", want: [6]int{400, 400, 400, 400, 400, 400}},
		{name: "access", method: "GET", path: "/v1/access?object=model:" + f.model.UUID, want: [6]int{200, 200, 200, 404, 200, 200}},
		// The hub's signing keys: its administrators only (TestRevokingTheSigningKeys).
		{name: "list signing keys", method: "GET", path: "/v1/hub/signing-keys", want: [6]int{403, 403, 403, 403, 403, 200}},
		{name: "rotate signing key", method: "POST", path: "/v1/hub/signing-keys",
			body: func(*fixture, string) any { return map[string]bool{"revoke-previous": true} },
			want: [6]int{403, 403, 403, 403, 403, 201}},
		{name: "list orgs", method: "GET", path: "/v1/organizations", want: [6]int{200, 200, 200, 200, 200, 200}},
		{name: "list users", method: "GET", path: "/v1/users", want: [6]int{200, 200, 200, 200, 200, 200}},
		{name: "show user", method: "GET", path: "/v1/users/dave@example.com", want: [6]int{404, 404, 200, 404, 404, 200}},
		// Managing identities: their organization's administrators only;
		// anyone else is told nobody by that name exists.
		{name: "disable user", method: "POST", path: "/v1/users/dave@example.com/disable", want: [6]int{404, 404, 204, 404, 404, 204}},
		{name: "enable user", method: "POST", path: "/v1/users/dave@example.com/enable", want: [6]int{404, 404, 204, 404, 404, 204}},
		{name: "remove user", method: "DELETE", path: "/v1/users/gone@example.com",
			before: func(f *fixture) {
				if _, err := f.st.Identities.Pending(f.t.Context(), "gone@example.com", "acme"); err != nil {
					f.t.Fatal(err)
				}
			},
			want: [6]int{404, 404, 204, 404, 404, 204}},
		// A hub administrator is above an organization's: only the hub's
		// administrators manage one (ADR 0021; hal is in acme).
		{name: "disable a hub administrator", method: "POST", path: "/v1/users/hal@example.com/disable",
			before: func(f *fixture) {
				if _, err := f.st.Identities.SetDisabled(f.t.Context(), f.hal.ID, false, time.Now()); err != nil {
					f.t.Fatal(err)
				}
			},
			want: [6]int{404, 404, 403, 404, 404, 204}},
		{name: "list models", method: "GET", path: "/v1/models", want: [6]int{200, 200, 200, 200, 200, 200}},
		{name: "get model", method: "GET", path: "/v1/models/" + f.model.UUID, want: [6]int{200, 200, 200, 404, 200, 200}},
		{name: "list controllers", method: "GET", path: "/v1/controllers", want: [6]int{200, 200, 200, 200, 200, 200}},
		{name: "get controller", method: "GET", path: "/v1/controllers/east", want: [6]int{200, 200, 200, 404, 200, 200}},
		{name: "grant", method: "POST", path: "/v1/grants", body: grantBody, want: [6]int{403, 403, 204, 404, 204, 204}},
		{name: "revoke", method: "DELETE", path: "/v1/grants", body: grantBody,
			before: func(f *fixture) { f.grant(authz.UserObject(f.dave.ID), authz.Reader, authz.ModelObject(f.model.UUID)) },
			want:   [6]int{403, 403, 204, 404, 204, 204}},
		{name: "add group", method: "POST", path: "/v1/groups",
			body: func(_ *fixture, role string) any { return map[string]string{"org": "acme", "name": "g-" + role} },
			want: [6]int{403, 403, 201, 404, 403, 201}},
		{name: "add member", method: "POST", path: "/v1/groups/" + f.group.ID + "/members",
			body: func(*fixture, string) any { return map[string]string{"user": "rita@example.com"} },
			want: [6]int{403, 403, 204, 404, 403, 204}},
		{name: "remove member", method: "DELETE", path: "/v1/groups/" + f.group.ID + "/members/rita@example.com",
			before: func(f *fixture) {
				if err := f.st.Groups.AddMember(f.t.Context(), f.group.ID, f.rita.ID); err != nil {
					f.t.Fatal(err)
				}
			},
			want: [6]int{403, 403, 204, 404, 403, 204}},
		// Groups: their organization's members see them, its
		// administrators change them, others learn nothing.
		{name: "list groups", method: "GET", path: "/v1/groups", want: [6]int{200, 200, 200, 200, 200, 200}},
		{name: "list an organization's groups", method: "GET", path: "/v1/groups?org=acme", want: [6]int{200, 200, 200, 404, 200, 200}},
		{name: "show group", method: "GET", path: "/v1/groups/" + f.group.ID, want: [6]int{200, 200, 200, 404, 200, 200}},
		{name: "rename group", method: "PATCH", path: "/v1/groups/" + f.group.ID,
			body: func(_ *fixture, role string) any { return map[string]string{"name": "ops-" + role} },
			want: [6]int{403, 403, 200, 404, 403, 200}},
		{name: "remove group", method: "DELETE", path: "/v1/groups/acme%2Fdoomed",
			before: func(f *fixture) {
				if _, err := f.st.Groups.Create(f.t.Context(), "acme", "doomed"); err != nil && !errors.Is(err, store.ErrAlreadyExists) {
					f.t.Fatal(err)
				}
			},
			want: [6]int{403, 403, 204, 404, 403, 204}},
		{name: "audit", method: "GET", path: "/v1/audit", want: [6]int{200, 200, 200, 200, 200, 200}}, // everyone reads their own entries
		{name: "audit export", method: "GET", path: "/v1/audit/export", want: [6]int{200, 200, 200, 200, 200, 200}},
		{name: "audit activity", method: "GET", path: "/v1/audit/activity", want: [6]int{200, 200, 200, 200, 200, 200}},
		{name: "charm inventory", method: "GET", path: "/v1/compliance/charms", want: [6]int{200, 200, 200, 200, 200, 200}}, // the models each reads
		{name: "access review", method: "GET", path: "/v1/compliance/access", want: [6]int{403, 403, 200, 200, 403, 200}},
		// Adding a model: the organization's administrator passes (and the
		// controller is unusable: 502); members see the controller but may
		// not (403); others do not see it (404).
		{name: "add model", method: "POST", path: "/v1/models",
			body: func(_ *fixture, role string) any { return map[string]string{"name": "m-" + role, "controller": "east"} },
			want: [6]int{403, 403, 502, 404, 403, 502}},
		{name: "log out", method: "POST", path: "/v1/auth/logout", want: [6]int{204, 204, 204, 204, 204, 204}},
		// Registering a controller: on the hub only its administrators may
		// (everyone knows the hub: 403); on an organization its
		// administrators (alice passes, and her controller is unreachable:
		// 502), its members are refused (403), others learn nothing (404).
		{name: "add controller to the hub", method: "POST", path: "/v1/controllers",
			body: func(_ *fixture, role string) any { return addControllerBody(role, "") },
			want: [6]int{403, 403, 403, 403, 403, 502}},
		{name: "add controller to an org", method: "POST", path: "/v1/controllers",
			body: func(_ *fixture, role string) any { return addControllerBody(role, "acme") },
			want: [6]int{403, 403, 502, 404, 403, 502}},
		// Removing a controller: its readers are refused (403), others
		// learn nothing (404); its administrator passes, and is told the
		// models it still hosts (409).
		{name: "remove controller", method: "DELETE", path: "/v1/controllers/east", want: [6]int{403, 403, 409, 404, 409, 409}},
		// Deprecating a controller: its administrators, as removing it.
		{name: "set controller deprecated", method: "PATCH", path: "/v1/controllers/east",
			body: func(*fixture, string) any { return map[string]bool{"deprecated": false} },
			want: [6]int{403, 403, 200, 404, 200, 200}},
		// Changing a model's owner: its organization's administrators;
		// those who see the model are refused (403), others learn nothing
		// (404).
		{name: "set model owner", method: "PATCH", path: "/v1/models/" + f.model.UUID,
			body: func(*fixture, string) any { return map[string]string{"owner": "dave@example.com"} },
			want: [6]int{403, 403, 200, 404, 403, 200}},
		// Migrations: the model's administrators (its controller's among
		// them) who may add models on the target; prod has a migration
		// already (409) in the matrix fixture. Its readers follow
		// migrations; others learn nothing (404).
		{name: "migrate", method: "POST", path: "/v1/migrations",
			body: func(f *fixture, _ string) any {
				return map[string]string{"model": f.model.UUID, "target-controller": "north"}
			},
			want: [6]int{403, 403, 409, 404, 409, 409}},
		{name: "list migrations", method: "GET", path: "/v1/migrations", want: [6]int{200, 200, 200, 200, 200, 200}},
		{name: "show migration", method: "GET", path: "/v1/migrations/" + f.migration, want: [6]int{200, 200, 200, 404, 200, 200}},
		{name: "migration events", method: "GET", path: "/v1/migrations/" + f.migration + "/events", want: [6]int{200, 200, 200, 404, 200, 200}},
		{name: "retry reap", method: "POST", path: "/v1/migrations/" + f.migration + "/retry-reap", want: [6]int{403, 403, 409, 404, 409, 409}},
		{name: "abort migration", method: "POST", path: "/v1/migrations/" + f.migration + "/abort", want: [6]int{403, 403, 200, 404, 200, 200}},
	}
}

// addControllerBody registers a controller nothing answers for.
func addControllerBody(name, org string) map[string]string {
	return map[string]string{"name": "c-" + strings.ToLower(name), "url": "https://127.0.0.1:1", "ca-cert": someCA(),
		"region": "r1", "org": org}
}

// someCA is a certificate in PEM, good as a CA nobody serves with.
var someCA = sync.OnceValue(func() string {
	srv := httptest.NewTLSServer(nil)
	defer srv.Close()
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}))
})

// TestAuthorizationMatrix runs every route as every kind of caller against
// real PostgreSQL and real OpenFGA.
func TestAuthorizationMatrix(t *testing.T) {
	f := newMatrixFixture(t)
	roles := matrixRoles(f)
	t.Run("covers every route", func(t *testing.T) {
		covered := map[string]bool{
			// Covered by TestProxyAuthorizationMatrix, route by route.
			"DELETE /v1/models/{uuid}": true,
		}
		for _, rt := range routes(f) {
			covered[rt.method+" "+strings.Replace(strings.Replace(rt.path, f.model.UUID, "{uuid}", 1), f.group.ID, "{group}", 1)] = true
		}
		covered["DELETE /v1/groups/{group}/members/{member}"] = covered["DELETE /v1/groups/{group}/members/rita@example.com"]
		covered["GET /v1/controllers/{name}"] = covered["GET /v1/controllers/east"]
		covered["GET /v1/access"] = covered["GET /v1/access?object=model:{uuid}"]
		covered["DELETE /v1/controllers/{name}"] = covered["DELETE /v1/controllers/east"]
		covered["PATCH /v1/controllers/{name}"] = covered["PATCH /v1/controllers/east"]
		covered["POST /v1/users/{user}/disable"] = covered["POST /v1/users/dave@example.com/disable"]
		covered["POST /v1/users/{user}/enable"] = covered["POST /v1/users/dave@example.com/enable"]
		covered["DELETE /v1/users/{user}"] = covered["DELETE /v1/users/gone@example.com"]
		covered["GET /v1/users/{user}"] = covered["GET /v1/users/dave@example.com"]
		for _, r := range []string{"GET /v1/migrations/{id}", "GET /v1/migrations/{id}/events", "POST /v1/migrations/{id}/abort", "POST /v1/migrations/{id}/retry-reap"} {
			covered[r] = covered[strings.Replace(r, "{id}", f.migration, 1)]
		}
		covered["DELETE /v1/groups/{group}"] = covered["DELETE /v1/groups/acme%2Fdoomed"]
		for _, r := range f.hub.Routes() {
			method, path, _ := strings.Cut(r, " ")
			if !strings.HasPrefix(path, "/v1/") && publicRoutes[r] == "" && publicRoutes["* "+path] == "" {
				t.Errorf("the hub's route %s is outside the authenticated /v1 API and not among publicRoutes", r)
			}
			// Every change of the hub's own is named for the audit log
			// before it is served (an entry left pending says what it was).
			if method != "GET" && strings.HasPrefix(path, "/v1/") && !strings.HasPrefix(path, "/v1/auth/device") &&
				path != "/v1/auth/token" && !strings.HasPrefix(path, "/v1/models/{uuid}") && hub.HubOperations[r] == "" {
				t.Errorf("the hub's route %s has no audit operation name (hubOperations)", r)
			}
			// Logins answer callers without a session; the auth tests run them.
			if strings.HasPrefix(path, "/v1/") && !strings.HasPrefix(path, "/v1/auth/device") && path != "/v1/auth/token" &&
				path != "/v1/models/{uuid}/*" && !covered[r] {
				t.Errorf("the matrix lacks the hub's route %s", r)
			}
		}
	})
	for _, rt := range routes(f) {
		t.Run(rt.name, func(t *testing.T) {
			bad := strangers(t, f.env, f.alice, f.ctrl.UUID, f.otherCtrl.UUID)
			bad["alg-none"] = "Bearer " + algNone(f.alice.ID)
			bad["garbage"] = "Bearer not.a.jwt"
			for name, auth := range bad {
				var body any
				if rt.body != nil {
					body = rt.body(f, name)
				}
				if code, b := f.doAuth(rt.method, rt.path, auth, body); code != http.StatusUnauthorized {
					t.Errorf("%s: got %d %s, want 401", name, code, b)
				}
			}
			for i, role := range roles {
				if rt.before != nil {
					rt.before(f)
					f.settle()
				}
				var body any
				if rt.body != nil {
					body = rt.body(f, role.name)
				}
				code, b := f.do(rt.method, rt.path, f.token(role.id, time.Minute, ""), body)
				if code != rt.want[i] {
					t.Errorf("%s: got %d %s, want %d", role.name, code, b, rt.want[i])
				}
			}
		})
	}
}

// strangers are the callers who are not the hub's users, as the
// Authorization header each presents: every row of the matrices is run as
// each of them, and each is refused (401). ctrl is a controller the hub
// knows and other another one; alice is a user of the hub whose tokens
// they hold.
func strangers(t *testing.T, e *env, alice store.Identity, ctrl, other string) map[string]string {
	basic := func(user, password string) string {
		return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+password))
	}
	return map[string]string{
		"no-token": "",
		"expired":  "Bearer " + e.token(alice, -time.Minute, ""),
		// What the hub sends a controller, replayed to the hub by that
		// controller, and by another.
		"controller":         "Bearer " + e.token(alice, time.Minute, ctrl),
		"another-controller": "Bearer " + e.token(alice, time.Minute, other),
		// A controller's own administrator credential.
		"controller-admin": basic("admin", "controller-admin-password"),
		// A machine agent: the tag and password of its agent.conf, as it
		// presents them to its controller, and a token signed by a
		// controller, not the hub.
		"agent":       basic("machine-"+uuid.NewString()+"-0", "agent-password"),
		"agent-token": "Bearer " + agentToken(t),
	}
}

// matrixRoles are the callers each row of the matrix is run as, in the
// order of route.want. Anonymous callers, agents and controllers are the
// strangers every row is also run as (all 401).
func matrixRoles(f *fixture) []struct {
	name string
	id   store.Identity
} {
	return []struct {
		name string
		id   store.Identity
	}{{"reader", f.rita}, {"writer", f.will}, {"admin", f.alice}, {"other-tenant", f.olga},
		{"ctrl-admin", f.carl}, {"hub-admin", f.root}}
}

// publicRoutes are the hub's routes outside the authenticated /v1 API,
// each with why anyone may call it; the matrix fails on any other.
var publicRoutes = map[string]string{
	"GET /healthz":               "liveness",
	"GET /readyz":                "readiness",
	"GET /.well-known/jwks.json": "the hub's public keys, for controllers verifying its tokens",
	"GET /auth/login":            "web login (auth tests)",
	"GET /auth/callback":         "web login (auth tests)",
	"POST /auth/refresh":         "web session refresh (websession tests)",
	"POST /auth/logout":          "web logout (logout tests)",
	"POST /v1/auth/device":       "device login (auth tests)",
	"POST /v1/auth/device/token": "device login (auth tests)",
	"POST /v1/auth/token":        "service account login (auth tests)",
	// Mounted for every method.
	"* /metrics": "metrics, on the API listener when no metrics listener is set",
}

// agentToken forges a token an agent might hold: signed by a key of a
// controller's, naming a machine.
func agentToken(t *testing.T) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: key}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := json.Marshal(map[string]any{"iss": "https://controller.test", "aud": "drover-hub", "sub": "machine-0",
		"exp": time.Now().Add(time.Hour).Unix()})
	sig, err := signer.Sign(c)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := sig.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// algNone forges an unsigned token with alg "none".
func algNone(sub string) string {
	enc := base64.RawURLEncoding.EncodeToString
	h, _ := json.Marshal(map[string]string{"alg": "none", "typ": "JWT"})
	c, _ := json.Marshal(map[string]any{"iss": publicURL, "aud": "drover-hub", "sub": sub, "exp": time.Now().Add(time.Hour).Unix()})
	return enc(h) + "." + enc(c) + "."
}

// TestTenantIsolationInListings checks what the listings contain, not only
// their status.
func TestTenantIsolationInListings(t *testing.T) {
	f := newFixture(t)
	list := func(who store.Identity, path, key string) []map[string]any {
		code, b := f.do("GET", path, f.token(who, time.Minute, ""), nil)
		if code != 200 {
			t.Fatalf("%s %s: %d %s", who.Email, path, code, b)
		}
		var resp map[string][]map[string]any
		if err := json.Unmarshal(b, &resp); err != nil {
			t.Fatal(err)
		}
		return resp[key]
	}
	orgsOf := func(items []map[string]any) string {
		var out []string
		for _, it := range items {
			out = append(out, fmt.Sprint(it["org"]))
		}
		return strings.Join(out, ",")
	}
	for _, c := range []struct {
		who         store.Identity
		models      string
		controllers int
		audit       string
	}{
		{f.rita, "acme", 1, ""},
		{f.alice, "acme", 1, "acme"},
		{f.olga, "globex", 1, "globex"},
		{f.dave, "", 0, ""},
	} {
		if got := orgsOf(list(c.who, "/v1/models", "models")); got != c.models {
			t.Errorf("%s models: orgs %q, want %q", c.who.Email, got, c.models)
		}
		if got := len(list(c.who, "/v1/controllers", "controllers")); got != c.controllers {
			t.Errorf("%s controllers: %d, want %d", c.who.Email, got, c.controllers)
		}
		if c.audit != "" {
			for _, e := range list(c.who, "/v1/audit", "entries") {
				if e["org"] != c.audit {
					t.Errorf("%s sees audit entry of org %v", c.who.Email, e["org"])
				}
			}
		}
	}
}
