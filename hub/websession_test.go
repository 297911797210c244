package hub_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/droverhq/drover/authz"
	"github.com/droverhq/drover/hub/devidp"
)

// browser is a dashboard's view of the hub: it keeps the cookies the hub
// sets (by name; the test server is plain HTTP, so a cookie jar would drop
// the Secure ones) and sends an Origin.
type browser struct {
	t       *testing.T
	e       *env
	cookies map[string]*http.Cookie
}

func (b *browser) do(method, path, origin string, body any, header ...string) (*http.Response, []byte) {
	b.t.Helper()
	var rd io.Reader
	if body != nil {
		j, _ := json.Marshal(body)
		rd = bytes.NewReader(j)
	}
	req, _ := http.NewRequestWithContext(b.t.Context(), method, b.e.url+path, rd)
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	for _, c := range b.cookies {
		if strings.HasPrefix(path, c.Path) {
			req.AddCookie(&http.Cookie{Name: c.Name, Value: c.Value})
		}
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	for _, c := range resp.Cookies() {
		if c.MaxAge < 0 {
			delete(b.cookies, c.Name)
		} else {
			b.cookies[c.Name] = c
		}
	}
	return resp, out
}

// TestBrowserSession drives the dashboard's login end to end against the
// development issuer (authorization code + PKCE, the issuer's login form
// filled as a person would), then uses the session cookies as a browser
// does: reads, a change from the hub's origin with the CSRF header and
// refused from another or without the header,
// a websocket upgrade refused from another origin, a refresh that rotates
// the refresh cookie, and a logout that ends the session.
func TestBrowserSession(t *testing.T) {
	e := newEnv(t)
	b, back, to := webLogin(t, e, "/models?m=prod#apps")
	if to != "/models?m=prod#apps" {
		t.Fatalf("after the login the browser went to %q", to)
	}
	access, refresh := b.cookies["__Host-drover_session"], b.cookies["__Secure-drover_refresh"]
	if access == nil || refresh == nil || !access.Secure || !access.HttpOnly || access.SameSite != http.SameSiteLaxMode ||
		access.Path != "/" || !refresh.Secure || !refresh.HttpOnly || refresh.SameSite != http.SameSiteStrictMode || refresh.Path != "/auth" {
		t.Fatalf("session cookies %+v %+v", access, refresh)
	}
	// The same code cannot be exchanged twice.
	if resp, body := (&browser{t: t, e: e, cookies: map[string]*http.Cookie{}}).do(http.MethodGet,
		"/auth/callback?"+back.RawQuery, "", nil); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("the callback replayed: %d %s", resp.StatusCode, body)
	}

	resp, body := b.do(http.MethodGet, "/v1/whoami", "", nil)
	var who struct{ ID, Email string }
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &who) != nil || who.Email != bob[0] {
		t.Fatalf("whoami with the session cookie: %d %s", resp.StatusCode, body)
	}
	if resp.Header.Get("X-Content-Type-Options") != "nosniff" || resp.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("the hub's own answer: %v", resp.Header)
	}
	e.grant(authz.UserObject(who.ID), authz.Administrator, authz.OrgObject("acme"))
	e.settle()
	group := map[string]string{"org": "acme", "name": "web"}
	for _, origin := range []string{"", "https://evil.test", "http://hub.test"} {
		if resp, body := b.do(http.MethodPost, "/v1/groups", origin, group); resp.StatusCode != http.StatusForbidden ||
			!strings.Contains(string(body), "cross-origin") {
			t.Fatalf("a change with the cookie from origin %q: %d %s", origin, resp.StatusCode, body)
		}
	}
	if resp, body := b.do(http.MethodPost, "/v1/groups", publicURL, group); resp.StatusCode != http.StatusForbidden ||
		!strings.Contains(string(body), "X-Drover-CSRF") {
		t.Fatalf("a change with the cookie from the hub's origin without the CSRF header: %d %s", resp.StatusCode, body)
	}
	if resp, body := b.do(http.MethodPost, "/v1/groups", publicURL, group, "X-Drover-CSRF", "1"); resp.StatusCode != http.StatusCreated {
		t.Fatalf("a change with the cookie from the hub's origin: %d %s", resp.StatusCode, body)
	}
	watch := "/v1/models/" + uuid.NewString() + "/watch"
	upgrade := []string{"Connection", "Upgrade", "Upgrade", "websocket", "Sec-WebSocket-Version", "13",
		"Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="}
	if resp, body := b.do(http.MethodGet, watch, "https://evil.test", nil, upgrade...); resp.StatusCode != http.StatusForbidden ||
		!strings.Contains(string(body), "cross-origin") {
		t.Fatalf("a websocket with the cookie from another origin: %d %s", resp.StatusCode, body)
	}
	if resp, body := b.do(http.MethodGet, watch, publicURL, nil, upgrade...); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("a websocket with the cookie from the hub's origin, for no model: %d %s", resp.StatusCode, body)
	}

	// Refresh: only from the hub's origin; it rotates both cookies.
	if resp, _ := b.do(http.MethodPost, "/auth/refresh", "https://evil.test", nil); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("refresh from another origin: %d", resp.StatusCode)
	}
	old := *refresh
	if resp, body := b.do(http.MethodPost, "/auth/refresh", publicURL, nil); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("refresh: %d %s", resp.StatusCode, body)
	}
	if b.cookies["__Secure-drover_refresh"].Value == old.Value || b.cookies["__Host-drover_session"].Value == access.Value {
		t.Fatal("refresh did not rotate the cookies")
	}
	stale := &browser{t: t, e: e, cookies: map[string]*http.Cookie{old.Name: &old}}
	if resp, _ := stale.do(http.MethodPost, "/auth/refresh", publicURL, nil); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("the rotated-out refresh cookie: %d", resp.StatusCode)
	}

	// Logout: only from the hub's origin; the cookies are cleared and the
	// refresh token no longer renews anything.
	if resp, _ := b.do(http.MethodPost, "/auth/logout", "https://evil.test", nil); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("logout from another origin: %d", resp.StatusCode)
	}
	last, session := *b.cookies["__Secure-drover_refresh"], *b.cookies["__Host-drover_session"]
	if resp, _ := b.do(http.MethodPost, "/auth/logout", publicURL, nil); resp.StatusCode != http.StatusNoContent || len(b.cookies) != 0 {
		t.Fatalf("logout: %d, cookies left %v", resp.StatusCode, b.cookies)
	}
	after := &browser{t: t, e: e, cookies: map[string]*http.Cookie{last.Name: &last}}
	if resp, _ := after.do(http.MethodPost, "/auth/refresh", publicURL, nil); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("refresh after logout: %d", resp.StatusCode)
	}
	// A copy of the session cookie no longer works either.
	if code, _ := e.do(http.MethodGet, "/v1/whoami", session.Value, nil); code != http.StatusUnauthorized {
		t.Fatalf("the session cookie's token after logout: %d", code)
	}

	// A browser that lost its refresh cookie still ends its session.
	c, _, _ := webLogin(t, e, "/")
	token := c.cookies["__Host-drover_session"].Value
	delete(c.cookies, "__Secure-drover_refresh")
	if resp, _ := c.do(http.MethodPost, "/auth/logout", publicURL, nil); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("logout without the refresh cookie: %d", resp.StatusCode)
	}
	if code, _ := e.do(http.MethodGet, "/v1/whoami", token, nil); code != http.StatusUnauthorized {
		t.Fatalf("the session cookie's token after a logout without the refresh cookie: %d", code)
	}
}

