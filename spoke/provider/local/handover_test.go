package local

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/spoke/internal/state"
	"github.com/droverhq/drover/spoke/internal/state/format"
	"github.com/droverhq/drover/spoke/internal/state/stream"
	"github.com/droverhq/drover/tests/testkit"
)

const handoverModel = "5a0c2e4f-7b1d-4c3e-9f8a-2b6d4e1f3a5c"

var handoverTime = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// controller is one controller's store, applying what its provisioner
// proposes as raft would.
type controller struct {
	t     *testing.T
	fsm   *state.FSM
	index uint64
}

func newController(t *testing.T) *controller {
	return &controller{t: t, fsm: newFSM(t)}
}

func (c *controller) propose(_ context.Context, typ state.MessageType, req any) (any, uint64, error) {
	b, err := state.Encode(typ, req)
	if err != nil {
		return nil, 0, err
	}
	c.index++
	res := c.fsm.Apply(&raft.Log{Index: c.index, Type: raft.LogCommand, Data: b}).(state.ApplyResult)
	return res.Value, c.index, res.Err
}

func (c *controller) must(typ state.MessageType, req any) {
	c.t.Helper()
	if _, _, err := c.propose(c.t.Context(), typ, req); err != nil {
		c.t.Fatalf("%v: %v", typ, err)
	}
}

func (c *controller) machine(id string) *api.Machine {
	c.t.Helper()
	mc, err := c.fsm.Store().Snapshot().MachineByID(handoverModel, id)
	if err != nil && !errors.Is(err, api.ErrNotFound) {
		c.t.Fatal(err)
	}
	return mc
}

// rewrite replaces the store with its own snapshot, each record passed
// through edit (nil drops it): what the commands of later migration steps
// (the source's phase, its reap) do to the rows the provisioner reads.
func (c *controller) rewrite(edit func(format.RecordType, []byte) []byte) {
	c.t.Helper()
	var snap, out bytes.Buffer
	if err := state.WriteSnapshot(c.fsm.Store().Snapshot(), &snap); err != nil {
		c.t.Fatal(err)
	}
	r, err := format.NewSnapshotReader(&snap)
	if err != nil {
		c.t.Fatal(err)
	}
	w, err := format.NewSnapshotWriter(&out)
	if err != nil {
		c.t.Fatal(err)
	}
	for {
		rec, data, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			c.t.Fatal(err)
		}
		if data = edit(rec, data); data != nil {
			if err := w.Write(rec, json.RawMessage(data)); err != nil {
				c.t.Fatal(err)
			}
		}
	}
	if err := w.Flush(); err != nil {
		c.t.Fatal(err)
	}
	if err := c.fsm.Store().Restore(&out); err != nil {
		c.t.Fatal(err)
	}
}

// setPhase moves the source model's minion phase.
func (c *controller) setPhase(phase string) {
	c.rewrite(func(rec format.RecordType, data []byte) []byte {
		if rec != format.RecModel {
			return data
		}
		var m format.Model
		if err := json.Unmarshal(data, &m); err != nil {
			c.t.Fatal(err)
		}
		if m.UUID == handoverModel && m.Migration != nil {
			m.Migration.Phase = phase
		}
		out, err := json.Marshal(&m)
		if err != nil {
			c.t.Fatal(err)
		}
		return out
	})
}

// reap drops every row of the model, as the source's reap does.
func (c *controller) reap() {
	c.rewrite(func(rec format.RecordType, data []byte) []byte {
		var row struct {
			UUID  string `json:"uuid"`
			Model string `json:"model-uuid"`
		}
		if err := json.Unmarshal(data, &row); err != nil {
			c.t.Fatal(err)
		}
		if row.Model == handoverModel || (rec == format.RecModel && row.UUID == handoverModel) {
			return nil
		}
		return data
	})
	if m, _ := c.fsm.Store().Snapshot().ModelByUUID(handoverModel); m != nil {
		c.t.Fatalf("the model outlived its reap: %+v", m)
	}
}

