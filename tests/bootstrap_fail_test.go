package tests

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/droverhq/drover/tests/testkit"
)

// TestFailedBootstrapLeavesNothing (issue 34, first start and recovery): a
// bootstrap whose controller cannot start (its port is taken) stops what it
// started and removes the data dir it made, so that the same bootstrap on
// a free port then succeeds.
func TestFailedBootstrapLeavesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs real processes")
	}
	d := newDroverCLI(t)
	dataDir := filepath.Join(d.store, "controllers", "retry")
	t.Cleanup(func() { killLeftover(dataDir) })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, errs, code := d.run("bootstrap", "retry", "--listen", ln.Addr().String(), "--timeout", "60s")
	if code == 0 || !strings.Contains(errs, "address already in use") {
		t.Fatalf("bootstrap on a port in use: exit %d, want the controller's own words:\n%s", code, errs)
	}
	if _, err := os.Stat(dataDir); !os.IsNotExist(err) {
		t.Errorf("the failed bootstrap left its data dir %s (%v); it said:\n%s", dataDir, err, errs)
	}
	if left := processesNaming(dataDir); len(left) > 0 {
		t.Errorf("processes left after the failed bootstrap: %v", left)
	}
	// A controller that does not answer in time is killed, and its data
	// dir goes too.
	_, errs, code = d.run("bootstrap", "retry", "--listen", pairAddr(t), "--timeout", "1ms")
	if code == 0 || !strings.Contains(errs, "did not become ready in 1ms") {
		t.Fatalf("bootstrap with --timeout 1ms: exit %d\n%s", code, errs)
	}
	if _, err := os.Stat(dataDir); !os.IsNotExist(err) {
		t.Errorf("the timed-out bootstrap left its data dir %s (%v)", dataDir, err)
	}
	if left := processesNaming(dataDir); len(left) > 0 {
		t.Errorf("processes left after the timed-out bootstrap: %v", left)
	}
	d.ok("bootstrap", "retry", "--listen", pairAddr(t))
	d.ok("kill-controller", "retry", "-y")
}

// TestKillControllerOfADirectoryOnly: a controller whose directory is in
// the client store's controllers directory but that the store does not
// know (an interrupted bootstrap, a store entry removed by hand) blocks a
// bootstrap of its name, which says so, and kill-controller stops its
// process and removes its directory.
func TestKillControllerOfADirectoryOnly(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs real processes")
	}
	d := newDroverCLI(t)
	dataDir := filepath.Join(d.store, "controllers", "orphan")
	t.Cleanup(func() { killLeftover(dataDir) })
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		t.Fatal(err)
	}
	node := exec.Command(filepath.Join(binaries(t), "droverd"), "spoke", "--bootstrap", "--name", "orphan",
		"--data-dir", dataDir, "--listen", pairAddr(t))
	node.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := node.Start(); err != nil {
		t.Fatal(err)
	}
	go node.Wait() //nolint:errcheck // reaped; the test checks it is gone
	pid := node.Process.Pid
	testkit.EventuallyWithin(t, time.Minute, func() (bool, error) {
		_, err := os.Stat(filepath.Join(dataDir, "controller.json"))
		return err == nil, nil
	}, "droverd wrote its credential")

	_, errs, code := d.run("bootstrap", "orphan", "--listen", pairAddr(t))
	if code == 0 || !strings.Contains(errs, "'drover kill-controller orphan' stops and removes it") {
		t.Errorf("bootstrap over a directory-only controller: exit %d\n%s", code, errs)
	}
	if _, errs, code := d.run("destroy-controller", "orphan", "-y"); code == 0 || !strings.Contains(errs, "kill-controller orphan") {
		t.Errorf("destroy-controller of a directory-only controller: exit %d\n%s", code, errs)
	}
	d.ok("kill-controller", "orphan", "-y")
	if alive(pid) {
		t.Errorf("droverd (pid %d) still runs after kill-controller", pid)
	}
	if _, err := os.Stat(dataDir); !os.IsNotExist(err) {
		t.Errorf("data dir left behind: %v", err)
	}
	if _, errs, code := d.run("kill-controller", "nosuch", "-y"); code == 0 || !strings.Contains(errs, `controller "nosuch" not found`) {
		t.Errorf("kill-controller of an unknown name: exit %d\n%s", code, errs)
	}
}
