package local

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/spoke/internal/state"
	"github.com/droverhq/drover/tests/testkit"
)

// adoptedEnv is a model migrated east → west: west supervises machine 0 in
// east's directory, and a workload of the machine runs in its area.
type adoptedEnv struct {
	*handoverEnv
	east, west *controller
	pe, pw     *Provisioner
	area, link string
	agent      int
	workload   *exec.Cmd
	done       chan struct{} // closed when the workload exited
	user       string        // the machine's user, as root
}

func newAdoptedEnv(t *testing.T, isolated bool) *adoptedEnv {
	e := &adoptedEnv{handoverEnv: newHandoverEnv(t, isolated), east: newController(t), west: newController(t)}
	e.pe = e.provisioner("east", e.east)
	e.area, e.agent = e.provisionOnEast(e.east, e.pe)
	e.east.migrate(e.west, "mig-1")
	reconcile(t, e.pe)
	e.pw = e.provisioner("west", e.west)
	reconcile(t, e.pw)
	e.link = filepath.Join(e.dir("west"), handoverModel, "0")
	if target, err := os.Readlink(e.link); err != nil || target != e.area {
		t.Fatalf("west's link %s: %q %v, want %s", e.link, target, err, e.area)
	}
	if agentIn(e.area) != e.agent {
		t.Fatal("the agent did not survive the handover")
	}
	e.user = UserName("east-controller", handoverModel, "0")
	e.workload = exec.Command(e.bin, "workload")
	e.workload.Dir = e.area
	e.workload.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if isolated {
		u, err := lookupUser(e.user, e.area)
		if err != nil || u == nil {
			t.Fatalf("the machine's user: %v %v", u, err)
		}
		e.workload.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(u.uid), Gid: uint32(u.gid), Groups: []uint32{}}
	}
	if err := e.workload.Start(); err != nil {
		t.Fatal(err)
	}
	e.done = make(chan struct{})
	go func() { e.workload.Wait(); close(e.done) }()
	t.Cleanup(func() { e.workload.Process.Kill(); <-e.done })
	return e
}

// poweredOff waits until the machine's agent and workload are gone.
func (e *adoptedEnv) poweredOff() {
	e.t.Helper()
	testkit.EventuallyWithin(e.t, 10*time.Second, func() (bool, error) {
		select {
		case <-e.done:
			return !alive(e.agent, filepath.Join(e.area, "agent.conf"), anyUID), nil
		default:
			return false, nil
		}
	}, "the adopted machine's agent and workload end")
}

func eachMode(t *testing.T, test func(t *testing.T, isolated bool)) {
	for _, isolated := range []bool{false, true} {
		name := map[bool]string{false: "shared", true: "isolated"}[isolated]
		t.Run(name, func(t *testing.T) { test(t, isolated) })
	}
}

// TestKillReachesAdoptedMachines: powering off west's machines powers off
// the machine it adopted in east's directory, agent and workload; the
// area and its link stay.
func TestKillReachesAdoptedMachines(t *testing.T) {
	eachMode(t, func(t *testing.T, isolated bool) {
		e := newAdoptedEnv(t, isolated)
		if left := KillProcessesUnder(e.dir("west"), 5*time.Second); left != 0 {
			t.Fatalf("%d processes left", left)
		}
		e.poweredOff()
		if !exists(filepath.Join(e.area, "agent.conf")) || !exists(e.link) {
			t.Fatal("a power-off removed the adopted machine's area or link")
		}
		if exists(filepath.Join(e.area, BootFile)) {
			t.Fatal("the powered-off machine's boot marker stayed")
		}
	})
}

// TestDestroyReachesAdoptedMachines: destroying both controllers' machines,
// in either order, leaves no process, directory or user of the migrated
// model's machine.
func TestDestroyReachesAdoptedMachines(t *testing.T) {
	eachMode(t, func(t *testing.T, isolated bool) {
		for _, order := range [][]string{{"west", "east"}, {"east", "west"}} {
			t.Run(order[0]+"-first", func(t *testing.T) {
				e := newAdoptedEnv(t, isolated)
				for i, name := range order {
					if err := DestroyMachines(e.dir(name), 5*time.Second); err != nil {
						t.Fatal(err)
					}
					if i == 0 && name == "east" {
						// The machine is west's: east's destroy spares it.
						if agentIn(e.area) != e.agent {
							t.Fatal("east's destroy touched west's machine")
						}
					}
				}
				e.poweredOff()
				for _, d := range []string{e.dir("east"), e.dir("west")} {
					if exists(d) {
						entries, _ := os.ReadDir(d)
						t.Errorf("%s is left, holding %v", d, entries)
					}
				}
				if isolated && !userGone(e.user) {
					t.Errorf("the machine's user %s is left", e.user)
				}
			})
		}
	})
}