// webLogin logs bob in as the dashboard does, asking to come back to
// returnTo, and returns the browser holding the session cookies, the
// issuer's redirect to the callback, and where the callback sent it.
func webLogin(t *testing.T, e *env, returnTo string) (b *browser, back *url.URL, to string) {
	t.Helper()
	b = &browser{t: t, e: e, cookies: map[string]*http.Cookie{}}
	resp, _ := b.do(http.MethodGet, "/auth/login?return_to="+url.QueryEscape(returnTo), "", nil)
	if resp.StatusCode != http.StatusFound {
		t.Fatalf("login: %d", resp.StatusCode)
	}
	back, err := devidp.SignIn(t.Context(), resp.Header.Get("Location"), bob[0], bob[1])
	if err != nil {
		t.Fatalf("signing in at the issuer: %v", err)
	}
	if back.Scheme+"://"+back.Host+back.Path != publicURL+"/auth/callback" || back.Query().Get("code") == "" {
		t.Fatalf("the issuer sent the browser to %s", back)
	}
	resp, body := b.do(http.MethodGet, "/auth/callback?"+back.RawQuery, "", nil)
	if resp.StatusCode != http.StatusFound {
		t.Fatalf("callback: %d %s", resp.StatusCode, body)
	}
	return b, back, resp.Header.Get("Location")
}

