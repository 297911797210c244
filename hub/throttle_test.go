package hub_test

import (
	"encoding/json"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"testing"

	"github.com/droverhq/drover/hub"
	"github.com/droverhq/drover/hub/internal/store"
)

// postFrom posts to path as if through a load balancer, for client addr:
// form values as a form, or a JSON body.
func (e *env) postFrom(addr, path string, form url.Values, body string) (int, http.Header, tokenResp) {
	e.t.Helper()
	ct, payload := "application/json", body
	if form != nil {
		ct, payload = "application/x-www-form-urlencoded", form.Encode()
	}
	req, err := http.NewRequest(http.MethodPost, e.url+path, strings.NewReader(payload))
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Content-Type", ct)
	req.Header.Set("X-Forwarded-For", "192.0.2.1, "+addr) // the first hop is the client's to write
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	var tr tokenResp
	_ = json.NewDecoder(resp.Body).Decode(&tr)
	return resp.StatusCode, resp.Header, tr
}

// TestFailedLoginsAreThrottled: behind a trusted load balancer, an address
// that failed 10 logins is refused 429 with Retry-After, before its
// credentials are checked (no more audit rows, no call to the issuer),
// even with the right ones, while other addresses log in; the refusal is
// audited once, under the client's address, as the failures are. Starting
// device logins is bounded the same way.
func TestFailedLoginsAreThrottled(t *testing.T) {
	e := newEnv(t, func(c *hub.Config) { c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")} })
	const attacker, neighbour = "203.0.113.9", "203.0.113.10"
	wrong := url.Values{"grant_type": {"client_credentials"}, "client_id": {saAcme.ID}, "client_secret": {"guess"}}
	right := url.Values{"grant_type": {"client_credentials"}, "client_id": {saAcme.ID}, "client_secret": {saAcme.Secret}}
	for i := range 10 {
		if code, _, tr := e.postFrom(attacker, "/v1/auth/token", wrong, ""); code != http.StatusUnauthorized || tr.Error != "invalid_client" {
			t.Fatalf("failed login %d: %d %+v", i+1, code, tr)
		}
	}
	for _, v := range []url.Values{wrong, right} {
		code, h, tr := e.postFrom(attacker, "/v1/auth/token", v, "")
		if code != http.StatusTooManyRequests || h.Get("Retry-After") == "" || tr.Error != "temporarily_unavailable" ||
			!strings.HasPrefix(tr.ErrorDescription, "too many failed logins from "+attacker+": try again in ") {
			t.Fatalf("a login after 10 failures: %d %v %+v", code, h, tr)
		}
	}
	if code, _, tr := e.postFrom(neighbour, "/v1/auth/token", right, ""); code != http.StatusOK || tr.AccessToken == "" {
		t.Fatalf("a login from another address: %d %+v", code, tr)
	}

	entries, _, err := e.st.Audit.Query(t.Context(), store.AuditQuery{All: true, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, en := range entries {
		count[en.Operation+" "+string(en.Result)+" "+en.RemoteAddr]++
		if en.Operation == "login-throttled" && en.Actor != saAcme.ID {
			t.Errorf("the refusal names %q, not the client id the logins named", en.Actor)
		}
	}
	if count["login-client-credentials denied "+attacker] != 10 || count["login-throttled denied "+attacker] != 1 ||
		count["login-client-credentials ok "+neighbour] != 1 {
		t.Errorf("audit: %v", count)
	}

	for i := range 30 {
		if code, _, tr := e.postFrom(neighbour, "/v1/auth/device", nil, "{}"); code != http.StatusOK {
			t.Fatalf("device login start %d: %d %+v", i+1, code, tr)
		}
	}
	if code, _, tr := e.postFrom(neighbour, "/v1/auth/device", nil, "{}"); code != http.StatusTooManyRequests ||
		!strings.HasPrefix(tr.ErrorDescription, "too many login starts from "+neighbour) {
		t.Fatalf("the 31st device login start: %d %+v", code, tr)
	}
}

// TestThrottleIsSharedByTheReplicas: behind a load balancer spreading an
// address's logins over two replicas, the address gets the hub's budget
// of failed logins, not each replica's: after 10 failures split between
// them, both refuse it. Before, each replica counted alone, and N
// replicas gave N times the budget.
func TestThrottleIsSharedByTheReplicas(t *testing.T) {
	e := newEnv(t, func(c *hub.Config) { c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")} })
	other := e.replica()
	const attacker = "203.0.113.77"
	wrong := url.Values{"grant_type": {"client_credentials"}, "client_id": {saAcme.ID}, "client_secret": {"guess"}}
	for i := range 10 {
		at := []*env{e, other}[i%2]
		if code, _, tr := at.postFrom(attacker, "/v1/auth/token", wrong, ""); code != http.StatusUnauthorized || tr.Error != "invalid_client" {
			t.Fatalf("failed login %d: %d %+v", i+1, code, tr)
		}
	}
	for name, at := range map[string]*env{"first": e, "second": other} {
		if code, h, tr := at.postFrom(attacker, "/v1/auth/token", wrong, ""); code != http.StatusTooManyRequests || h.Get("Retry-After") == "" {
			t.Errorf("the %s replica after 10 failures on both: %d %+v, want 429", name, code, tr)
		}
	}
}
