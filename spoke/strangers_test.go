package spoke

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/google/uuid"

	"github.com/droverhq/drover/api"
)

// nodeRoutes are the controller's routes for its other nodes alone: they
// need a node certificate of the controller's CA, whatever else a
// request carries (403 without one).
var nodeRoutes = map[string]bool{
	"POST /v1/internal/raft/apply":      true,
	"POST /v1/internal/raft/read-index": true,
	"POST /v1/internal/raft/applied":    true,
	"POST /v1/internal/add-voter":       true,
	"GET /v1/internal/blobs/{sha}":      true,
	"PUT /v1/internal/blobs/{sha}":      true,
}

// agentRoutes are the machine agents' routes: a machine's credential,
// nothing else.
var agentRoutes = map[string]bool{
	"GET /v1/agent/stream":          true,
	"GET /v1/agent/charms/{sha}":    true,
	"GET /v1/agent/resources/{sha}": true,
	"POST " + api.PathAgentValidate: true,
}

// openRoutes answer without a credential in the Authorization header, each
// for the reason given; the tests named there cover them.
var openRoutes = map[string]string{
	"GET /healthz":                "liveness",
	"GET /readyz":                 "readiness",
	"* /metrics":                  "to the machine itself only, any method (TestMetricsOnAnInternalAddress)",
	"GET /v1/internal/ca":         "the controller's CA certificate, public: what a joining node pins",
	"GET /v1/internal/identity":   "who the node is, public",
	"POST /v1/internal/admit":     "a join token in the body (TestJoinTokenRefusals)",
	"POST /v1/internal/hub-trust": "a hub token in the body (TestHubTrustAtRuntime)",
	"POST /auth/login":            "a user's name and password in the body (TestDashboardLoginOnAController)",
	"POST /auth/logout":           "clears the caller's own session cookie (TestDashboardLoginOnAController)",
}

// TestEveryRouteRefusesAgentsAndOtherControllers runs every route of the
// controller's API, read from its router, with the credentials of callers
// who are not its users: a machine agent's own (its tag and password), a
// token of the hub this controller trusts minted for another controller,
// and the token this controller mints for a hub to join it. A user route
// refuses each (401), a node route refuses anything but a node
// certificate (403), an agent route refuses everything but an agent's
// credential (401); a route of none of these kinds, and not among
// openRoutes, fails the test.
func TestEveryRouteRefusesAgentsAndOtherControllers(t *testing.T) {
	hub := newFakeHub(t)
	key := newECKey(t)
	hub.publish("k1", key)
	// Time passes between the refusals, as between a real stranger's
	// tries: the limiter's budget is not what this test checks.
	clock := &offsetClock{}
	c, admin, info := hubTrustingCluster(t, hub, func(cfg *Config) { cfg.Now = clock.Now })
	ctx := t.Context()
	model := deployKV(t, admin, "strangers")
	if err := c.nodes[0].srv.SetAgentSecret(ctx, model, "0", "secret-0"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.nodes[0].srv.WaitRead(ctx, 0, true); err != nil {
		t.Fatal(err)
	}
	hubToken := func(aud string) string {
		now := time.Now()
		return sign(t, "k1", key, hubClaims{Claims: jwt.Claims{Issuer: hub.srv.URL, Subject: "alice@example.com",
			Audience: jwt.Audience{aud}, Expiry: jwt.NewNumericDate(now.Add(24 * time.Hour)), IssuedAt: jwt.NewNumericDate(now)},
			Access: "superuser"})
	}
	joinToken, err := admin.CreateHubToken(ctx, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	agentTag := "machine-" + model + "-0"
	strangers := map[string]func(*http.Request){
		"agent":               func(r *http.Request) { r.SetBasicAuth(agentTag, "secret-0") },
		"agent-as-bearer":     func(r *http.Request) { r.Header.Set("Authorization", "Bearer secret-0") },
		"another-controller":  func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+hubToken(uuid.NewString())) },
		"controller-hub-join": func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+joinToken.Token) },
	}
	cl := c.rawClientFrom("")
	// Each credential is good where it belongs: the agent's on its stream
	// (a websocket: a plain GET is refused past authentication, not 401),
	// the hub's token for this controller on a user route.
	if resp := c.do(cl, 0, "GET", "/v1/agent/stream", strangers["agent"]); resp.StatusCode == http.StatusUnauthorized {
		t.Fatalf("the agent's own credential on its stream: %s", resp.Status)
	}
	if resp := c.do(cl, 0, "GET", "/v1/whoami", func(r *http.Request) {
		r.Header.Set("Authorization", "Bearer "+hubToken(info.UUID))
	}); resp.StatusCode != http.StatusOK {
		t.Fatalf("the hub's token for this controller: %s", resp.Status)
	}

	param := regexp.MustCompile(`\{[^}]*\}|\*`)
	for _, r := range Routes() {
		method, pattern, _ := strings.Cut(r, " ")
		if openRoutes[r] != "" || openRoutes["* "+pattern] != "" {
			continue
		}
		want, kind := http.StatusUnauthorized, "user"
		switch {
		case nodeRoutes[r]:
			want, kind = http.StatusForbidden, "node"
		case agentRoutes[r]:
			kind = "agent"
		case !strings.HasPrefix(pattern, "/v1/") || strings.HasPrefix(pattern, "/v1/internal/") || strings.HasPrefix(pattern, "/v1/agent/"):
			t.Errorf("the controller's route %s is in no row: a user, node or agent route, or one of openRoutes", r)
			continue
		}
		path := param.ReplaceAllString(strings.ReplaceAll(pattern, "{model}", model), "x")
		for name, set := range strangers {
			if kind == "agent" && strings.HasPrefix(name, "agent") && name != "agent-as-bearer" {
				continue // its audience
			}
			clock.Add(time.Minute)
			if resp := c.do(cl, 0, method, path, set); resp.StatusCode != want {
				t.Errorf("%s (%s route) as %s: %s, want %d", r, kind, name, resp.Status, want)
			}
		}
	}
	// The agent's credential is no user's: the controller's own refusal
	// says so through the client too.
	ag, err := api.NewClient(api.ClientConfig{Addresses: []string{c.nodes[0].cfg.Listen}, CACert: []byte(c.cred.CACert),
		User: agentTag, Password: "secret-0", Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ag.Close)
	clock.Add(time.Minute)
	if _, err := ag.Model(model).Status(ctx); api.CodeOf(err) != api.CodeUnauthorized {
		t.Errorf("an agent reading its model's status as a user: %v, want unauthorized", err)
	}
}

