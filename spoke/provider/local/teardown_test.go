package local

import (
	"context"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/droverhq/drover/spoke/internal/state"
	"github.com/droverhq/drover/spoke/internal/state/stream"
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

// TestDestroyMachines: a gone controller's machines go with their
// processes, their users and their directories.
func TestDestroyMachines(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("machine users exist only under a controller running as root; run this test as root")
	}
	root, err := os.MkdirTemp("", "drover-destroy-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	dir := filepath.Join(root, "machines")
	home := filepath.Join(dir, "model", "0")
	if err := os.MkdirAll(home, 0o755); err != nil {
		t.Fatal(err)
	}
	name := UserName(root, "model", "0")
	u, err := ensureUser(name, home, "drover test machine")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { removeUser(name, home, time.Second) })
	// A workload of the machine's user that left the machine's directory.
	cmd := exec.Command("sleep", "300")
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true,
		Credential: &syscall.Credential{Uid: uint32(u.uid), Gid: uint32(u.gid), Groups: []uint32{}}}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-done })

	if err := DestroyMachines(dir, time.Second); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the machine user's workload still runs")
	}
	if u, err := lookupUser(name, home); u != nil || err != nil {
		t.Errorf("user %s left: %v %v", name, u, err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("machines' directory left: %v", err)
	}
}

// TestProvisionerLeavesNoEmptyDirs: a provisioner that stops with no
// machine left removes the directories it made (the machines' directory,
// emptied models' directories, the agent's copy), so controllers that come
// and go leave nothing on the host; a directory with a machine in it stays.
func TestProvisionerLeavesNoEmptyDirs(t *testing.T) {
	root, err := os.MkdirTemp("", "drover-provisioner-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	if err := os.Chmod(root, 0o755); err != nil { // reachable, as a machine root must be
		t.Fatal(err)
	}
	run := func(dir string) {
		store, err := state.NewStore()
		if err != nil {
			t.Fatal(err)
		}
		p, err := New(Config{Store: store, Events: stream.NewBroker(16), Dir: dir, AgentBinary: "drover-agent",
			Logger:  slog.New(slog.NewTextHandler(io.Discard, nil)),
			Propose: func(context.Context, state.MessageType, any) (any, uint64, error) { return nil, 0, nil }})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		cancel() // stopped at once: nothing to provision
		if err := p.Run(ctx); err != nil {
			t.Fatal(err)
		}
	}

	empty := filepath.Join(root, "empty")
	if err := os.MkdirAll(filepath.Join(empty, "model-gone"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(empty, agentBinDir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(empty, agentBinDir, "drover-agent"), []byte("copy"), 0o755); err != nil {
		t.Fatal(err)
	}
	run(empty)
	if _, err := os.Stat(empty); !os.IsNotExist(err) {
		entries, _ := os.ReadDir(empty)
		t.Errorf("the machines' directory of a stopped provisioner with no machine: %v, holding %v", err, entries)
	}

	kept := filepath.Join(root, "kept")
	machine := filepath.Join(kept, "model", "0")
	if err := os.MkdirAll(machine, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(machine, "agent.conf"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	run(kept)
	if _, err := os.Stat(filepath.Join(machine, "agent.conf")); err != nil {
		t.Errorf("a machine's directory went with the provisioner: %v", err)
	}
}

// TestDestroyMachinesSparesHandedOverModels: tearing down a controller's
// machines (kill-controller, after its models were drained to another
// controller of the host) leaves the machines of a handed-over model to
// the controller that serves them: their agent (even one that runs this
// controller's copy of the agent binary), their workloads, their boot
// markers and their directories.
func TestDestroyMachinesSparesHandedOverModels(t *testing.T) {
	e := newHandoverEnv(t, false)
	dir := e.dir("east")
	gone, kept := filepath.Join(dir, "model-gone", "0"), filepath.Join(dir, "model-kept", "0")
	for _, d := range []string{gone, kept, filepath.Join(dir, agentBinDir)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{gone, kept} {
		if err := os.WriteFile(filepath.Join(d, BootFile), []byte("boot host\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(filepath.Dir(kept), HandoverMarker), []byte("mig-1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	binCopy := filepath.Join(dir, agentBinDir, "drover-agent")
	data, err := os.ReadFile(e.bin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(binCopy, data, 0o755); err != nil {
		t.Fatal(err)
	}
	start := func(cwd, bin string, args ...string) <-chan struct{} {
		return startProcess(t, cwd, &syscall.SysProcAttr{Setsid: true}, bin, args...)
	}
	var keptUser string
	if os.Geteuid() == 0 { // machine users exist under a controller running as root
		keptUser = UserName("east-controller", "model-kept", "0")
		if _, err := ensureUser(keptUser, kept, "drover test machine"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { removeUser(keptUser, kept, time.Second) })
	}
	goneAgent := start(gone, binCopy, "machine", "--config", filepath.Join(gone, "agent.conf"))
	keptAgent := start("/", binCopy, "machine", "--config", filepath.Join(kept, "agent.conf"))
	keptWorkload := start(kept, e.bin)

	if err := DestroyMachines(dir, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	select {
	case <-goneAgent:
	case <-time.After(10 * time.Second):
		t.Fatal("the agent of a model still here survived")
	}
	for name, done := range map[string]<-chan struct{}{"agent": keptAgent, "workload": keptWorkload} {
		select {
		case <-done:
			t.Errorf("the handed-over machine's %s was stopped", name)
		default:
		}
	}
	if exists(filepath.Dir(gone)) {
		t.Error("the directory of a model still here was kept")
	}
	if keptUser != "" && userGone(keptUser) {
		t.Errorf("the handed-over machine's user %s was removed", keptUser)
	}
	for _, f := range []string{filepath.Join(kept, BootFile), filepath.Join(filepath.Dir(kept), HandoverMarker)} {
		if !exists(f) {
			t.Errorf("%s of the handed-over machine was removed", f)
		}
	}
}

// startProcess starts bin in dir with attr; the test's end kills it. The
// channel closes when it has exited.
func startProcess(t *testing.T, dir string, attr *syscall.SysProcAttr, bin string, args ...string) <-chan struct{} {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.SysProcAttr = attr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-done })
	return done
}
