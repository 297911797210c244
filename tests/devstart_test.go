package tests

import (
	"bytes"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// holdDefaults listens on droverd dev's default addresses, where it can,
// until the test ends: a shared host's other servers. A default another
// process holds already is taken all the same.
func holdDefaults(t *testing.T) {
	t.Helper()
	for _, a := range []string{"127.0.0.1:17070", "127.0.0.1:17072", "127.0.0.1:17080", "127.0.0.1:17090"} {
		if ln, err := net.Listen("tcp", a); err == nil {
			t.Cleanup(func() { ln.Close() })
		}
	}
}

// runDevQuick runs `droverd dev` with args, expecting it to refuse within
// 20 s, and returns its exit code and output.
func runDevQuick(t *testing.T, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(filepath.Join(binaries(t), "droverd"), append([]string{"dev"}, args...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	start := time.Now()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
		t.Logf("droverd dev %v: exit %d after %s", args, cmd.ProcessState.ExitCode(), time.Since(start).Round(time.Millisecond))
		return cmd.ProcessState.ExitCode(), out.String()
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatalf("droverd dev %v still ran after 20 s, want a refusal at once:\n%s", args, out.String())
		return 0, ""
	}
}

// TestDevStartPicksFreePortsAndKeepsThem (issue 34, first start and
// recovery): droverd dev on a host whose default ports are taken starts on
// free ones, prints them and writes them to dev.json; a later start of
// that state dir with another address refuses at once, naming the flag,
// both addresses and --reset, its error first, before any log line; with
// --reset it starts afresh on the new address.
func TestDevStartPicksFreePortsAndKeepsThem(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs real processes (PostgreSQL, hub, two spokes)")
	}
	holdDefaults(t)
	root := postgresRoot(t, "drover-devstart-")
	state := filepath.Join(root, "state")
	s := startDevStackIn(t, state, filepath.Join(root, "dev.log"))
	a := s.info.Addresses
	for flag, def := range map[string]string{"hub-listen": "127.0.0.1:17080", "idp-listen": "127.0.0.1:17090",
		"east-listen": "127.0.0.1:17070", "west-listen": "127.0.0.1:17072"} {
		if a[flag] == "" || a[flag] == def {
			t.Errorf("dev.json's %s is %q, want a free port instead of the default %s, in use", flag, a[flag], def)
		}
	}
	if s.info.HubURL != "https://"+a["hub-listen"] || s.info.Controllers[0].URL != "https://"+a["east-listen"] ||
		s.info.Controllers[1].URL != "https://"+a["west-listen"] || !strings.Contains(s.info.Issuer, a["idp-listen"]) {
		t.Errorf("dev.json's URLs are not on its addresses: %+v", s.info)
	}
	if out := s.tail(); !strings.Contains(out, "hub:          "+s.info.HubURL) || !strings.Contains(out, "east "+s.info.Controllers[0].URL) {
		t.Errorf("droverd dev did not print its addresses:\n%s", out)
	}
	s.stop()

	other := pairAddr(t)
	code, out := runDevQuick(t, "--state-dir", state, "--east-listen", other)
	if code != 2 || !strings.HasPrefix(out, "ERROR ") {
		t.Fatalf("droverd dev on the state with another --east-listen: exit %d, want 2 with the error first:\n%s", code, out)
	}
	for _, want := range []string{"--east-listen " + other + " (the state has " + a["east-listen"] + ")", "--reset"} {
		if !strings.Contains(out, want) {
			t.Errorf("the refusal does not say %q:\n%s", want, out)
		}
	}

	// --reset starts afresh on the new address (without it the recorded
	// addresses refuse the flag, as above). The old dev.json goes first:
	// the new one is what startDevStackIn waits for.
	if err := os.Remove(filepath.Join(state, "dev.json")); err != nil {
		t.Fatal(err)
	}
	s = startDevStackIn(t, state, filepath.Join(root, "dev-reset.log"), "--reset", "--east-listen", other)
	if got := s.info.Addresses["east-listen"]; got != other {
		t.Errorf("after --reset --east-listen %s, dev.json's east-listen is %s", other, got)
	}
	s.stop()
}

// TestDevStartOnABusyPortLeavesNoState: droverd dev given an address in
// use refuses at once, naming the flag, and records nothing, so that the
// next start, with other flags, is not bound to the first one's addresses.
func TestDevStartOnABusyPortLeavesNoState(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs droverd")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	state := filepath.Join(postgresRoot(t, "drover-devstart-"), "state")
	code, out := runDevQuick(t, "--state-dir", state, "--hub-listen", ln.Addr().String())
	if code != 2 || !strings.HasPrefix(out, "ERROR --hub-listen "+ln.Addr().String()+": ") || !strings.Contains(out, "in use") {
		t.Fatalf("droverd dev --hub-listen on a port in use: exit %d, want 2 naming the flag:\n%s", code, out)
	}
	if _, err := os.Stat(filepath.Join(state, "addresses.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the refused start recorded addresses: %v", err)
	}
}

// TestDevStateDirThePostgresUserCannotEnter: as root, droverd dev on a
// state dir under a directory the postgres user cannot traverse refuses
// at once, naming that directory, instead of waiting for PostgreSQL.
func TestDevStateDirThePostgresUserCannotEnter(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs droverd")
	}
	if os.Geteuid() != 0 {
		t.Skip("PostgreSQL runs as another user only as root")
	}
	private := postgresRoot(t, "drover-devstart-private-")
	if err := os.Chmod(private, 0o700); err != nil {
		t.Fatal(err)
	}
	code, out := runDevQuick(t, "--state-dir", filepath.Join(private, "state"))
	if code != 2 || !strings.HasPrefix(out, "ERROR --state-dir ") || !strings.Contains(out, "who cannot enter "+private) {
		t.Fatalf("droverd dev under a 0700 root directory: exit %d:\n%s", code, out)
	}
}