// driverRoutes are the hub migration driver's routes: a controller
// superuser's alone (TestMigrationCallsAreTheHubDriversAlone), and none of
// them a model route, which the hub relays to its users.
var driverRoutes = map[string]bool{
	"POST /v1/controller/migrations/{model}/quiesce":       true,
	"POST /v1/controller/migrations/{model}/release":       true,
	"GET /v1/controller/migrations/{model}/export":         true,
	"POST /v1/controller/migrations/{model}/import":        true,
	"POST /v1/controller/migrations/{model}/activate":      true,
	"POST /v1/controller/migrations/{model}/abort-import":  true,
	"GET /v1/controller/migrations/{model}":                true,
	"POST /v1/controller/migrations/{model}/precheck":      true,
	"POST /v1/controller/migrations/{model}/phase":         true,
	"POST /v1/controller/migrations/{model}/reap":          true,
	"GET /v1/controller/migrations/{model}/logs":           true,
	"POST /v1/controller/migrations/{model}/logs":          true,
	"GET /v1/controller/migrations/{model}/blobs":          true,
	"GET /v1/controller/migrations/{model}/blobs/{sha256}": true,
	"PUT /v1/controller/migrations/{model}/blobs/{sha256}": true,
}

// TestMigrationRoutesAreNotModelRoutes: every route under
// /v1/controller/migrations is in driverRoutes, every one of driverRoutes
// is served, and none is among the model routes the hub relays.
func TestMigrationRoutesAreNotModelRoutes(t *testing.T) {
	served := map[string]bool{}
	for _, r := range Routes() {
		served[r] = true
		if _, pattern, _ := strings.Cut(r, " "); strings.HasPrefix(pattern, "/v1/controller/migrations/") && !driverRoutes[r] {
			t.Errorf("the migration route %s is not in driverRoutes", r)
		}
	}
	model := map[string]bool{}
	for _, r := range ModelRoutes() {
		model[r] = true
	}
	for r := range driverRoutes {
		if !served[r] {
			t.Errorf("driverRoutes names %s, which the controller does not serve", r)
		}
		if model[r] {
			t.Errorf("the driver's route %s is a model route: the hub would relay it to its users", r)
		}
	}
}
