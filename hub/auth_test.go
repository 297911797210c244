package hub_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/authz"
	"github.com/droverhq/drover/hub"
	"github.com/droverhq/drover/hub/devidp"
	"github.com/droverhq/drover/hub/internal/store"
	"github.com/droverhq/drover/tests/testkit"
)

type tokenResp struct {
	AccessToken      string `json:"access_token"`
	RefreshToken     string `json:"refresh_token"`
	Error            string `json:"error"`
	ErrorDescription string `json:"error_description"`
}

func (e *env) form(path string, v url.Values) (int, tokenResp) {
	e.t.Helper()
	resp, err := http.PostForm(e.url+path, v)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	var tr tokenResp
	_ = json.NewDecoder(resp.Body).Decode(&tr)
	return resp.StatusCode, tr
}

func (e *env) whoami(tok string) store.Identity {
	e.t.Helper()
	code, b := e.do("GET", "/v1/whoami", tok, nil)
	if code != 200 {
		e.t.Fatalf("whoami: %d %s", code, b)
	}
	var id store.Identity
	if err := json.Unmarshal(b, &id); err != nil {
		e.t.Fatal(err)
	}
	return id
}

// deviceLogin logs in through the hub with the device flow, the person's
// side completed against the real Dex, and returns the hub's session.
func (e *env) deviceLogin(email, password string) tokenResp {
	t := e.t
	t.Helper()
	code, b := e.do("POST", "/v1/auth/device", "", nil)
	if code != 200 {
		t.Fatalf("device start: %d %s", code, b)
	}
	var ds struct {
		DeviceCode              string `json:"device_code"`
		VerificationURIComplete string `json:"verification_uri_complete"`
		Interval                int    `json:"interval"`
	}
	if err := json.Unmarshal(b, &ds); err != nil || ds.DeviceCode == "" {
		t.Fatalf("device start: %s %v", b, err)
	}
	// Before approval the hub relays authorization_pending.
	code, b = e.do("POST", "/v1/auth/device/token", "", map[string]string{"device_code": ds.DeviceCode})
	if code != 400 || !strings.Contains(string(b), "authorization_pending") {
		t.Fatalf("poll before approval: %d %s", code, b)
	}
	if err := devidp.ApproveDevice(t.Context(), ds.VerificationURIComplete, email, password); err != nil {
		t.Fatal(err)
	}
	// Poll at the issuer's interval, as RFC 8628 requires (polling faster
	// earns slow_down).
	tick := time.NewTicker(time.Duration(ds.Interval) * time.Second)
	defer tick.Stop()
	var sess tokenResp
	for sess.AccessToken == "" {
		select {
		case <-t.Context().Done():
			t.Fatal("device login never completed")
		case <-tick.C:
		}
		code, b = e.do("POST", "/v1/auth/device/token", "", map[string]string{"device_code": ds.DeviceCode})
		if code == 200 {
			if err := json.Unmarshal(b, &sess); err != nil {
				t.Fatal(err)
			}
		} else if !strings.Contains(string(b), "authorization_pending") && !strings.Contains(string(b), "slow_down") {
			t.Fatalf("poll: %d %s", code, b)
		}
	}
	return sess
}

// TestDeviceLoginThroughHub: the CLI's flow, with the user's side
// completed programmatically against the real Dex; then refresh rotation.
func TestDeviceLoginThroughHub(t *testing.T) {
	e := newEnv(t)
	sess := e.deviceLogin(devidp.DemoEmail, devidp.DemoPassword)
	id := e.whoami(sess.AccessToken)
	if id.Email != devidp.DemoEmail || id.Org != "acme" || id.Kind != store.KindUser {
		t.Fatalf("whoami: %+v", id)
	}
	// Refresh rotates: the new token works, the old refresh token does not.
	code, next := e.form("/v1/auth/token", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {sess.RefreshToken}})
	if code != 200 || next.AccessToken == "" || next.RefreshToken == sess.RefreshToken {
		t.Fatalf("refresh: %d %+v", code, next)
	}
	e.whoami(next.AccessToken)
	if code, r := e.form("/v1/auth/token", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {sess.RefreshToken}}); code != 400 || r.Error != "invalid_grant" {
		t.Fatalf("reused refresh token: %d %+v", code, r)
	}
	// The login is audited.
	entries, _, err := e.st.Audit.Query(t.Context(), store.AuditQuery{All: true, Operation: "login-device", Limit: 10})
	if err != nil || len(entries) != 1 || entries[0].IdentityID != id.ID {
		t.Fatalf("login audit: %+v %v", entries, err)
	}
}