// migrate moves the model from c to dst as the migration's commands do,
// up to the source's SUCCESS and the target's activation.
func (c *controller) migrate(dst *controller, id string) {
	c.t.Helper()
	c.must(state.QuiesceModelType, &state.QuiesceModelRequest{ModelUUID: handoverModel, MigrationID: id, Now: handoverTime})
	var export bytes.Buffer
	if _, err := state.ExportModel(c.fsm.Store().Snapshot(), handoverModel, "source", c.index, &export); err != nil {
		c.t.Fatal(err)
	}
	dst.must(state.ImportModelType, &state.ImportModelRequest{MigrationID: id, Export: export.Bytes(), Now: handoverTime})
	c.setPhase(api.MigrationSuccess)
	dst.must(state.ActivateModelType, &state.ActivateModelRequest{ModelUUID: handoverModel, MigrationID: id})
}

// handoverEnv is a host with two controllers' machine directories and a
// fake drover-agent (a process that waits forever; its command line names
// its agent.conf as the real one's does, and it starts no other process,
// so that nothing it forks escapes a teardown).
type handoverEnv struct {
	t        *testing.T
	root     string
	bin      string
	isolated bool
	// skew is added to the provisioners' clock: a test moves it past a
	// crashed agent's restart backoff.
	skew atomic.Int64
}

