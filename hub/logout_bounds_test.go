package hub_test

import (
	"encoding/json"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/hub"
	"github.com/droverhq/drover/hub/devidp"
	"github.com/droverhq/drover/tests/testkit"
)

// TestAnonymousLogoutForgetsNothing: a POST /auth/logout from the hub's
// origin without a session of its own is refused 401 and leaves what the
// replica remembers of other people's sessions in place; a browser's own
// logout ends its session.
func TestAnonymousLogoutForgetsNothing(t *testing.T) {
	e := newEnv(t)
	person := e.deviceLogin(devidp.DemoEmail, devidp.DemoPassword)
	e.settle()
	anon := &browser{t: t, e: e, cookies: map[string]*http.Cookie{}}
	// A permission change announced meanwhile (the login's own tuples
	// reaching OpenFGA) rightly drops every cache: the check is made
	// again over a span no such change crossed.
	testkit.EventuallyWithin(t, 30*time.Second, func() (bool, error) {
		drops, _ := e.hub.AuthzCacheDrops()
		e.whoami(person.AccessToken)
		before := e.hub.CachedPrincipals()
		if resp, body := anon.do(http.MethodPost, "/auth/logout", publicURL, nil); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("an anonymous logout: %d %s, want 401", resp.StatusCode, body)
		}
		after := e.hub.CachedPrincipals()
		if d, _ := e.hub.AuthzCacheDrops(); d != drops {
			return false, nil
		}
		if before != 1 || after != 1 {
			t.Fatalf("remembered sessions after a whoami: %d, after an anonymous logout: %d; want 1 and 1", before, after)
		}
		return true, nil
	}, "a whoami and an anonymous logout with no permission change between")
	e.whoami(person.AccessToken)

	b, _, _ := webLogin(t, e, "/")
	if resp, body := b.do(http.MethodPost, "/auth/logout", publicURL, nil); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("a browser's own logout: %d %s", resp.StatusCode, body)
	}
}

// TestDevicePollingIsThrottled: polling the device token faster than the
// interval is answered slow_down (RFC 8628) without asking the issuer,
// and each poll is charged to the address's budget of device polls: past
// it the answer is 429.
func TestDevicePollingIsThrottled(t *testing.T) {
	e := newEnv(t, func(c *hub.Config) { c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")} })
	const addr = "203.0.113.30"
	_, b := e.do("POST", "/v1/auth/device", "", nil)
	var ds struct {
		DeviceCode string `json:"device_code"`
	}
	if err := json.Unmarshal(b, &ds); err != nil || ds.DeviceCode == "" {
		t.Fatalf("device start: %s %v", b, err)
	}
	poll := `{"device_code":"` + ds.DeviceCode + `"}`
	if code, _, tr := e.postFrom(addr, "/v1/auth/device/token", nil, poll); code != http.StatusBadRequest || tr.Error != "authorization_pending" {
		t.Fatalf("the first poll: %d %+v", code, tr)
	}
	if code, _, tr := e.postFrom(addr, "/v1/auth/device/token", nil, poll); code != http.StatusBadRequest || tr.Error != "slow_down" {
		t.Fatalf("a poll at once after it: %d %+v, want slow_down", code, tr)
	}
	for i := range 60 {
		code, h, tr := e.postFrom(addr, "/v1/auth/device/token", nil, poll)
		if code == http.StatusTooManyRequests {
			if h.Get("Retry-After") == "" || !strings.HasPrefix(tr.ErrorDescription, "too many device polls from "+addr) {
				t.Fatalf("the throttled poll: %v %+v", h, tr)
			}
			return
		}
		if code != http.StatusBadRequest || tr.Error != "slow_down" {
			t.Fatalf("poll %d: %d %+v", i+3, code, tr)
		}
	}
	t.Fatal("60 polls in a row faster than the interval were never throttled")
}
