package tests

import (
	"os"
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

// TestAgentSurvivesKills (acceptance 3): an agent SIGKILLed in the middle
// of a hook, and the controller's raft leader SIGKILLed while agents are
// busy. Everything converges, no hook is lost, and every charm's observed
// sequence stays valid.
func TestAgentSurvivesKills(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs real processes")
	}
	e := newAgentEnv(t, 3)
	// The blocker's hooks (as root, its machine's user) must reach the
	// gate: beside the machine directory, not in t.TempDir (0700).
	gate := filepath.Join(filepath.Dir(e.machineDir), "gate")
	e.deploy(filepath.Join(repoRoot(t), "tests", "testdata", "charms", "blocker"), "blocker", 1, map[string]any{"gate": gate})

	// 1. kill -9 the machine agent while install blocks.
	var unit api.Unit
	testkit.EventuallyWithin(t, 60*time.Second, func() (bool, error) {
		us := appUnits(e.units(), "blocker")
		if len(us) != 1 || us[0].MachineID == "" {
			return false, nil
		}
		unit = us[0]
		return strings.Count(e.trace(unit), "begin install") == 1, nil
	}, "install started")
	pid := e.agentPID(unit)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// The provisioner restarts the agent; the interrupted hook counts as
	// failed and is retried (CHARM-CONTRACT §2.4).
	testkit.EventuallyWithin(t, 60*time.Second, func() (bool, error) {
		return e.agentPID(unit) != pid && strings.Count(e.trace(unit), "begin install") >= 2, nil
	}, "install re-run by the restarted agent")
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	e.waitUnits("blocker active", 60*time.Second, func(us map[string]api.Unit) bool {
		return allStatus(us, "blocker", 1, "active", "ready")
	})

	// 2. kill the raft leader while a peer cluster is forming and the
	// blocker scales up.
	e.deploy("cluster", "cluster", 3, nil)
	if _, err := e.cl.Model(e.model).Scale(e.ctx(10*time.Second), "blocker", 2); err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyWithin(t, 60*time.Second, func() (bool, error) {
		for _, u := range appUnits(e.units(), "cluster") {
			if len(e.hookLog(u)) > 0 {
				return true, nil
			}
		}
		return false, nil
	}, "cluster hooks running")
	leader := e.leaderNode()
	e.c.nodes[leader].kill()
	e.waitUnits("converged after the leader died", 180*time.Second, func(us map[string]api.Unit) bool {
		return clusterFormed(us, 3) && allStatus(us, "blocker", 2, "active", "ready")
	})
	e.c.restart(leader)

	// 3. power the first blocker's machine off (agent and workloads, as
	// droverd dev's Ctrl-C does) and let the provisioner power it on: a new
	// boot, so the started unit runs start again (reboot detection).
	starts := countLine(e.hookLog(unit), "start")
	if left := local.KillProcessesUnder(filepath.Join(e.machineDir, e.model, unit.MachineID), 10*time.Second); left != 0 {
		t.Fatalf("%d processes of machine %s left after the power-off", left, unit.MachineID)
	}
	testkit.EventuallyWithin(t, 90*time.Second, func() (bool, error) {
		return countLine(e.hookLog(unit), "start") > starts, nil
	}, "start run again after the machine's power cycle")

	// 4. juju-reboot --now from config-changed: the hook is killed, the
	// agent powers its machine off, the provider starts it again, and the
	// hook runs again from scratch before start (the new boot).
	starts, pid = countLine(e.hookLog(unit), "start"), e.agentPID(unit)
	begun := strings.Count(e.trace(unit), "begin config-changed")
	if _, err := e.cl.Model(e.model).SetApplicationConfig(e.ctx(10*time.Second), "blocker",
		api.ConfigChange{Set: map[string]any{"reboot": "now"}}); err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyWithin(t, 120*time.Second, func() (bool, error) {
		return strings.Count(e.trace(unit), "begin config-changed") >= begun+2 &&
			countLine(e.hookLog(unit), "start") > starts && e.agentPID(unit) != pid, nil
	}, "config-changed killed by juju-reboot --now, run again after the reboot, then start")
	e.waitUnits("blocker active after the reboots", 60*time.Second, func(us map[string]api.Unit) bool {
		return allStatus(us, "blocker", 2, "active", "ready")
	})

	for _, u := range e.units() {
		log := e.hookLog(u)
		if err := validSequence(log, false); err != nil {
			t.Errorf("%s: %v\n%s", u.Name, err, strings.Join(log, "\n"))
		}
		// No hook lost: each unit saw install, start and every peer.
		if !containsLine(log, "install") || !containsLine(log, "start") {
			t.Errorf("%s: install or start missing:\n%s", u.Name, strings.Join(log, "\n"))
		}
		for _, o := range appUnits(e.units(), u.Application) {
			if o.Name != u.Name && !containsLine(log, "peers-relation-joined "+o.Name) {
				t.Errorf("%s: never saw %s join:\n%s", u.Name, o.Name, strings.Join(log, "\n"))
			}
		}
	}
}

func containsLine(lines []string, want string) bool { return countLine(lines, want) > 0 }

func countLine(lines []string, want string) int {
	n := 0
	for _, l := range lines {
		if l == want {
			n++
		}
	}
	return n
}

func (e *agentEnv) trace(u api.Unit) string {
	data, _ := os.ReadFile(filepath.Join(e.unitDir(u), "charm", "trace.log"))
	return string(data)
}

// agentPID is the PID the provisioner recorded for u's machine agent.
func (e *agentEnv) agentPID(u api.Unit) int {
	data, err := os.ReadFile(filepath.Join(e.machineDir, e.model, u.MachineID, "agent.pid"))
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(data)))
	return pid
}

// leaderNode is the index of the raft leader.
func (e *agentEnv) leaderNode() int {
	e.t.Helper()
	var idx int
	testkit.EventuallyWithin(e.t, 30*time.Second, func() (bool, error) {
		info, err := e.cl.ControllerInfo(e.ctx(10*time.Second), api.ReadOptions{Consistent: true})
		if err != nil {
			return false, err
		}
		for _, n := range info.Nodes {
			for i, p := range e.c.nodes {
				if n.Leader && n.APIAddress == p.listen {
					idx = i
					return true, nil
				}
			}
		}
		return false, nil
	}, "find the raft leader")
	return idx
}
