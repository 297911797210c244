package tests

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/cli"
	"github.com/droverhq/drover/hub/devidp"
	"github.com/droverhq/drover/tests/testkit"
)

// devInfo is the part of `droverd dev`'s dev.json the tests read.
type devInfo struct {
	HubURL    string            `json:"hub-url"`
	CAFile    string            `json:"ca-file"`
	Issuer    string            `json:"oidc-issuer"`
	Addresses map[string]string `json:"addresses"`
	// User is the demo person (a hub administrator), Reader a member of
	// the same organization with no grants of its own, OtherOrgUser a
	// member of another organization.
	User            devUser `json:"user"`
	Reader          devUser `json:"reader"`
	OtherOrgUser    devUser `json:"other-org-user"`
	DashboardURL    string  `json:"dashboard-url"`
	ServiceAccounts []struct {
		ClientID     string `json:"client-id"`
		ClientSecret string `json:"client-secret"`
		Org          string `json:"org"`
	} `json:"service-accounts"`
	Controllers []struct {
		Name    string `json:"name"`
		Region  string `json:"region"`
		URL     string `json:"url"`
		DataDir string `json:"data-dir"`
	} `json:"controllers"`
}

// devUser is a person of droverd dev's issuer.
type devUser struct {
	Email    string `json:"email"`
	Password string `json:"password"`
	Org      string `json:"org"`
}

// devStack is a `droverd dev` process: private PostgreSQL, embedded
// OpenFGA and Dex, the hub and the spokes east and west.
type devStack struct {
	t      *testing.T
	info   devInfo
	state  string
	log    string
	cmd    *exec.Cmd
	exited chan struct{}
}

// startDevStack runs the built `droverd dev` on free ports and waits for
// its dev.json. Cleanup interrupts it (Ctrl-C: spokes, hub, Dex, OpenFGA,
// PostgreSQL stop in order), then removes the spokes' local machines
// (agents, charm workloads, and as root the machines' users), then the
// state.
func startDevStack(t *testing.T) *devStack {
	t.Helper()
	root := postgresRoot(t, "drover-hub-e2e-")
	return startDevStackIn(t, filepath.Join(root, "state"), filepath.Join(root, "dev.log"),
		"--hub-listen", testkit.FreeAddr(t), "--idp-listen", testkit.FreeAddr(t),
		"--east-listen", pairAddr(t), "--west-listen", pairAddr(t), "--log-level", "warn")
}

// startDevStackIn runs the built `droverd dev --state-dir state` with args,
// its output in logPath, and waits for its dev.json, as startDevStack.
func startDevStackIn(t *testing.T, state, logPath string, args ...string) *devStack {
	t.Helper()
	bin := binaries(t)
	s := &devStack{t: t, state: state, log: logPath, exited: make(chan struct{})}
	for _, sp := range []string{"east", "west"} {
		dataDir := filepath.Join(state, "spoke-"+sp)
		t.Cleanup(func() {
			out, err := exec.Command(filepath.Join(bin, "droverd"), "teardown", "--data-dir", dataDir, "--grace", "5s", "--remove").CombinedOutput()
			if err != nil {
				t.Errorf("teardown %s: %v\n%s", sp, err, out)
			}
		})
	}
	logf, err := os.Create(s.log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logf.Close() })
	s.cmd = exec.Command(filepath.Join(bin, "droverd"), append([]string{"dev", "--state-dir", state}, args...)...)
	s.cmd.Stdout, s.cmd.Stderr = logf, logf
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { s.cmd.Wait(); close(s.exited) }()
	t.Cleanup(s.stop)
	testkit.EventuallyWithin(t, 2*time.Minute, func() (bool, error) {
		select {
		case <-s.exited:
			return false, fmt.Errorf("droverd dev exited: %s\n%s", s.cmd.ProcessState, s.tail())
		default:
		}
		b, err := os.ReadFile(filepath.Join(state, "dev.json"))
		if err != nil {
			return false, nil
		}
		return true, json.Unmarshal(b, &s.info)
	}, "droverd dev wrote dev.json")
	if len(s.info.ServiceAccounts) != 2 || len(s.info.Controllers) != 2 {
		t.Fatalf("dev.json: %+v", s.info)
	}
	// The hub seals its signing keys with a secret kept beside, not in,
	// its database.
	if fi, err := os.Stat(filepath.Join(state, "key-encryption-key")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("droverd dev's key-encryption secret: %v %v", fi, err)
	}
	return s
}

