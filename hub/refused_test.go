package hub_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/droverhq/drover/authz"
	"github.com/droverhq/drover/spoke"
	"github.com/droverhq/drover/tests/testkit"
)

// TestControllerRefusingTheHub: once a controller no longer trusts the hub
// (its superuser ran remove-hub-trust), a proxied call answers 502 saying
// so and what to do: a write, a read, a read on a taken connection and a
// watch alike. Relayed as the controller's 401, the refusal read as the
// caller's own session having ended, and drover renewed the session and
// asked again on every call.
func TestControllerRefusingTheHub(t *testing.T) {
	f := newProxyFixture(t)
	ctx := t.Context()
	rita, will := f.token(f.rita, time.Minute, ""), f.token(f.will, time.Minute, "")
	status := get("/v1/models/"+f.model+"/status", rita)
	c := dialRaw(t, f.url)
	c.send(status+status, "GET", 2)
	waitTaken(t, f, 1)

	if err := f.spoke.Admin.RemoveHubTrust(ctx); err != nil {
		t.Fatal(err)
	}
	const want = "controller east refused the hub: this controller trusts no hub: use the controller's user and password " +
		"(if its superuser ran 'drover remove-hub-trust', a hub administrator registers it again with a new join token"
	refused := func(what string, code int, body []byte) {
		t.Helper()
		var e struct{ Code, Message string }
		if err := json.Unmarshal(body, &e); err != nil || code != http.StatusBadGateway || e.Code != "unavailable" ||
			!strings.HasPrefix(e.Message, want) {
			t.Errorf("%s: %d %s", what, code, body)
		}
	}
	a := c.send(status, "GET", 1)[0]
	refused("a read on a taken connection", a.resp.StatusCode, []byte(a.body))
	code, b := f.do("GET", "/v1/models/"+f.model+"/status", rita, nil)
	refused("a read", code, b)
	code, b = f.do("PATCH", "/v1/models/"+f.model+"/config", will, map[string]any{"set": map[string]any{"n": 1}})
	refused("a write", code, b)
	// Placement moves on from such a controller (here there is no other),
	// and says why it could not use it.
	code, b = f.do("POST", "/v1/models", f.token(f.alice, time.Minute, ""), map[string]string{"name": "next"})
	if code != http.StatusBadGateway || !strings.Contains(string(b), "east: controller east refused the hub: this controller trusts no hub") {
		t.Errorf("add-model on a controller that refuses the hub: %d %s", code, b)
	}
	u := "ws" + strings.TrimPrefix(f.url, "http") + "/v1/models/" + f.model + "/watch?since=0"
	_, resp, err := websocket.DefaultDialer.DialContext(ctx, u, http.Header{"Authorization": {"Bearer " + rita}})
	if err == nil || resp == nil {
		t.Fatalf("a watch opened on a controller that refuses the hub: %v", err)
	}
	var body [4096]byte
	n, _ := resp.Body.Read(body[:])
	refused("a watch", resp.StatusCode, body[:n])
}

// TestIndexerSaysTheControllerRefusesTheHub: the controller ends the hub's
// event subscription once it no longer trusts the hub, and the hub then
// shows it disconnected, with why and what to do.
func TestIndexerSaysTheControllerRefusesTheHub(t *testing.T) {
	e := newEnv(t)
	sp := startNamedSpoke(t, e, "east", "", true, func(cfg *spoke.Config) { cfg.KeepaliveInterval = 200 * time.Millisecond })
	runIndexer(t, e)
	root := e.hubAdmin()
	health := func() (string, string) {
		code, b := e.do("GET", "/v1/controllers/east", root, nil)
		var c struct {
			Status string
			Health map[string]any
		}
		if code != http.StatusOK || json.Unmarshal(b, &c) != nil {
			t.Fatalf("GET /v1/controllers/east: %d %s", code, b)
		}
		why, _ := c.Health["error"].(string)
		return c.Status, why
	}
	testkit.EventuallyWithin(t, 30*time.Second, func() (bool, error) {
		st, _ := health()
		return st == "connected", nil
	}, "east connected")
	if err := sp.Admin.RemoveHubTrust(t.Context()); err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyWithin(t, 30*time.Second, func() (bool, error) {
		st, why := health()
		if st == "disconnected" && strings.HasPrefix(why, "controller east refused the hub: this controller trusts no hub") {
			return true, nil
		}
		return false, fmt.Errorf("status %s, health %q", st, why)
	}, "east shown disconnected, refusing the hub")
}

// TestControllerClockOutOfStep: a controller whose clock is far from the
// hub's refuses its tokens as out of their time, and the hub says so, with
// the times, and what to fix: the clocks, not the trust (registering the
// controller again would not help).
func TestControllerClockOutOfStep(t *testing.T) {
	var skew atomic.Int64
	f := newProxyFixture(t)
	// The fixture's controller came up with a true clock; a second one,
	// registered the same way, is then put 3 minutes behind.
	startNamedSpoke(t, f.env, "lagging", "", true, func(cfg *spoke.Config) {
		cfg.Now = func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	})
	f.settle()
	alice := f.token(f.alice, time.Minute, "")
	code, b := f.do("POST", "/v1/models", alice, map[string]string{"name": "late", "controller": "lagging"})
	if code != http.StatusCreated {
		t.Fatalf("add model on lagging: %d %s", code, b)
	}
	var m struct{ UUID string }
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	skew.Store(int64(-3 * time.Minute))
	// A token the controller verified before stays accepted for 30 s: a
	// fresh caller's read brings a fresh token.
	bob := f.env.user("bob", "acme")
	f.grant(authz.UserObject(bob.ID), authz.Reader, authz.ModelObject(m.UUID))
	f.settle()
	code, b = f.do("GET", "/v1/models/"+m.UUID+"/status", f.token(bob, time.Minute, ""), nil)
	var e struct{ Code, Message string }
	if err := json.Unmarshal(b, &e); err != nil || code != http.StatusBadGateway ||
		!strings.HasPrefix(e.Message, "controller lagging refused the hub: hub token outside its validity by this controller's clock (issued ") ||
		!strings.HasSuffix(e.Message, "the hub's and this controller's clocks differ: keep them in step, with NTP for one)") ||
		strings.Contains(e.Message, "remove-hub-trust") {
		t.Errorf("a read on a controller 3 minutes behind: %d %s", code, b)
	}
}
