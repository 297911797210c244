package hub_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/droverhq/drover/internal/version"
	"github.com/droverhq/drover/tests/testkit"
)

// TestControllerHealthFollowsTheController: the health GET /v1/controllers
// shows (drover controllers) follows the controller: connected while the
// hub's event subscription runs, disconnected with the reason once the
// controller stops, and connected again as soon as the hub is subscribed
// anew, not at the controller's next frame. The health keeps the
// controller's version and nodes as the controller last reported them,
// connected or not.
func TestControllerHealthFollowsTheController(t *testing.T) {
	e := newServedEnv(t)
	tok := e.hubAdmin()

	cfg, stop, _, _ := runRegisteredNode(t, e, t.TempDir())
	start := func() (stop func()) { return runNode(t, cfg) }
	defer func() { stop() }()
	if c, err := e.st.Controllers.ByName(t.Context(), "east"); err != nil || c.Cloud != "localhost" {
		t.Fatalf("registered without a cloud: %+v %v (want it in cloud localhost)", c, err)
	}
	// Registered without a cloud, it is in the cloud it names itself, for
	// placement too.
	if code, out := e.do(http.MethodPost, "/v1/models", tok, map[string]string{"name": "m", "cloud": "localhost"}); code != http.StatusCreated {
		t.Fatalf("add-model --cloud localhost: %d %s", code, out)
	}

	var lastSeen *time.Time
	var lastHealth map[string]any
	health := func() (status, reason string) {
		var out struct {
			Controllers []struct {
				Name     string         `json:"name"`
				Status   string         `json:"status"`
				Health   map[string]any `json:"health"`
				LastSeen *time.Time     `json:"last-seen"`
			} `json:"controllers"`
		}
		e.get("/v1/controllers", tok, &out)
		for _, c := range out.Controllers {
			if c.Name == "east" {
				r, _ := c.Health["error"].(string)
				lastSeen, lastHealth = c.LastSeen, c.Health
				return c.Status, r
			}
		}
		return "", ""
	}
	waitFor := func(want string, within time.Duration) {
		t.Helper()
		testkit.EventuallyWithin(t, within, func() (bool, error) {
			got, _ := health()
			return got == want, nil
		}, "controller "+want)
	}
	waitFor("connected", 30*time.Second)
	if lastSeen == nil || lastSeen.IsZero() {
		t.Fatalf("connected, last seen %v", lastSeen)
	}
	seen := *lastSeen
	// Its version and its one node, leading, from the index alone.
	testkit.EventuallyWithin(t, 30*time.Second, func() (bool, error) {
		health()
		return lastHealth["version"] != nil, nil
	}, "the controller's version in its health")
	wantSummary := func(when string) {
		t.Helper()
		nodes, _ := lastHealth["nodes"].([]any)
		if v := lastHealth["version"]; v != version.Version || len(nodes) != 1 {
			t.Fatalf("%s: health %v, want version %s and one node", when, lastHealth, version.Version)
		}
		n, _ := nodes[0].(map[string]any)
		if n["api-address"] != cfg.Listen || n["leader"] != true || n["voter"] != true || n["id"] == "" {
			t.Errorf("%s: node %v, want the voting leader at %s", when, n, cfg.Listen)
		}
	}
	wantSummary("connected")
	stop()
	waitFor("disconnected", 30*time.Second)
	if _, reason := health(); reason == "" {
		t.Errorf("disconnected without a reason")
	}
	wantSummary("disconnected")
	// When it was last heard from stays: it is what an operator asks.
	if lastSeen == nil || lastSeen.Before(seen) {
		t.Errorf("disconnected, last seen %v; it was seen at %v", lastSeen, seen)
	}
	// Its models are listed as what the hub last heard, and say so.
	modelSays := func() string {
		var out struct {
			Models []map[string]any `json:"models"`
		}
		e.get("/v1/models", tok, &out)
		if len(out.Models) != 1 {
			t.Fatalf("models: %+v", out.Models)
		}
		s, _ := out.Models[0]["controller-status"].(string)
		return s
	}
	if got := modelSays(); got != "disconnected" {
		t.Errorf("a model on the lost controller: controller-status %q, want disconnected", got)
	}
	stop = start() // same data dir and addresses: the hub resubscribes by itself
	// The controller sends a keepalive only after 30 s of silence: being
	// connected sooner shows the subscription itself counts.
	waitFor("connected", 20*time.Second)
	if got := modelSays(); got != "" {
		t.Errorf("a model on the controller found again: controller-status %q, want none", got)
	}
}