// postgresRoot is a directory for a test's private PostgreSQL, removed at
// its end. PostgreSQL runs as the postgres user, who must traverse the
// parents of its data dir: t.TempDir() is 0700, so this is a 0755 dir
// under /tmp.
func postgresRoot(t *testing.T, prefix string) string {
	t.Helper()
	root, err := os.MkdirTemp("/tmp", prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	return root
}

// stop interrupts droverd dev and waits for it; SIGKILL if it hangs.
func (s *devStack) stop() {
	if s.t.Failed() {
		s.t.Logf("droverd dev log:\n%s", s.tail())
		s.logWorkloads()
	}
	select {
	case <-s.exited:
		return
	default:
	}
	s.cmd.Process.Signal(os.Interrupt)
	select {
	case <-s.exited:
		if !s.cmd.ProcessState.Success() {
			s.t.Errorf("droverd dev did not stop cleanly on Ctrl-C: %s\n%s", s.cmd.ProcessState, s.tail())
		}
	case <-time.After(30 * time.Second):
		s.t.Errorf("droverd dev still runs 30s after Ctrl-C; killing it")
		s.cmd.Process.Signal(syscall.SIGKILL)
		<-s.exited
	}
}

func (s *devStack) tail() string {
	b, _ := os.ReadFile(s.log)
	if len(b) > 8000 {
		b = b[len(b)-8000:]
	}
	return string(b)
}

// logWorkloads prints the charm workloads' logs (after a failure).
func (s *devStack) logWorkloads() {
	filepath.WalkDir(s.state, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && (d.Name() == "server.log" || d.Name() == "hooks.log") {
			b, _ := os.ReadFile(path)
			if len(b) > 2000 {
				b = b[len(b)-2000:]
			}
			s.t.Logf("%s:\n%s", path, b)
		}
		return nil
	})
}

func (s *devStack) hubAddr() string { return strings.TrimPrefix(s.info.HubURL, "https://") }

// pairAddr returns a loopback address whose port and port+1 were both
// free: a spoke's raft listens on the API port + 1.
func pairAddr(t *testing.T) string {
	t.Helper()
	for range 50 {
		p := testkit.FreePort(t)
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p+1)))
		if err == nil {
			ln.Close()
			return net.JoinHostPort("127.0.0.1", strconv.Itoa(p))
		}
	}
	t.Fatal("no pair of free consecutive ports")
	return ""
}

// deviceLogin runs `drover login HUB` and completes the user's side of the
// device flow at the dev issuer, as a browser would.
func deviceLogin(t *testing.T, d *droverCLI, s *devStack) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, d.bin, "login", s.info.HubURL, "--ca", s.info.CAFile)
	cmd.Env = d.env()
	var errb bytes.Buffer
	cmd.Stderr = &errb
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	var verify string
	var lines []string
	for verify == "" && sc.Scan() {
		lines = append(lines, sc.Text())
		if u, ok := strings.CutPrefix(sc.Text(), "Open "); ok {
			verify = strings.TrimSpace(u)
		}
	}
	if verify == "" {
		cmd.Wait()
		t.Fatalf("drover login printed no verification URL:\n%s\n%s", strings.Join(lines, "\n"), errb.String())
	}
	if err := devidp.ApproveDevice(ctx, verify, s.info.User.Email, s.info.User.Password); err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("approve device login: %v", err)
	}
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("drover login: %v\n%s\n%s", err, strings.Join(lines, "\n"), errb.String())
	}
	return strings.Join(lines, "\n")
}

// hubClient is an API client for the hub with the session the CLI stored.
func hubClient(t *testing.T, d *droverCLI, s *devStack) *api.Client {
	t.Helper()
	st, err := (&cli.Store{Dir: d.store}).Load()
	if err != nil {
		t.Fatal(err)
	}
	acct := st.Accounts["hub"]
	if acct == nil || acct.Token == "" {
		t.Fatalf("no hub session in the client store: %+v", st.Accounts)
	}
	ca, err := os.ReadFile(s.info.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := api.NewClient(api.ClientConfig{Addresses: []string{s.hubAddr()}, CACert: ca, Token: acct.Token, Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// hubMetric reads one unlabelled metric from the hub's /metrics.
func hubMetric(t *testing.T, s *devStack, name string) float64 {
	t.Helper()
	ca, err := os.ReadFile(s.info.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}, Timeout: 30 * time.Second}
	defer hc.CloseIdleConnections()
	resp, err := hc.Get("https://" + s.hubAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("hub /metrics: %d %v", resp.StatusCode, err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s: %v", l, err)
			}
			return f
		}
	}
	t.Fatalf("hub /metrics has no %s", name)
	return 0
}

// statusOf reads a model's status through the hub with the CLI.
func statusOf(d *droverCLI, model string) (*api.FullStatus, error) {
	out, errs, code := d.run("status", "-m", model, "--format", "json")
	if code != 0 {
		return nil, fmt.Errorf("drover status: exit %d: %s", code, errs)
	}
	var fs api.FullStatus
	return &fs, json.Unmarshal([]byte(out), &fs)
}

// unitsActive reports whether every app has n units, all with workload
// status active.
func unitsActive(fs *api.FullStatus, n int, apps ...string) bool {
	for _, app := range apps {
		a, ok := fs.Applications[app]
		if !ok || len(a.Units) != n {
			return false
		}
		for _, u := range a.Units {
			if u.WorkloadStatus.Current != "active" {
				return false
			}
		}
	}
	return true
}

// describeStatus summarizes units for failure messages.
func describeStatus(fs *api.FullStatus) string {
	if fs == nil {
		return "(no status)"
	}
	var b strings.Builder
	for name, a := range fs.Applications {
		for un, u := range a.Units {
			fmt.Fprintf(&b, "  %s/%s: %s %q, agent %s\n", name, un, u.WorkloadStatus.Current, u.WorkloadStatus.Message, u.JujuStatus.Current)
		}
	}
	return b.String()
}

// apiStatus extracts the HTTP status of an API error (0 if none).
func apiStatus(err error) int {
	var ae *api.Error
	if errors.As(err, &ae) {
		return ae.Status
	}
	return 0
}