// TestWebLoginReturnsOnlyToTheHub: after the login the browser goes back
// to the path it asked for (/ when it asked for none); a return_to that
// would take it off the hub, as a browser reads the path (it takes a
// backslash for a slash and drops tabs and line breaks), is refused 400
// when the login starts.
func TestWebLoginReturnsOnlyToTheHub(t *testing.T) {
	e := newEnv(t)
	for _, c := range []struct{ ask, want string }{{"/audit", "/audit"}, {"/models?org=acme", "/models?org=acme"}, {"", "/"}} {
		if _, _, to := webLogin(t, e, c.ask); to != c.want {
			t.Errorf("return_to %q: the browser went to %q, want %q", c.ask, to, c.want)
		}
	}
	for _, ask := range []string{"//evil.example/x", "/\\evil.example", "/\\/evil.example", "/\t/evil.example",
		"/\n/evil.example", "https://evil.example/", "evil.example"} {
		if code := e.startWebLogin("", ask); code != http.StatusBadRequest {
			t.Errorf("return_to %q: %d, want 400", ask, code)
		}
	}
}

// TestWebLoginFinishesOnlyWhereItStarted: a link to the callback with
// someone's code and state (login CSRF) does not log the browser that
// follows it in as that someone, whether it started no login or one of
// its own; the browser that started the login still finishes it.
func TestWebLoginFinishesOnlyWhereItStarted(t *testing.T) {
	e := newEnv(t)
	start := func() (*browser, *url.URL) {
		b := &browser{t: t, e: e, cookies: map[string]*http.Cookie{}}
		resp, _ := b.do(http.MethodGet, "/auth/login", "", nil)
		back, err := devidp.SignIn(t.Context(), resp.Header.Get("Location"), bob[0], bob[1])
		if err != nil {
			t.Fatal(err)
		}
		return b, back
	}
	attacker, link := start()
	other, _ := start() // a victim in the middle of a login of their own
	for name, victim := range map[string]*browser{"a fresh browser": {t: t, e: e, cookies: map[string]*http.Cookie{}}, "one logging in": other} {
		resp, body := victim.do(http.MethodGet, "/auth/callback?"+link.RawQuery, "", nil)
		if resp.StatusCode != http.StatusUnauthorized || victim.cookies["__Host-drover_session"] != nil {
			t.Fatalf("%s following another's callback link: %d %s, cookies %v", name, resp.StatusCode, body, victim.cookies)
		}
	}
	if resp, body := attacker.do(http.MethodGet, "/auth/callback?"+link.RawQuery, "", nil); resp.StatusCode != http.StatusFound ||
		attacker.cookies["__Host-drover_session"] == nil || attacker.cookies["__Host-drover_login"] != nil {
		t.Fatalf("the browser that started the login: %d %s, cookies %v", resp.StatusCode, body, attacker.cookies)
	}
}
