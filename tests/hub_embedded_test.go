package tests

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/cli"
	"github.com/droverhq/drover/tests/testkit"
)

// TestHubEmbeddedDefaults: droverd hub given only a state dir runs on its
// embedded PostgreSQL, OpenFGA and issuer; a service account logs in with
// the secret the hub wrote for it; Ctrl-C stops it cleanly; a restart on
// the same state dir keeps the secret and what the account may do. Started
// again with --key-encryption-key, it seals its signing keys and the
// session signed before goes on; started then without it, it refuses to
// start, saying why.
func TestHubEmbeddedDefaults(t *testing.T) {
	if testing.Short() {
		t.Skip("runs droverd hub with a private PostgreSQL")
	}
	bin := binaries(t)
	root := postgresRoot(t, "drover-hub-embedded-")
	state := filepath.Join(root, "state")
	listen, idp := testkit.FreeAddr(t), testkit.FreeAddr(t)
	caFile := filepath.Join(state, "hub-ca.crt")

	args := []string{"--state-dir", state, "--listen", listen, "--dev-identity", "--idp-listen", idp, "--service-account", "ci=acme", "--default-org", "acme"}
	run := func(extra ...string) (stop func()) {
		t.Helper()
		return runHub(t, bin, filepath.Join(root, "hub.log"), caFile, listen, append(extra, args...)...)
	}
	secret := func() string {
		t.Helper()
		var accounts []struct {
			ClientID     string `json:"client-id"`
			ClientSecret string `json:"client-secret"`
			Org          string `json:"org"`
		}
		b, err := os.ReadFile(filepath.Join(state, "service-accounts.json"))
		if err == nil {
			err = json.Unmarshal(b, &accounts)
		}
		if err != nil || len(accounts) != 1 || accounts[0].ClientID != "ci" || accounts[0].Org != "acme" || accounts[0].ClientSecret == "" {
			t.Fatalf("service-accounts.json: %s (%v)", b, err)
		}
		return accounts[0].ClientSecret
	}

	stop := run()
	first := secret()
	ci := newDroverCLI(t)
	ci.ok("login", "https://"+listen, "--ca", caFile, "--client-id", "ci", "--client-secret", first)
	if out := ci.ok("whoami"); !strings.Contains(out, "User:        ci\n") {
		t.Errorf("whoami:\n%s", out)
	}
	// The account's membership of its organization is a tuple in OpenFGA,
	// which keeps it in the hub's database across a restart.
	orgs := func() string { t.Helper(); return organizations(t, ci, caFile, listen) }
	if got := orgs(); got != "acme" {
		t.Errorf("organizations before the restart: %q, want acme", got)
	}
	stop()

	kek := filepath.Join(root, "kek")
	if err := os.WriteFile(kek, []byte("a key-encryption secret of 32+ bytes\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	stop = run("--key-encryption-key", kek)
	// The session of the first run, signed with a key stored plain, is
	// good after that key was sealed.
	if got := orgs(); got != "acme" {
		t.Errorf("organizations after the restart, with the first run's session: %q, want acme", got)
	}
	if again := secret(); again != first {
		t.Errorf("the service account's secret changed across a restart")
	}
	ci.ok("login", "--client-id", "ci", "--client-secret", first)
	if got := orgs(); got != "acme" {
		t.Errorf("organizations after the restart: %q, want acme", got)
	}
	stop()
	logs, _ := os.ReadFile(filepath.Join(root, "hub.log"))
	if strings.Contains(string(logs), "OpenFGA lacks the hub's tuples") {
		t.Errorf("the embedded OpenFGA lost its tuples across the restart:\n%s", logs)
	}
	if !strings.Contains(string(logs), "sealed a signing key with the key-encryption secret") {
		t.Errorf("the hub did not say it sealed its signing key:\n%s", logs)
	}

	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, filepath.Join(bin, "droverd"), append([]string{"hub"}, args...)...).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "sealed with key-encryption secret") || !strings.Contains(string(out), "--key-encryption-key") {
		t.Errorf("droverd hub without the secret its keys are sealed with: %v\n%s", err, out)
	}
}