func newHandoverEnv(t *testing.T, isolated bool) *handoverEnv {
	t.Helper()
	if isolated && os.Geteuid() != 0 {
		t.Skip("machines run as their own users only under a controller running as root; run this test as root")
	}
	root, err := os.MkdirTemp("", "drover-handover-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(root, 0o755); err != nil { // reachable, as a machine root must be
		t.Fatal(err)
	}
	e := &handoverEnv{t: t, root: root, bin: filepath.Join(root, "drover-agent"), isolated: isolated}
	t.Cleanup(func() {
		// A test that failed half-way may leave a handover marker, which
		// DestroyMachines respects.
		markers, _ := filepath.Glob(filepath.Join(root, "*", "*", HandoverMarker))
		for _, m := range markers {
			os.Remove(m)
		}
		for _, dir := range []string{e.dir("east"), e.dir("west")} {
			if err := DestroyMachines(dir, 5*time.Second); err != nil {
				t.Error(err)
			}
		}
		os.RemoveAll(root)
	})
	src := filepath.Join(t.TempDir(), "agent.go")
	if err := os.WriteFile(src, []byte("package main\n\nimport \"time\"\n\nfunc main() {\n\tfor {\n\t\ttime.Sleep(time.Hour)\n\t}\n}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("go", "build", "-o", e.bin, src).CombinedOutput(); err != nil {
		t.Fatalf("build the fake agent: %v\n%s", err, out)
	}
	return e
}

func (e *handoverEnv) dir(name string) string { return filepath.Join(e.root, name) }

// provisioner is controller name's provisioner on c, in its own Dir.
func (e *handoverEnv) provisioner(name string, c *controller) *Provisioner {
	e.t.Helper()
	p, err := New(Config{Store: c.fsm.Store(), Events: stream.NewBroker(16), Propose: c.propose,
		Dir: e.dir(name), ControllerUUID: name + "-controller", AgentBinary: e.bin, Hostname: "host",
		Logger: slog.New(slog.DiscardHandler), StopGrace: 2 * time.Second,
		Now: func() time.Time { return time.Now().Add(time.Duration(e.skew.Load())) }})
	if err != nil {
		e.t.Fatal(err)
	}
	p.isolated = e.isolated
	return p
}

func reconcile(t *testing.T, p *Provisioner) {
	t.Helper()
	if err := p.reconcile(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// agentIn is the live agent of the machine directory dir (0 if none).
func agentIn(dir string) int {
	pid := readPID(dir)
	if pid > 0 && alive(pid, filepath.Join(dir, "agent.conf"), anyUID) {
		return pid
	}
	return 0
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// userGone reports whether the user name does not exist.
func userGone(name string) bool {
	_, err := user.Lookup(name)
	var unknown user.UnknownUserError
	return errors.As(err, &unknown)
}

// provisionOnEast makes the model and its machine 0 on east.
func (e *handoverEnv) provisionOnEast(east *controller, pe *Provisioner) (area string, pid int) {
	e.t.Helper()
	east.must(state.AddModelType, &state.AddModelRequest{UUID: handoverModel, Name: "m", Owner: "admin", Now: handoverTime})
	east.must(state.AddMachineType, &state.AddMachineRequest{ModelUUID: handoverModel})
	reconcile(e.t, pe)
	area = filepath.Join(e.dir("east"), handoverModel, "0")
	if mc := east.machine("0"); mc == nil || mc.Area != area || mc.ProviderID != "local:host:0" {
		e.t.Fatalf("provisioned machine: %+v, want area %s", mc, area)
	}
	if pid = agentIn(area); pid == 0 {
		e.t.Fatal("no agent runs after provisioning")
	}
	return area, pid
}

// TestMigratedMachinesAreHandedOver: a model migrates from east to west,
// two controllers of one host. West supervises the machine's agent in
// east's directory, in place: it re-adopts the running agent (same PID),
// restarts it after a crash, and tears the machine down (directory, and
// user as root) when it is removed. East, once the migration reached
// SUCCESS, leaves the agent alone, and after the model is reaped from its
// store keeps the directory until west removed the machine.
func TestMigratedMachinesAreHandedOver(t *testing.T) {
	for _, isolated := range []bool{false, true} {
		name := map[bool]string{false: "shared", true: "isolated"}[isolated]
		t.Run(name, func(t *testing.T) { testHandover(t, isolated) })
	}
}

func testHandover(t *testing.T, isolated bool) {
	e := newHandoverEnv(t, isolated)
	east, west := newController(t), newController(t)
	pe := e.provisioner("east", east)
	area, pid := e.provisionOnEast(east, pe)
	eastUser := UserName("east-controller", handoverModel, "0")
	marker := filepath.Join(e.dir("east"), handoverModel, HandoverMarker)

	// Quiesced: east still supervises, and marks the model's directory.
	east.must(state.QuiesceModelType, &state.QuiesceModelRequest{ModelUUID: handoverModel, MigrationID: "mig-1", Now: handoverTime})
	reconcile(t, pe)
	if b, err := os.ReadFile(marker); err != nil || strings.TrimSpace(string(b)) != "mig-1" {
		t.Fatalf("handover marker of a quiesced model: %q %v", b, err)
	}
	east.migrate(west, "mig-1")

	// SUCCESS: east leaves the agent running.
	reconcile(t, pe)
	if got := agentIn(area); got != pid {
		t.Fatalf("east touched the handed-over agent: pid %d, want %d", got, pid)
	}

	// West re-adopts the very process, in east's directory.
	pw := e.provisioner("west", west)
	reconcile(t, pw)
	if got := agentIn(area); got != pid {
		t.Fatalf("west restarted the agent: pid %d, want %d", got, pid)
	}
	if pr := pw.procs[handoverModel+"/0"]; pr == nil || pr.pid != pid {
		t.Fatalf("west did not adopt agent %d: %+v", pid, pr)
	}
	link := filepath.Join(e.dir("west"), handoverModel, "0")
	if target, err := os.Readlink(link); err != nil || target != area {
		t.Fatalf("west's %s: link to %q (%v), want a link to %s", link, target, err, area)
	}
	if isolated && !userGone(UserName("west-controller", handoverModel, "0")) {
		t.Fatal("west made a user of its own for east's machine")
	}

	// A crash: east, past any restart backoff, does not restart it; west
	// restarts it, in place, as the machine's user.
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyWithin(t, 10*time.Second, func() (bool, error) {
		return agentIn(area) == 0, nil
	}, "the killed agent is gone")
	for range 3 {
		reconcile(t, pe)
		e.skew.Add(int64(time.Hour))
	}
	if got := agentIn(area); got != 0 {
		t.Fatalf("east restarted the handed-over agent (pid %d)", got)
	}
	var restarted int
	testkit.EventuallyWithin(t, 20*time.Second, func() (bool, error) {
		reconcile(t, pw)
		restarted = agentIn(area)
		return restarted != 0 && restarted != pid, nil
	}, "west restarts the crashed agent")
	if isolated {
		u, err := lookupUser(eastUser, area)
		if err != nil || u == nil {
			t.Fatalf("the machine's user: %v %v", u, err)
		}
		if real, _, ok := procUIDs(restarted); !ok || real != u.uid {
			t.Fatalf("the restarted agent runs as uid %d, want %s (%d)", real, eastUser, u.uid)
		}
	}
	reconcile(t, pe)
	if got := agentIn(area); got != restarted {
		t.Fatalf("east touched west's agent: pid %d, want %d", got, restarted)
	}

	// East reaps the model: the directory is no orphan of east's.
	east.reap()
	reconcile(t, pe)
	if got := agentIn(area); got != restarted {
		t.Fatalf("east's reap touched the agent: pid %d, want %d", got, restarted)
	}
	if !exists(marker) {
		t.Fatal("the handover marker went while west's machine lives on")
	}

	// West removes the machine: its agent, directory (and user) go, then
	// east drops the model's directory.
	west.must(state.DestroyMachineType, &state.DestroyMachineRequest{ModelUUID: handoverModel, ID: "0"})
	reconcile(t, pw)
	if west.machine("0") != nil {
		t.Fatal("west did not remove the machine")
	}
	if alive(restarted, filepath.Join(area, "agent.conf"), anyUID) || exists(area) {
		t.Fatalf("west's teardown left the agent or %s", area)
	}
	if exists(link) {
		t.Fatalf("west's teardown left the link %s", link)
	}
	if isolated && !userGone(eastUser) {
		t.Fatalf("west's teardown left the machine's user %s", eastUser)
	}
	reconcile(t, pe)
	if exists(filepath.Join(e.dir("east"), handoverModel)) {
		t.Fatal("east kept the handed-over model's directory after its last machine went")
	}
}

// TestHandedOverModelComesBack: a model that migrates east → west → east
// drops the marker and is east's again: east re-adopts the agent (same
// PID) and tears the machine down at its removal. While it is imported,
// east leaves the marker and the agent alone.
func TestHandedOverModelComesBack(t *testing.T) {
	e := newHandoverEnv(t, os.Geteuid() == 0)
	east, west := newController(t), newController(t)
	pe := e.provisioner("east", east)
	area, pid := e.provisionOnEast(east, pe)
	marker := filepath.Join(e.dir("east"), handoverModel, HandoverMarker)
	east.migrate(west, "mig-1")
	reconcile(t, pe)
	pw := e.provisioner("west", west)
	reconcile(t, pw)
	east.reap()
	reconcile(t, pe)

	// Back to east: imported, then activated.
	west.must(state.QuiesceModelType, &state.QuiesceModelRequest{ModelUUID: handoverModel, MigrationID: "mig-2", Now: handoverTime})
	var export bytes.Buffer
	if _, err := state.ExportModel(west.fsm.Store().Snapshot(), handoverModel, "west", west.index, &export); err != nil {
		t.Fatal(err)
	}
	east.must(state.ImportModelType, &state.ImportModelRequest{MigrationID: "mig-2", Export: export.Bytes(), Now: handoverTime})
	reconcile(t, pe)
	if !exists(marker) || agentIn(area) != pid {
		t.Fatalf("an import dropped the marker (%v) or touched the agent (%d, want %d)", exists(marker), agentIn(area), pid)
	}
	west.setPhase(api.MigrationSuccess)
	east.must(state.ActivateModelType, &state.ActivateModelRequest{ModelUUID: handoverModel, MigrationID: "mig-2"})
	reconcile(t, pw)
	reconcile(t, pe)
	if exists(marker) {
		t.Fatal("the marker outlived the model's return")
	}
	if pr := pe.procs[handoverModel+"/0"]; pr == nil || pr.pid != pid || agentIn(area) != pid {
		t.Fatalf("east did not re-adopt agent %d: %+v", pid, pr)
	}

	east.must(state.DestroyMachineType, &state.DestroyMachineRequest{ModelUUID: handoverModel, ID: "0"})
	reconcile(t, pe)
	if east.machine("0") != nil || exists(area) || alive(pid, filepath.Join(area, "agent.conf"), anyUID) {
		t.Fatal("east did not tear down its machine that came back")
	}
}

// TestAreaBackfilled: a machine provisioned without an area recorded gets
// its directory in this controller's Dir recorded once its agent runs
// there; one whose directory is not here gets none.
func TestAreaBackfilled(t *testing.T) {
	e := newHandoverEnv(t, false)
	c := newController(t)
	p := e.provisioner("east", c)
	c.must(state.AddModelType, &state.AddModelRequest{UUID: handoverModel, Name: "m", Owner: "admin", Now: handoverTime})
	for _, id := range []string{"0", "1"} {
		c.must(state.AddMachineType, &state.AddMachineRequest{ModelUUID: handoverModel})
		c.must(state.SetMachineProvisionedType, &state.SetMachineProvisionedRequest{ModelUUID: handoverModel, ID: id,
			ProviderID: "local:host:" + id, Addresses: []string{"127.0.0.1"}})
	}
	dir := filepath.Join(e.dir("east"), handoverModel, "0")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "agent.conf"), []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	reconcile(t, p)
	if mc := c.machine("0"); mc.Area != dir {
		t.Errorf("machine 0's area %q, want %q", mc.Area, dir)
	}
	if mc := c.machine("1"); mc.Area != "" {
		t.Errorf("machine 1, with no directory here, got area %q", mc.Area)
	}
	if agentIn(dir) == 0 {
		t.Error("machine 0's agent does not run")
	}
}

// TestRunningAgentIsAdopted: an agent of the machine's agent.conf that
// agent.pid does not name (another controller of the host restarted it
// around a handover) is adopted, not started a second time.
func TestRunningAgentIsAdopted(t *testing.T) {
	e := newHandoverEnv(t, false)
	c := newController(t)
	p := e.provisioner("west", c)
	dir := filepath.Join(e.dir("east"), handoverModel, "0")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "agent.conf")
	if err := os.WriteFile(conf, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	c.must(state.AddModelType, &state.AddModelRequest{UUID: handoverModel, Name: "m", Owner: "admin", Now: handoverTime})
	c.must(state.AddMachineType, &state.AddMachineRequest{ModelUUID: handoverModel})
	c.must(state.SetMachineProvisionedType, &state.SetMachineProvisionedRequest{ModelUUID: handoverModel, ID: "0",
		ProviderID: "local:host:0", Addresses: []string{"127.0.0.1"}, Area: dir})
	cmd := exec.Command(e.bin, "machine", "--config", conf)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-done })

	reconcile(t, p)
	if pr := p.procs[handoverModel+"/0"]; pr == nil || pr.pid != cmd.Process.Pid {
		t.Fatalf("the running agent %d was not adopted: %+v", cmd.Process.Pid, pr)
	}
	if got := readPID(dir); got != cmd.Process.Pid {
		t.Fatalf("agent.pid names %d, want %d", got, cmd.Process.Pid)
	}
}

// TestForeignTeardownRetried: a machine of another controller's Dir whose
// directory is already gone (a teardown that failed after removing it)
// still has its user removed: the machine user whose home it was.
func TestForeignTeardownRetried(t *testing.T) {
	e := newHandoverEnv(t, true)
	p := e.provisioner("west", newController(t))
	home := filepath.Join(e.dir("east"), handoverModel, "0")
	name := UserName("east-controller", handoverModel, "0")
	if _, err := ensureUser(name, home, "drover test machine"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { removeUser(name, home, time.Second) })
	if err := p.removeArea(place{model: handoverModel, id: "0", dir: home}); err != nil {
		t.Fatal(err)
	}
	if !userGone(name) {
		t.Fatalf("user %s of a machine whose directory is gone was left", name)
	}
}
