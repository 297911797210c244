package hub_test

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/hub"
	"github.com/droverhq/drover/hub/devidp"
	"github.com/droverhq/drover/hub/internal/hubtest"
	"github.com/droverhq/drover/tests/testkit"
)

// newServedEnv runs a hub as production does: Run serves HTTPS with the
// certificate it generates in its state dir (and runs the outbox and the
// indexer), and its public URL is where controllers fetch its JWKS.
func newServedEnv(t *testing.T, opts ...func(*hub.Config)) *env {
	t.Helper()
	listen := testkit.FreeAddr(t)
	stateDir := t.TempDir()
	ready := make(chan struct{})
	cfg := hub.Config{DSN: hubtest.DSN(t), OpenFGAURL: hubtest.OpenFGAURL(), OpenFGAStore: hubtest.StoreName(),
		OIDCIssuer: idp.URL(), OIDCClientID: devidp.HubClientID, Listen: listen, StateDir: stateDir, DefaultOrg: "acme", Ready: ready}
	for _, o := range opts {
		o(&cfg)
	}
	s, err := hub.New(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	serveUntilReady(t, "hub", ready, s.Run, true, s.Close)
	ca, err := os.ReadFile(hub.CACertPath(stateDir))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	t.Cleanup(hc.CloseIdleConnections)
	return &env{t: t, hub: s, st: s.Store(), url: "https://" + listen, client: hc}
}

// TestRegisterWithJoinToken registers a controller started without
// --hub-url: the administrator creates a hub token on it, the hub hands
// the token, its URL and CA to the controller, and models placed on it are
// then reached through the hub.
func TestRegisterWithJoinToken(t *testing.T) {
	e := newServedEnv(t)
	tok := e.hubAdmin()

	listen, cred := runSpoke(t, "east", nil)
	admin, err := api.NewClient(api.ClientConfig{Addresses: []string{listen}, CACert: []byte(cred.CACert),
		User: cred.User, Password: cred.Password, Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(admin.Close)
	testkit.EventuallyWithin(t, 30*time.Second, func() (bool, error) {
		_, err := admin.WhoAmI(t.Context())
		return err == nil, nil
	}, "controller bootstrapped")

	body := func(name, joinToken string) map[string]string {
		return map[string]string{"name": name, "url": "https://" + listen, "ca-cert": cred.CACert,
			"region": "eu-west-1", "cloud": "lab", "join-token": joinToken}
	}
	wantError := func(what string, b map[string]string, status int, text string) {
		t.Helper()
		code, out := e.do("POST", "/v1/controllers", tok, b)
		if code != status || !strings.Contains(string(out), text) {
			t.Fatalf("%s: %d %s (want %d with %q)", what, code, out, status, text)
		}
	}
	wantError("no token, no trust", body("east", ""), http.StatusBadRequest, "create-hub-token")
	wantError("forged token", body("east", "drv1.e30.AAAA"), http.StatusBadRequest, "refused the join token")
	spaced := body("east", "")
	spaced["region"] = "East US"
	wantError("a region no cloud spells so", spaced, http.StatusBadRequest, `region \"East US\"`)

	ht, err := admin.CreateHubToken(t.Context(), 0)
	if err != nil {
		t.Fatal(err)
	}
	code, out := e.do("POST", "/v1/controllers", tok, body("east", ht.Token))
	if code != http.StatusCreated {
		t.Fatalf("register with a join token: %d %s", code, out)
	}
	trust, err := admin.HubTrust(t.Context())
	if err != nil || trust.URL != e.url || trust.Source != api.HubTrustFromToken || !strings.Contains(trust.CACert, "BEGIN CERTIFICATE") {
		t.Fatalf("controller's hub trust: %+v %v", trust, err)
	}
	wantError("reused token", body("east", ht.Token), http.StatusBadRequest, "already used")

	// The token never reaches the audit log.
	code, out = e.do("GET", "/v1/audit?operation=add-controller", tok, nil)
	if code != http.StatusOK {
		t.Fatalf("audit: %d %s", code, out)
	}
	var audit struct{ Entries []map[string]any }
	if err := json.Unmarshal(out, &audit); err != nil || len(audit.Entries) < 4 {
		t.Fatalf("audit entries: %s (%v)", out, err)
	}
	if strings.Contains(string(out), ht.Token) || strings.Contains(string(out), "drv1.") {
		t.Fatalf("the join token is in the audit log: %s", out)
	}

	// A model placed on the controller is reached through the hub.
	code, out = e.do("POST", "/v1/models", tok, map[string]string{"name": "prod", "region": "eu-west-1"})
	if code != http.StatusCreated {
		t.Fatalf("add model: %d %s", code, out)
	}
	var m struct{ UUID string }
	if err := json.Unmarshal(out, &m); err != nil || m.UUID == "" {
		t.Fatalf("add model answer %s: %v", out, err)
	}
	code, out = e.do("GET", "/v1/models/"+m.UUID+"/status", tok, nil)
	var st api.FullStatus
	if err := json.Unmarshal(out, &st); code != http.StatusOK || err != nil || st.Model.Name != "prod" {
		t.Fatalf("status through the hub: %d %s %v", code, out, err)
	}
	// The controller was told where the hub placed it: its status names the
	// same cloud and region as the hub's listing.
	if st.Model.Cloud != "lab" || st.Model.Region != "eu-west-1" {
		t.Errorf("status through the hub: model in %s/%s, want lab/eu-west-1", st.Model.Cloud, st.Model.Region)
	}
	if info, err := admin.ControllerInfo(t.Context()); err != nil || info.Cloud != "lab" || info.Region != "eu-west-1" {
		t.Errorf("controller info: %+v %v, want lab/eu-west-1", info, err)
	}
	code, out = e.do("GET", "/v1/models/"+m.UUID, tok, nil)
	if code != http.StatusOK || !strings.Contains(string(out), `"cloud":"lab"`) || !strings.Contains(string(out), `"region":"eu-west-1"`) {
		t.Errorf("the hub's index entry: %d %s", code, out)
	}

	// Once the controller stops trusting the hub, the proxy is refused.
	if err := admin.RemoveHubTrust(t.Context()); err != nil {
		t.Fatal(err)
	}
	if code, out = e.do("GET", "/v1/models/"+m.UUID+"/status", tok, nil); code < 400 {
		t.Fatalf("status after the trust was removed: %d %s", code, out)
	}
}
