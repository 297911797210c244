package spoke

import (
	"bytes"
	"errors"
	"fmt"
	"github.com/droverhq/drover/tests/testkit"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/api"
)

// agentEnv: kv (2 units, machines 0 and 1) and web (1 unit, machine 2)
// related web:db–kv, with agent secrets for every machine.
type agentEnv struct {
	c     *testCluster
	cl    *api.Client
	model string
	rel   int // web:db kv:kv
	peer  int // kv:cluster
}

func newAgentEnv(t *testing.T, nodes int) *agentEnv {
	t.Helper()
	c := newTestCluster(t, nodes)
	ctx := t.Context()
	cl := c.client(0)
	m, err := cl.AddModel(ctx, api.AddModelRequest{Name: "agents"})
	if err != nil {
		t.Fatal(err)
	}
	e := &agentEnv{c: c, cl: cl, model: m.UUID}
	for _, name := range []string{"kv", "web"} {
		ch, err := cl.UploadCharm(ctx, bytes.NewReader(archive(t, "testdata/charms/"+name)))
		if err != nil {
			t.Fatal(err)
		}
		n := map[string]int{"kv": 2, "web": 1}[name]
		if _, err := cl.Model(m.UUID).Deploy(ctx, api.DeployRequest{Application: name, CharmSHA256: ch.SHA256, NumUnits: n}); err != nil {
			t.Fatal(err)
		}
	}
	r, err := cl.Model(m.UUID).Integrate(ctx, "web:db", "kv")
	if err != nil {
		t.Fatal(err)
	}
	e.rel = r.ID
	rels, err := cl.Model(m.UUID).Relations(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rels {
		if r.Key == "kv:cluster" {
			e.peer = r.ID
		}
	}
	for _, id := range []string{"0", "1", "2"} {
		if err := c.nodes[0].srv.SetAgentSecret(ctx, m.UUID, id, "secret-"+id); err != nil {
			t.Fatal(err)
		}
	}
	// Every node holds the new credentials before an agent dials it: a
	// node refuses a credential it has not applied yet rather than pay a
	// raft read for it (ADR 0019), and a real agent retries.
	for _, n := range c.nodes {
		if _, err := n.srv.WaitRead(ctx, 0, true); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

func (e *agentEnv) dial(t *testing.T, node int, machine string) *testAgent {
	t.Helper()
	a, resp, err := dialAgent(t.Context(), e.c.nodes[node].cfg.Listen, []byte(e.c.cred.CACert),
		"machine-"+e.model+"-"+machine, "secret-"+machine, 0)
	if err != nil {
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		var body []byte
		if resp != nil {
			body, _ = io.ReadAll(resp.Body)
		}
		t.Fatalf("dial machine %s: %v (HTTP %d %s)", machine, err, status, body)
	}
	t.Cleanup(a.close)
	return a
}

func wantCode(t *testing.T, what string, err error, code api.Code, phrase string) {
	t.Helper()
	var e *api.Error
	if !errors.As(err, &e) || e.Code != code || !strings.Contains(e.Message, phrase) {
		t.Fatalf("%s: got %v, want %s containing %q", what, err, code, phrase)
	}
}

func TestAgentStreamAuthAndInitialState(t *testing.T) {
	e := newAgentEnv(t, 1)
	addr, ca := e.c.nodes[0].cfg.Listen, []byte(e.c.cred.CACert)
	for _, bad := range [][2]string{{"machine-" + e.model + "-0", "wrong"}, {"machine-" + e.model + "-7", "secret-0"}, {"admin", e.c.cred.Password}} {
		_, resp, err := dialAgent(t.Context(), addr, ca, bad[0], bad[1], 0)
		if err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("%s authenticated: %v", bad[0], err)
		}
	}
	a := e.dial(t, 0, "0")
	st := a.waitState(t, "initial state", func(st *api.MachineState) bool { return st.Units["kv/0"] != nil })
	u := st.Units["kv/0"]
	if st.Machine != "0" || st.ModelName != "agents" || len(st.ControllerAddresses) != 1 || st.Life != api.Alive ||
		st.UpdateStatusInterval != 5*time.Minute || !st.AutoRetry || len(st.Units) != 1 {
		t.Fatalf("machine state %+v", st)
	}
	if u.Config["port"] != float64(7000) || u.Config["mode"] != "memory" || u.Leader || u.CharmSHA256 == "" {
		t.Fatalf("unit state %+v", u)
	}
	db, peer := u.Relations[e.rel], u.Relations[e.peer]
	if db == nil || db.RemoteApp != "web" || db.Endpoint != "kv" || db.Role != api.RoleProvider || db.Joined ||
		peer == nil || peer.RemoteApp != "kv" || peer.Role != api.RolePeer {
		t.Fatalf("relations %+v", u.Relations)
	}
	// Model config reaches the agents.
	if _, err := e.cl.Model(e.model).SetConfig(t.Context(), api.ConfigChange{Set: map[string]any{
		"update-status-hook-interval": "1m", "automatically-retry-hooks": false}}); err != nil {
		t.Fatal(err)
	}
	a.waitState(t, "model config", func(st *api.MachineState) bool {
		return st.UpdateStatusInterval == time.Minute && !st.AutoRetry
	})
}

func TestAgentStateFramesFollowChanges(t *testing.T) {
	e := newAgentEnv(t, 1)
	ctx := t.Context()
	kv0, web := e.dial(t, 0, "0"), e.dial(t, 0, "2")
	web.waitState(t, "web initial", func(st *api.MachineState) bool { return st.Units["web/0"] != nil })

	// Leadership claim flips Leader.
	var lr api.AgentLeaderResult
	if err := kv0.call(api.AgentClaimLeader, api.AgentLeaderParams{Unit: "kv/0", Duration: time.Minute}, &lr); err != nil || !lr.Leader {
		t.Fatalf("claim: %+v %v", lr, err)
	}
	kv0.waitState(t, "leader", func(st *api.MachineState) bool { return st.Units["kv/0"].Leader })

	// Scope: web sees kv/0 join; relation data bumps reach the other side.
	for _, a := range []struct {
		ag   *testAgent
		unit string
	}{{kv0, "kv/0"}, {web, "web/0"}} {
		if err := a.ag.call(api.AgentEnterScope, api.AgentScopeParams{Unit: a.unit, RelationID: e.rel}, nil); err != nil {
			t.Fatal(err)
		}
	}
	web.waitState(t, "kv/0 member", func(st *api.MachineState) bool {
		r := st.Units["web/0"].Relations[e.rel]
		_, ok := r.Members["kv/0"]
		return r.Joined && ok
	})
	if err := kv0.call(api.AgentCommitHook, api.AgentHookChanges{Unit: "kv/0", Relations: []api.SettingsChange{
		{RelationID: e.rel, Set: map[string]string{"host": "h"}},
		{RelationID: e.rel, App: true, Set: map[string]string{"password": "pw"}}}}, nil); err != nil {
		t.Fatal(err)
	}
	web.waitState(t, "bag versions", func(st *api.MachineState) bool {
		r := st.Units["web/0"].Relations[e.rel]
		return r.Members["kv/0"] == 1 && r.AppVersion == 1
	})
	// A task enqueued for the unit appears in its state.
	tasks, err := e.cl.Model(e.model).RunAction(ctx, api.RunActionRequest{Receivers: []string{"kv/0"}, Action: "compact"})
	if err != nil {
		t.Fatal(err)
	}
	kv0.waitState(t, "task", func(st *api.MachineState) bool {
		ts := st.Units["kv/0"].Tasks
		return len(ts) == 1 && ts[0].ID == tasks[0].ID && ts[0].Action == "compact" && ts[0].Status == api.TaskPending
	})
	// Application config.
	if _, err := e.cl.Model(e.model).SetApplicationConfig(ctx, "kv", api.ConfigChange{Set: map[string]any{"mode": "disk"}}); err != nil {
		t.Fatal(err)
	}
	kv0.waitState(t, "config", func(st *api.MachineState) bool { return st.Units["kv/0"].Config["mode"] == "disk" })
}

func TestAgentResumesAfterDroppedConnection(t *testing.T) {
	e := newAgentEnv(t, 1)
	a := e.dial(t, 0, "0")
	st := a.waitState(t, "initial", func(st *api.MachineState) bool { return st.Units["kv/0"] != nil })
	_ = st
	a.mu.Lock()
	since := a.index
	a.mu.Unlock()
	a.close()
	if _, err := e.cl.Model(e.model).SetApplicationConfig(t.Context(), "kv", api.ConfigChange{Set: map[string]any{"mode": "disk"}}); err != nil {
		t.Fatal(err)
	}
	b, _, err := dialAgent(t.Context(), e.c.nodes[0].cfg.Listen, []byte(e.c.cred.CACert), "machine-"+e.model+"-0", "secret-0", since)
	if err != nil {
		t.Fatal(err)
	}
	defer b.close()
	b.waitState(t, "current state after resume", func(st *api.MachineState) bool { return st.Units["kv/0"].Config["mode"] == "disk" })
	if b.index <= since {
		t.Fatalf("index %d after resuming from %d", b.index, since)
	}
}

// TestAgentFailsOverToAnotherNode kills the node an agent is connected to;
// the agent reconnects to another address and gets the current state.
func TestAgentFailsOverToAnotherNode(t *testing.T) {
	e := newAgentEnv(t, 3)
	ctx := t.Context()
	l := e.c.leader()
	victim := (l + 1) % 3
	a := e.dial(t, victim, "0")
	st := a.waitState(t, "initial", func(st *api.MachineState) bool { return st.Units["kv/0"] != nil })
	if len(st.ControllerAddresses) != 3 {
		t.Fatalf("controller addresses %v", st.ControllerAddresses)
	}
	since := a.index
	e.c.stop(victim)
	<-a.done // the connection drops with the node
	// Setting config is idempotent: retry while the cluster settles after
	// losing a node (an in-flight write may report an unknown outcome).
	testkit.EventuallyWithin(t, 30*time.Second, func() (bool, error) {
		_, err := e.c.client(l, (l+2)%3).Model(e.model).SetApplicationConfig(ctx, "kv", api.ConfigChange{Set: map[string]any{"mode": "disk"}})
		return err == nil, nil
	}, "config write after the node loss")
	var b *testAgent
	for _, addr := range st.ControllerAddresses {
		if addr == e.c.nodes[victim].cfg.Listen {
			continue
		}
		var err error
		if b, _, err = dialAgent(ctx, addr, []byte(e.c.cred.CACert), "machine-"+e.model+"-0", "secret-0", since); err == nil {
			break
		}
	}
	if b == nil {
		t.Fatal("no other controller accepted the agent")
	}
	defer b.close()
	b.waitState(t, "state after failover", func(st *api.MachineState) bool { return st.Units["kv/0"].Config["mode"] == "disk" })
}

// TestCancelledTasksAreNotRun: a pending task cancelled leaves the unit's
// state (its agent never runs it); a task no longer pending cannot be
// cancelled.
func TestCancelledTasksAreNotRun(t *testing.T) {
	e := newAgentEnv(t, 1)
	ctx := t.Context()
	kv0 := e.dial(t, 0, "0")
	tasks, err := e.cl.Model(e.model).RunAction(ctx, api.RunActionRequest{Receivers: []string{"kv/0"}, Action: "compact"})
	if err != nil {
		t.Fatal(err)
	}
	id := tasks[0].ID
	kv0.waitState(t, "the task", func(st *api.MachineState) bool { return len(st.Units["kv/0"].Tasks) == 1 })
	task, err := e.cl.Model(e.model).CancelTask(ctx, id)
	if err != nil || task.Status != api.TaskCancelled || task.Completed.IsZero() {
		t.Fatalf("cancel: %+v %v", task, err)
	}
	kv0.waitState(t, "no task", func(st *api.MachineState) bool { return len(st.Units["kv/0"].Tasks) == 0 })
	_, err = e.cl.Model(e.model).CancelTask(ctx, id)
	wantCode(t, "cancelling a cancelled task", err, api.CodeConflict, "is cancelled")
	_, err = e.cl.Model(e.model).CancelTask(ctx, "999")
	wantCode(t, "cancelling a task that does not exist", err, api.CodeNotFound, "")
}

// TestAddMachines: add-machine makes empty machines, several at once, for
// placements; out-of-range counts are refused before anything is made.
func TestAddMachines(t *testing.T) {
	e := newAgentEnv(t, 1)
	ctx := t.Context()
	before, err := e.cl.Model(e.model).Machines(ctx)
	if err != nil {
		t.Fatal(err)
	}
	added, err := e.cl.Model(e.model).AddMachines(ctx, api.AddMachinesRequest{NumMachines: 2, Base: "ubuntu@24.04"})
	if err != nil || len(added) != 2 || added[0].ID != "3" || added[1].ID != "4" || added[0].Base != "ubuntu@24.04" || added[0].Life != api.Alive {
		t.Fatalf("add 2 machines: %+v %v", added, err)
	}
	for _, n := range []int{-1, 101} {
		_, err := e.cl.Model(e.model).AddMachines(ctx, api.AddMachinesRequest{NumMachines: n})
		wantCode(t, fmt.Sprintf("%d machines", n), err, api.CodeInvalid, "want 1 to 100")
	}
	if after, err := e.cl.Model(e.model).Machines(ctx, api.ReadOptions{Consistent: true}); err != nil || len(after) != len(before)+2 {
		t.Fatalf("machines after adding 2 to %d: %d %v", len(before), len(after), err)
	}
	// A unit placed on one.
	res, err := e.cl.Model(e.model).AddUnits(ctx, "kv", api.AddUnitsRequest{NumUnits: 1, To: []string{"4"}})
	if err != nil || len(res.Units) != 1 {
		t.Fatalf("add-unit --to 4: %+v %v", res, err)
	}
	if u, err := e.cl.Model(e.model).Unit(ctx, res.Units[0]); err != nil || u.MachineID != "4" {
		t.Fatalf("the unit placed on machine 4: %+v %v", u, err)
	}
}
