package spoke

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/spoke/provider/local"
	"github.com/droverhq/drover/tests/testkit"
)

func buildFakeAgent(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "fakeagent")
	out, err := exec.Command("go", "build", "-o", bin, "./testdata/fakeagent").CombinedOutput()
	if err != nil {
		t.Fatalf("build fake agent: %v\n%s", err, out)
	}
	return bin
}

func agentPID(t *testing.T, dir string) int {
	b, err := os.ReadFile(filepath.Join(dir, "agent.pid"))
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return n
}

// agentRunning reports whether pid is a live agent (not a zombie) of the
// machine in dir. A bare kill(pid, 0) is true for a zombie, and on a busy
// host for another process that was given the PID again.
func agentRunning(pid int, dir string) bool {
	if pid <= 0 {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the command name, which is in parentheses.
	if i := bytes.LastIndexByte(stat, ')'); i < 0 || i+2 >= len(stat) || stat[i+2] == 'Z' {
		return false
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return err == nil && bytes.Contains(cmdline, []byte(filepath.Join(dir, "agent.conf")+"\x00"))
}

// TestLocalProvisioner: a deployed unit's machine gets a directory, an
// agent process that really connects, and a provider ID; the agent
// survives a spoke restart (re-adopted, same PID), is restarted after a
// crash, and is stopped with its machine.
func TestLocalProvisioner(t *testing.T) {
	bin := buildFakeAgent(t)
	cl := newTestCluster(t, 1)
	nd := cl.nodes[0]
	cl.stop(0)
	nd.cfg.NoProvisioner, nd.cfg.AgentBinary = false, bin
	cl.start(0)
	ctx := t.Context()
	client := cl.client(0)
	model := deployKV(t, client, "local")
	machines := local.DefaultDir(nd.cfg.DataDir) // as root, outside the data dir
	dir := filepath.Join(machines, model, "0")
	t.Cleanup(func() { // agents outlive the spoke by design; not the test
		if pid := agentPID(t, dir); agentRunning(pid, dir) {
			syscall.Kill(-pid, syscall.SIGKILL)
		}
		if err := local.DestroyMachines(machines, 5*time.Second); err != nil {
			t.Errorf("removing the machines: %v", err)
		}
	})
	testkit.EventuallyWithin(t, 30*time.Second, func() (bool, error) {
		mc, err := client.Model(model).Machine(ctx, "0")
		return err == nil && strings.HasPrefix(mc.ProviderID, "local:") && mc.ProviderID != "" &&
			mc.AgentStatus.Status == "started" && mc.InstanceStatus.Status == "running", nil
	}, "machine provisioned, its instance running and its agent connected")
	if _, err := os.Stat("/etc/os-release"); err == nil {
		if mc, err := client.Model(model).Machine(ctx, "0"); err != nil || !strings.Contains(mc.Base, "@") {
			t.Errorf("a local machine's base is the host's: %+v %v", mc, err)
		}
	}
	if fi, err := os.Stat(filepath.Join(dir, "agent.conf")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("agent.conf: %v %v", fi, err)
	}
	pid := agentPID(t, dir)
	if !agentRunning(pid, dir) {
		t.Fatalf("agent pid %d not running", pid)
	}

	// Restart the spoke: the running agent is re-adopted, not restarted.
	cl.restart(0)
	client = cl.client(0)
	if _, err := client.Model(model).Machine(ctx, "0", api.ReadOptions{Consistent: true}); err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyWithin(t, 20*time.Second, func() (bool, error) {
		return cl.nodes[0].srv.AgentConnections() == 1, nil
	}, "agent reconnected after the restart")
	if got := agentPID(t, dir); got != pid || !agentRunning(pid, dir) {
		t.Fatalf("agent not re-adopted: pid %d -> %d", pid, got)
	}

	// A crashed agent is started again.
	syscall.Kill(pid, syscall.SIGKILL)
	testkit.EventuallyWithin(t, 30*time.Second, func() (bool, error) {
		n := agentPID(t, dir)
		return n != pid && agentRunning(n, dir), nil
	}, "crashed agent restarted")
	pid = agentPID(t, dir)

	// Removing the unit and the machine stops the agent and cleans up.
	if err := client.Model(model).RemoveMachine(ctx, "0", true); err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyWithin(t, 30*time.Second, func() (bool, error) {
		_, err := client.Model(model).Machine(ctx, "0")
		_, serr := os.Stat(dir)
		return err != nil && os.IsNotExist(serr) && !agentRunning(pid, dir), nil
	}, "machine removed, agent stopped, directory gone")
}
