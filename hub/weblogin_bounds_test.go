package hub_test

import (
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/droverhq/drover/hub"
)

// startWebLogin starts a dashboard login from addr (behind the trusted
// load balancer) and returns the status answered.
func (e *env) startWebLogin(addr, returnTo string) int {
	e.t.Helper()
	req, err := http.NewRequest(http.MethodGet, e.url+"/auth/login?return_to="+url.QueryEscape(returnTo), nil)
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("X-Forwarded-For", addr)
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestPendingWebLoginsAreBounded: logins started and never finished do
// not pile up: an address holds at most 20 pending at once (the next is
// refused 429), and the expired ones are gone once logins go on (each
// start prunes them), so the table holds only the live ones.
func TestPendingWebLoginsAreBounded(t *testing.T) {
	var skew atomic.Int64
	e := newEnv(t, func(c *hub.Config) {
		c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
		c.Now = func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	})
	const addr = "203.0.113.20"
	for i := range 20 {
		if code := e.startWebLogin(addr, "/"); code != http.StatusFound {
			t.Fatalf("login start %d: %d", i+1, code)
		}
	}
	if code := e.startWebLogin(addr, "/"); code != http.StatusTooManyRequests {
		t.Fatalf("a 21st pending login from one address: %d, want 429", code)
	}
	if code := e.startWebLogin("203.0.113.21", "/"); code != http.StatusFound {
		t.Fatalf("a login from another address: %d", code)
	}
	skew.Store(int64(11 * time.Minute)) // every pending login has expired
	if code := e.startWebLogin(addr, "/"); code != http.StatusFound {
		t.Fatalf("a login once the others expired: %d", code)
	}
	if n, err := e.st.Sessions.CountWebLogins(t.Context()); err != nil || n != 1 {
		t.Fatalf("pending logins after the expired ones were pruned: %d %v, want 1", n, err)
	}
}

// TestWebLoginRefusesAForeignOrOversizedReturn: return_to must be a path
// on the hub of at most 1024 bytes; anything else is refused 400 before a
// login is recorded.
func TestWebLoginRefusesAForeignOrOversizedReturn(t *testing.T) {
	e := newEnv(t)
	for _, ret := range []string{"https://evil.example/", "//evil.example/x", "evil.example", "/\\evil.example",
		"/" + strings.Repeat("a", 1024)} {
		if code := e.startWebLogin("", ret); code != http.StatusBadRequest {
			t.Errorf("return_to %.40q: %d, want 400", ret, code)
		}
	}
	if n, err := e.st.Sessions.CountWebLogins(t.Context()); err != nil || n != 0 {
		t.Errorf("pending logins recorded for refused starts: %d %v", n, err)
	}
	if code := e.startWebLogin("", "/"+strings.Repeat("a", 1023)); code != http.StatusFound {
		t.Errorf("a return_to of 1024 bytes: %d", code)
	}
}
