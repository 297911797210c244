package spoke

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/gorilla/websocket"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/internal/version"
	"github.com/droverhq/drover/web"
)

// dashReq sends a request to node i with an optional JSON body and sets.
func (c *testCluster) dashReq(cl *http.Client, i int, method, path string, body any, set func(*http.Request)) (*http.Response, string) {
	c.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(c.t.Context(), method, c.origin(i)+path, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if set != nil {
		set(req)
	}
	resp, err := cl.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func (c *testCluster) origin(i int) string { return "https://" + c.nodes[i].cfg.Listen }

// TestControllerServesTheDashboard: a controller serves the web app at
// the paths its API leaves free, with the security headers and its own
// /config.json; the API's unknown paths stay JSON errors.
func TestControllerServesTheDashboard(t *testing.T) {
	c := newTestCluster(t, 1)
	cl := c.rawClientFrom("")
	admin := func(r *http.Request) { r.SetBasicAuth(c.cred.User, c.cred.Password) }
	for _, p := range []string{"/", "/models/admin/prod", "/controllers"} {
		resp, b := c.dashReq(cl, 0, "GET", p, nil, nil)
		if resp.StatusCode != 200 || !strings.Contains(b, "<title>Drover</title>") {
			t.Fatalf("GET %s: %s %.80s, want the app", p, resp.Status, b)
		}
		if resp.Header.Get("Content-Security-Policy") == "" || resp.Header.Get("X-Content-Type-Options") != "nosniff" ||
			resp.Header.Get("Referrer-Policy") != "no-referrer" {
			t.Errorf("GET %s: headers %v", p, resp.Header)
		}
	}
	// The app's own calls get no Basic challenge (the browser would hold
	// them behind its password prompt); other clients do.
	for _, x := range []struct{ mode, want string }{{"cors", ""}, {"same-origin", ""}, {"navigate", `Basic realm="drover"`}, {"", `Basic realm="drover"`}} {
		resp, b := c.dashReq(cl, 0, "GET", "/v1/whoami", nil, func(r *http.Request) {
			if x.mode != "" {
				r.Header.Set("Sec-Fetch-Mode", x.mode)
			}
		})
		if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") != x.want {
			t.Errorf("GET /v1/whoami with Sec-Fetch-Mode %q and no credential: %s, challenge %q %.80s; want 401, challenge %q",
				x.mode, resp.Status, resp.Header.Get("WWW-Authenticate"), b, x.want)
		}
	}
	resp, b := c.dashReq(cl, 0, "GET", "/config.json", nil, nil)
	var sc web.SiteConfig
	if err := json.Unmarshal([]byte(b), &sc); err != nil || resp.StatusCode != 200 {
		t.Fatalf("config.json: %s %s %v", resp.Status, b, err)
	}
	if sc != (web.SiteConfig{Mode: web.ModeController, Name: "test", Version: version.Version}) {
		t.Errorf("config.json: %+v", sc)
	}
	for _, x := range []struct {
		path string
		set  func(*http.Request)
		code int
	}{
		{"/v1/no-such-thing", admin, http.StatusNotFound},
		{"/v1/no-such-thing", nil, http.StatusNotFound},
		{"/auth/no-such-thing", nil, http.StatusNotFound},
		{"/v1/internal/no-such-thing", nil, http.StatusNotFound},
	} {
		resp, b := c.dashReq(cl, 0, "GET", x.path, nil, x.set)
		var ae api.Error
		if resp.StatusCode != x.code || json.Unmarshal([]byte(b), &ae) != nil || ae.Code == "" {
			t.Errorf("GET %s: %s %.80s, want a JSON %d", x.path, resp.Status, b, x.code)
		}
	}
}

// TestDashboardLoginOnAController: POST /auth/login checks the password
// as Basic auth does (and is throttled alike), from the controller's own
// origin, and sets a __Host- cookie that authenticates GETs and websocket
// upgrades on every node; unsafe requests and upgrades with the cookie
// must come from the controller's own origin; logout clears it.
func TestDashboardLoginOnAController(t *testing.T) {
	c := newTestCluster(t, 2)
	cl := c.rawClientFrom("")
	own := func(i int) func(*http.Request) {
		return func(r *http.Request) { r.Header.Set("Origin", c.origin(i)) }
	}
	evil := func(r *http.Request) { r.Header.Set("Origin", "https://evil.example") }

	if resp, b := c.dashReq(cl, 0, "POST", "/auth/login", map[string]string{"user": c.cred.User, "password": "wrong"}, own(0)); resp.StatusCode != http.StatusUnauthorized || len(resp.Cookies()) != 0 {
		t.Fatalf("wrong password: %s %s %v", resp.Status, b, resp.Cookies())
	}
	if resp, _ := c.dashReq(cl, 0, "POST", "/auth/login", map[string]string{"user": c.cred.User, "password": c.cred.Password}, evil); resp.StatusCode != http.StatusForbidden || len(resp.Cookies()) != 0 {
		t.Fatalf("cross-origin login: %s", resp.Status)
	}
	if resp, _ := c.dashReq(cl, 0, "POST", "/auth/login", map[string]string{"user": c.cred.User, "password": c.cred.Password, "extra": "x"}, own(0)); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("unknown field: %s", resp.Status)
	}
	resp, b := c.dashReq(cl, 0, "POST", "/auth/login", map[string]string{"user": c.cred.User, "password": c.cred.Password}, own(0))
	var lr struct{ User, Access string }
	if resp.StatusCode != 200 || json.Unmarshal([]byte(b), &lr) != nil || lr.User != c.cred.User || lr.Access != "superuser" {
		t.Fatalf("login: %s %s", resp.Status, b)
	}
	var session *http.Cookie
	for _, ck := range resp.Cookies() {
		if ck.Name == "__Host-drover_session" {
			session = ck
		}
	}
	if session == nil || !session.HttpOnly || !session.Secure || session.SameSite != http.SameSiteStrictMode || session.Path != "/" || session.Domain != "" || session.MaxAge <= 0 {
		t.Fatalf("session cookie: %+v", session)
	}
	withCookie := func(value string, origin func(*http.Request)) func(*http.Request) {
		return func(r *http.Request) {
			r.AddCookie(&http.Cookie{Name: session.Name, Value: value})
			if origin != nil {
				origin(r)
			}
		}
	}

	// GETs on both nodes, with or without an Origin.
	for i := range 2 {
		resp, b := c.dashReq(cl, i, "GET", "/v1/whoami", nil, withCookie(session.Value, nil))
		var who api.WhoAmI
		if resp.StatusCode != 200 || json.Unmarshal([]byte(b), &who) != nil || who.User != c.cred.User {
			t.Fatalf("whoami on node %d with the cookie: %s %s", i, resp.Status, b)
		}
	}
	// Unsafe methods: only from the controller's own origin.
	for name, origin := range map[string]func(*http.Request){"no Origin": nil, "another origin": evil, "node 0's origin on node 1": own(0)} {
		if resp, b := c.dashReq(cl, 1, "POST", "/v1/models", api.AddModelRequest{Name: "csrf"}, withCookie(session.Value, origin)); resp.StatusCode != http.StatusForbidden {
			t.Errorf("POST with the cookie, %s: %s %s", name, resp.Status, b)
		}
	}
	if resp, b := c.dashReq(cl, 1, "POST", "/v1/models", api.AddModelRequest{Name: "mine"}, withCookie(session.Value, own(1))); resp.StatusCode/100 != 2 {
		t.Errorf("POST with the cookie from the page's origin: %s %s", resp.Status, b)
	}
	// A token changed by one byte, or signed by no node, is nobody's.
	tampered := session.Value[:len(session.Value)-2] + "AA"
	if resp, _ := c.dashReq(cl, 0, "GET", "/v1/whoami", nil, withCookie(tampered, nil)); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("tampered cookie: %s", resp.Status)
	}

	// Websocket upgrades (the event stream): the cookie from the page's
	// origin opens it; from another origin it is refused before the
	// upgrade.
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM([]byte(c.cred.CACert))
	dialer := websocket.Dialer{TLSClientConfig: &tls.Config{RootCAs: pool}}
	wsURL := "wss://" + c.nodes[0].cfg.Listen + "/v1/events"
	hdr := func(origin string) http.Header {
		return http.Header{"Cookie": {session.Name + "=" + session.Value}, "Origin": {origin}}
	}
	conn, resp, err := dialer.DialContext(t.Context(), wsURL, hdr(c.origin(0)))
	if err != nil {
		t.Fatalf("websocket with the cookie: %v %v", err, resp)
	}
	conn.Close()
	if _, resp, err := dialer.DialContext(t.Context(), wsURL, hdr("https://evil.example")); err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("cross-origin websocket with the cookie: %v %v", err, resp)
	}

	// Logout: cross-origin refused; from the page, the cookie is cleared.
	if resp, _ := c.dashReq(cl, 0, "POST", "/auth/logout", nil, withCookie(session.Value, evil)); resp.StatusCode != http.StatusForbidden {
		t.Errorf("cross-origin logout: %s", resp.Status)
	}
	resp, _ = c.dashReq(cl, 0, "POST", "/auth/logout", nil, withCookie(session.Value, own(0)))
	if ck := resp.Cookies(); resp.StatusCode != http.StatusNoContent || len(ck) != 1 || ck[0].Name != session.Name || ck[0].MaxAge >= 0 {
		t.Errorf("logout: %s %v", resp.Status, resp.Cookies())
	}

	// Failed logins are throttled like failed Basic auth: the name's
	// budget runs out.
	var last int
	for range 12 {
		resp, _ := c.dashReq(cl, 0, "POST", "/auth/login", map[string]string{"user": "mallory", "password": "guess"}, own(0))
		if last = resp.StatusCode; last == http.StatusTooManyRequests {
			break
		}
	}
	if last != http.StatusTooManyRequests {
		t.Errorf("repeated failed logins: last %d, want 429", last)
	}
}
