package local

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

func TestKillProcessesUnderStopsWorkloadsOfAMachineDir(t *testing.T) {
	root := t.TempDir()
	machine := filepath.Join(root, "machines", "m", "0")
	other := filepath.Join(root, "elsewhere")
	for _, d := range []string{machine, other} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	start := func(dir string, args ...string) *exec.Cmd {
		cmd := exec.Command("sleep", append([]string{"300"}, args...)...)
		cmd.Dir = dir
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} // like a daemonised workload
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		return cmd
	}
	inDir := start(machine)
	outside := start(other)
	done := make(chan struct{})
	go func() { inDir.Wait(); close(done) }()
	if left := KillProcessesUnder(filepath.Join(root, "machines"), 2*time.Second); left != 0 {
		t.Fatalf("%d processes left under the machine dir", left)
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the workload in the machine dir still runs")
	}
	if err := outside.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("a process outside the machine dir was killed: %v", err)
	}
}
