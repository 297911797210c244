package tests

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/droverhq/drover/tests/testkit"
)

// TestCLIShell runs drover with no arguments on a pseudo-terminal: the
// interactive shell shows controller:model in its prompt, runs commands,
// completes command names and leaves on exit.
func TestCLIShell(t *testing.T) {
	d := newDroverCLI(t)
	dataDir := filepath.Join(t.TempDir(), "ctl")
	t.Cleanup(func() { killLeftover(dataDir) })
	d.ok("bootstrap", "sh", "--data-dir", dataDir, "--listen", testkit.FreeAddr(t), "--raft-listen", testkit.FreeAddr(t))
	d.ok("add-model", "demo")
	t.Cleanup(func() { d.run("kill-controller", "sh", "-y") })

	cmd := exec.Command(d.bin)
	cmd.Env = d.env()
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 120})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := &testkit.SyncBuffer{} // what drover writes to its terminal
	copied := make(chan struct{})
	go func() { _, _ = io.Copy(out, f); close(copied) }() // ends when the pty closes
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	waitFor := func(what string) {
		t.Helper()
		testkit.EventuallyWithin(t, 30*time.Second, func() (bool, error) {
			return strings.Contains(out.String(), what), nil
		}, "shell output never showed %q; got:\n%s", what, out)
	}
	waitFor("sh:demo> ")
	if _, err := f.WriteString("models\r"); err != nil {
		t.Fatal(err)
	}
	waitFor("demo*")
	// Tab completes a command name.
	if _, err := f.WriteString("who\t"); err != nil {
		t.Fatal(err)
	}
	waitFor("whoami")
	if _, err := f.WriteString("\r"); err != nil {
		t.Fatal(err)
	}
	waitFor("Access:")
	if _, err := f.WriteString("exit\r"); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("shell exited with %v\n%s", err, out)
		}
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("shell did not exit; output:\n%s", out)
	}
	f.Close()
	<-copied
	if _, err := os.Stat(filepath.Join(d.store, "shell_history")); err != nil {
		t.Errorf("shell history not saved: %v", err)
	}
}