// TestClientCredentialsLogin: service accounts log in with their client id
// and secret, checked by the issuer, and land in their organization.
func TestClientCredentialsLogin(t *testing.T) {
	e := newEnv(t)
	for _, c := range []struct {
		sa  devidp.Client
		org string
	}{{saAcme, "acme"}, {saGlobex, "globex"}} {
		code, tr := e.form("/v1/auth/token", url.Values{"grant_type": {"client_credentials"},
			"client_id": {c.sa.ID}, "client_secret": {c.sa.Secret}})
		if code != 200 || tr.AccessToken == "" || tr.RefreshToken != "" {
			t.Fatalf("%s: %d %+v", c.sa.ID, code, tr)
		}
		if id := e.whoami(tr.AccessToken); id.Kind != store.KindServiceAccount || id.Org != c.org {
			t.Fatalf("%s whoami: %+v", c.sa.ID, id)
		}
	}
	for name, v := range map[string]url.Values{
		"wrong secret":   {"client_id": {saAcme.ID}, "client_secret": {"nope"}},
		"unregistered":   {"client_id": {devidp.HubClientID}, "client_secret": {"x"}},
		"missing secret": {"client_id": {saAcme.ID}},
	} {
		v.Set("grant_type", "client_credentials")
		if code, tr := e.form("/v1/auth/token", v); code != 401 || tr.Error != "invalid_client" {
			t.Errorf("%s: %d %+v", name, code, tr)
		}
	}
	if code, tr := e.form("/v1/auth/token", url.Values{"grant_type": {"password"}}); code != 400 || tr.Error != "unsupported_grant_type" {
		t.Errorf("password grant: %d %+v", code, tr)
	}
}

// TestWebLoginRedirectsWithPKCE checks the start of the dashboard flow.
func TestWebLoginRedirectsWithPKCE(t *testing.T) {
	e := newEnv(t)
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(e.url + "/auth/login?return_to=/audit")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, _ := url.Parse(resp.Header.Get("Location"))
	q := loc.Query()
	if resp.StatusCode != 302 || !strings.HasPrefix(loc.String(), idp.URL()) || q.Get("code_challenge_method") != "S256" ||
		q.Get("code_challenge") == "" || q.Get("nonce") == "" || q.Get("redirect_uri") != publicURL+"/auth/callback" {
		t.Fatalf("login redirect: %d %s", resp.StatusCode, loc)
	}
	// A callback with an unknown state is refused.
	resp, err = c.Get(e.url + "/auth/callback?state=forged&code=x")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Fatalf("forged callback: %d", resp.StatusCode)
	}
}

// TestMetricsOnAnInternalAddress: with MetricsListen (droverd hub
// --metrics-listen) the metrics are served there alone, not to anyone who
// reaches the hub's public address.
func TestMetricsOnAnInternalAddress(t *testing.T) {
	internal := testkit.FreeAddr(t)
	e := newServedEnv(t, func(c *hub.Config) { c.MetricsListen = internal })
	if code, b := e.do(http.MethodGet, "/metrics", "", nil); code != http.StatusNotFound {
		t.Fatalf("/metrics at the public address: %d %.100s", code, b)
	}
	resp, err := http.Get("http://" + internal + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), "drover_hub_") {
		t.Fatalf("/metrics at the internal address: %d %.200s", resp.StatusCode, b)
	}
	if resp, err := http.Get("http://" + internal + "/v1/models"); err != nil || resp.StatusCode != http.StatusNotFound {
		t.Fatalf("the API at the internal address: %v %v", resp, err)
	}
}

// TestMetricsOnlyToTheMachineItself (issue 26, finding 12): without
// MetricsListen the public address serves /metrics to the hub's machine
// alone: a request relayed by a proxy (a forwarding header) is answered
// 404, as one from another address is (internal/loopback's test).
func TestMetricsOnlyToTheMachineItself(t *testing.T) {
	e := newEnv(t)
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, e.url+"/metrics", nil)
	req.Header.Set("X-Forwarded-For", "198.51.100.1")
	hc := e.client
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound || strings.Contains(string(b), "drover_hub_") {
		t.Fatalf("/metrics relayed by a proxy: %d %.100s", resp.StatusCode, b)
	}
}

func TestHealthMetricsJWKS(t *testing.T) {
	e := newEnv(t)
	for _, p := range []string{"/healthz", "/readyz", "/metrics", "/.well-known/jwks.json"} {
		if code, b := e.do("GET", p, "", nil); code != 200 {
			t.Errorf("%s: %d %s", p, code, b)
		}
	}
	_, b := e.do("GET", "/.well-known/jwks.json", "", nil)
	if !strings.Contains(string(b), `"alg":"ES256"`) {
		t.Errorf("jwks: %s", b)
	}
}

// TestWhoamiAccess: whoami answers in Juju's controller access levels, from
// the caller's grants: superuser for the hub's administrators, login for
// everyone else, an organization's administrator included.
func TestWhoamiAccess(t *testing.T) {
	e := newEnv(t)
	root, orgAdmin, plain := e.user("root", "acme"), e.user("boss", "acme"), e.user("pat", "acme")
	e.grant(authz.UserObject(root.ID), authz.Administrator, authz.HubObject())
	e.grant(authz.UserObject(orgAdmin.ID), authz.Administrator, authz.OrgObject("acme"))
	e.settle()
	for _, c := range []struct {
		id   store.Identity
		want string
	}{{root, "superuser"}, {orgAdmin, "login"}, {plain, "login"}} {
		code, b := e.do("GET", "/v1/whoami", e.token(c.id, time.Minute, ""), nil)
		var who api.WhoAmI
		if err := json.Unmarshal(b, &who); code != 200 || err != nil {
			t.Fatalf("%s: %d %s %v", c.id.Subject, code, b, err)
		}
		if who.Access != c.want || who.User != c.id.Name() {
			t.Errorf("%s: whoami %+v, want user %q access %q", c.id.Subject, who, c.id.Name(), c.want)
		}
	}
}