// TestHubReplicasShareEmbeddedOpenFGA: two droverd hub processes on one
// database, neither given --openfga-url, each run an OpenFGA on it and so
// decide alike: an account that first logs in through one is a member of
// its organization through the other.
func TestHubReplicasShareEmbeddedOpenFGA(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two droverd hub processes")
	}
	bin := binaries(t)
	root := postgresRoot(t, "drover-hub-replicas-")
	pg := testkit.StartPostgres(t)
	if err := pg.CreateDatabase(t.Context(), "hub"); err != nil {
		t.Fatal(err)
	}
	dsn := pg.DSN("hub")
	one, two, idp := testkit.FreeAddr(t), testkit.FreeAddr(t), testkit.FreeAddr(t)
	state := filepath.Join(root, "one")
	caFile := filepath.Join(state, "hub-ca.crt")
	common := []string{"--dsn", dsn, "--service-account", "ci=acme", "--service-account", "ops=acme", "--default-org", "acme",
		"--public-url", "https://" + one}
	defer runHub(t, bin, filepath.Join(root, "one.log"), caFile, one,
		append([]string{"--state-dir", state, "--listen", one, "--dev-identity", "--idp-listen", idp}, common...)...)()
	// The second replica: the first one's issuer and TLS identity, as
	// replicas behind one address have.
	defer runHub(t, bin, filepath.Join(root, "two.log"), caFile, two,
		append([]string{"--state-dir", filepath.Join(root, "two"), "--listen", two, "--oidc-issuer", "http://" + idp + "/dex",
			"--oidc-client-id", "drover-hub", "--tls-cert", filepath.Join(state, "hub.crt"), "--tls-key", filepath.Join(state, "hub.key"),
			"--tls-ca", caFile}, common...)...)()

	var accounts []struct {
		ClientID     string `json:"client-id"`
		ClientSecret string `json:"client-secret"`
	}
	b, err := os.ReadFile(filepath.Join(state, "service-accounts.json"))
	if err == nil {
		err = json.Unmarshal(b, &accounts)
	}
	if err != nil || len(accounts) != 2 {
		t.Fatalf("service-accounts.json: %s (%v)", b, err)
	}
	for i, a := range accounts {
		// Each account logs in for the first time through a different
		// replica, and is then asked for through the other.
		first, other := one, two
		if i == 1 {
			first, other = two, one
		}
		cl := newDroverCLI(t)
		cl.ok("login", "https://"+first, "--ca", caFile, "--client-id", a.ClientID, "--client-secret", a.ClientSecret)
		testkit.EventuallyWithin(t, 30*time.Second, func() (bool, error) {
			return organizations(t, cl, caFile, other) == "acme", nil
		}, "%s, who logged in through %s, a member of acme through %s", a.ClientID, first, other)
	}
}

// runHub starts droverd hub with args, its output in logPath, waits until
// it answers /readyz at listen (TLS pinned to caFile), and returns what
// stops it as Ctrl-C does, checking that it stops cleanly.
func runHub(t *testing.T, bin, logPath, caFile, listen string, args ...string) (stop func()) {
	t.Helper()
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(bin, "droverd"), append([]string{"hub"}, args...)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); logf.Close(); close(exited) }()
	logTail := func() string { b, _ := os.ReadFile(logPath); return string(b) }
	testkit.EventuallyWithin(t, 2*time.Minute, func() (bool, error) {
		select {
		case <-exited:
			return false, fmt.Errorf("droverd hub exited: %s\n%s", cmd.ProcessState, logTail())
		default:
		}
		return readyz(caFile, listen), nil
	}, "droverd hub ready at %s", listen)
	return func() {
		t.Helper()
		cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
			if !cmd.ProcessState.Success() {
				t.Errorf("droverd hub did not stop cleanly on Ctrl-C: %s\n%s", cmd.ProcessState, logTail())
			}
		case <-time.After(30 * time.Second):
			cmd.Process.Signal(syscall.SIGKILL)
			<-exited
			t.Errorf("droverd hub still ran 30 s after Ctrl-C\n%s", logTail())
		}
	}
}

// organizations lists, through the hub at addr, the organizations the
// account logged in as d belongs to.
func organizations(t *testing.T, d *droverCLI, caFile, addr string) string {
	t.Helper()
	st, err := (&cli.Store{Dir: d.store}).Load()
	if err != nil || st.Accounts["hub"] == nil {
		t.Fatalf("client store: %v", err)
	}
	ca, _ := os.ReadFile(caFile)
	cl, err := api.NewClient(api.ClientConfig{Addresses: []string{addr}, CACert: ca, Token: st.Accounts["hub"].Token, Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var out struct {
		Organizations []struct{ Name string } `json:"organizations"`
	}
	if err := cl.Call(t.Context(), http.MethodGet, "/v1/organizations", nil, nil, &out); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, o := range out.Organizations {
		names = append(names, o.Name)
	}
	return strings.Join(names, ",")
}

// readyz reports whether the hub at addr answers /readyz (PostgreSQL and
// OpenFGA up) over TLS pinned to the CA in caFile.
func readyz(caFile, addr string) bool {
	ca, err := os.ReadFile(caFile)
	if err != nil {
		return false
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return false
	}
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	defer hc.CloseIdleConnections()
	resp, err := hc.Get("https://" + addr + "/readyz")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}