// TestOrphanLinkRemoved: a link to an area whose machine is gone from the
// store goes, and its target stays.
func TestOrphanLinkRemoved(t *testing.T) {
	e := newAdoptedEnv(t, false)
	e.west.reap()
	reconcile(t, e.pw)
	if exists(e.link) {
		t.Fatal("the orphan link stayed")
	}
	if agentIn(e.area) != e.agent || !exists(filepath.Join(e.area, "agent.conf")) {
		t.Fatal("removing the orphan link touched its target")
	}
	select {
	case <-e.done:
		t.Fatal("removing the orphan link ended the workload")
	default:
	}
}

// TestHandedOnLinkRemoved: a model that west adopted and handed on to a
// third controller drops west's link: the machine is the third's.
func TestHandedOnLinkRemoved(t *testing.T) {
	e := newAdoptedEnv(t, false)
	e.west.must(state.QuiesceModelType, &state.QuiesceModelRequest{ModelUUID: handoverModel, MigrationID: "mig-2", Now: handoverTime})
	e.west.setPhase(api.MigrationSuccess)
	reconcile(t, e.pw)
	if exists(e.link) {
		t.Fatal("the link of a model handed on stayed")
	}
	if agentIn(e.area) != e.agent {
		t.Fatal("handing the model on touched its agent")
	}
	e.west.reap()
	reconcile(t, e.pw)
	if exists(filepath.Join(e.dir("west"), handoverModel)) {
		t.Fatal("the handed-on model's directory stayed in west's")
	}
}

// TestUntrustedLinksNotFollowed: a link under a controller's Dir to a
// directory that is no machine's area, or one in a directory others can
// write, is removed and never followed: what it points to keeps its
// processes and files.
func TestUntrustedLinksNotFollowed(t *testing.T) {
	e := newAdoptedEnv(t, os.Geteuid() == 0)
	// A directory that is no machine's area, with a process working in it.
	victim := filepath.Join(e.root, "victim")
	if err := os.MkdirAll(victim, 0o755); err != nil {
		t.Fatal(err)
	}
	keep := filepath.Join(victim, "keep")
	if err := os.WriteFile(keep, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	victimBoot := filepath.Join(victim, BootFile)
	if err := os.WriteFile(victimBoot, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	exited := startProcess(t, victim, &syscall.SysProcAttr{Setpgid: true}, e.bin, "victim")
	bad := filepath.Join(e.dir("west"), handoverModel, "7")
	if err := os.Symlink(victim, bad); err != nil {
		t.Fatal(err)
	}
	// The machine's real area, linked from a directory others can write.
	open := filepath.Join(e.dir("west"), "open-model")
	if err := os.Mkdir(open, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	planted := filepath.Join(open, "0")
	if err := os.Symlink(e.area, planted); err != nil {
		t.Fatal(err)
	}
	// East's Dir links nothing it adopted: its areas stay when west's
	// links are gone.
	if err := os.Remove(e.link); err != nil {
		t.Fatal(err)
	}

	if left := KillProcessesUnder(e.dir("west"), 5*time.Second); left != 0 {
		t.Fatalf("%d processes left", left)
	}
	if exists(bad) || exists(planted) {
		t.Fatal("an untrusted link was kept")
	}
	if !exists(victimBoot) {
		t.Fatal("a power-off followed a link to remove a boot marker")
	}
	select {
	case <-exited:
		t.Fatal("a process working in a link's non-area target was ended")
	case <-e.done:
		t.Fatal("a link in a directory others can write was followed")
	default:
	}
	if agentIn(e.area) != e.agent {
		t.Fatal("a link in a directory others can write was followed to the agent")
	}
	if err := os.Symlink(victim, bad); err != nil {
		t.Fatal(err)
	}
	if err := DestroyMachines(e.dir("west"), 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if !exists(keep) || !exists(filepath.Join(e.area, "agent.conf")) {
		t.Fatal("a destroy followed an untrusted link")
	}
}
