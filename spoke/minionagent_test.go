package spoke

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/droverhq/drover/agent"
	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/tests/testkit"
)

// machineAgent is a real machine agent (agent.RunMachine) of an empty
// machine, run in-process.
type machineAgent struct {
	tag, conf, dir string
	stop           func()
}

// addMachineAgent adds an empty machine to env's model, with a credential,
// and writes its agent.conf naming c's node 0.
func addMachineAgent(t *testing.T, env *agentEnv, c *testCluster) *machineAgent {
	t.Helper()
	ctx := t.Context()
	ms, err := env.cl.Model(env.model).AddMachines(ctx, api.AddMachinesRequest{NumMachines: 1})
	if err != nil || len(ms) != 1 {
		t.Fatalf("add machine: %v %v", ms, err)
	}
	id := ms[0].ID
	if err := env.c.nodes[0].srv.SetAgentSecret(ctx, env.model, id, "secret-"+id); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	tag := "machine-" + env.model + "-" + id
	conf, _ := json.Marshal(api.AgentConfig{ModelUUID: env.model, Machine: id, Tag: tag, Secret: "secret-" + id,
		ControllerAddresses: []string{c.nodes[0].cfg.Listen}, CACert: c.cred.CACert, DataDir: dir})
	path := filepath.Join(dir, "agent.conf")
	if err := os.WriteFile(path, conf, 0o600); err != nil {
		t.Fatal(err)
	}
	return &machineAgent{tag: tag, conf: path, dir: dir}
}

// start runs the agent until the test ends or stop is called.
func (m *machineAgent) start(t *testing.T) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- agent.RunMachine(ctx, m.conf, exe, testLogger(t)) }()
	m.stop = func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("machine agent: %v", err)
		}
	}
	t.Cleanup(m.stop)
}

func (m *machineAgent) config(t *testing.T) api.AgentConfig {
	t.Helper()
	data, err := os.ReadFile(m.conf)
	if err != nil {
		t.Fatal(err)
	}
	var c api.AgentConfig
	if err := json.Unmarshal(data, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

// waitMoved waits until the agent's agent.conf and saved controllers name
// target.
func (m *machineAgent) waitMoved(t *testing.T, target *api.TargetController) {
	t.Helper()
	testkit.EventuallyWithin(t, 30*time.Second, func() (bool, error) {
		c := m.config(t)
		var saved []string
		data, _ := os.ReadFile(filepath.Join(m.dir, "controllers.json"))
		json.Unmarshal(data, &saved)
		return slices.Equal(c.ControllerAddresses, target.Addresses) && c.CACert == target.CACert &&
			slices.Equal(saved, target.Addresses), nil
	}, m.tag+" persisted the target controller")
}

// waitReport waits until the source model holds tag's report on phase.
func waitReport(t *testing.T, c *testCluster, model, tag, phase string) api.MinionReport {
	t.Helper()
	var got api.MinionReport
	testkit.EventuallyWithin(t, 30*time.Second, func() (bool, error) {
		m, err := c.nodes[0].srv.Store().Snapshot().ModelByUUID(model)
		if err != nil || m.Migration == nil {
			return false, err
		}
		got = m.Migration.Minions[tag]
		return got.Phase == phase, nil
	}, tag+" reports "+phase)
	return got
}

// runOn runs a command on the machine through c and waits for its result:
// the agent is connected there and starts operations.
func runOn(t *testing.T, c *testCluster, model, machine, command string) *api.Task {
	t.Helper()
	mc := c.client(0).Model(model)
	tasks, err := mc.RunAction(t.Context(), api.RunActionRequest{Receivers: []string{"machine-" + machine},
		Action: api.ExecAction, Params: map[string]any{"command": command}})
	if err != nil {
		t.Fatalf("run on machine %s: %v", machine, err)
	}
	var task *api.Task
	testkit.EventuallyWithin(t, 30*time.Second, func() (bool, error) {
		task, err = mc.Task(t.Context(), tasks[0].ID, time.Second)
		return err == nil && task.Status == api.TaskCompleted, err
	}, "the command ran on machine "+machine)
	return task
}

// TestMachineAgentFollowsItsModelsMigration: a real machine agent reports
// on each phase of its model's migration (QUIESCE once idle, VALIDATION
// after logging in to the target, SUCCESS), then rewrites agent.conf and
// its saved controllers to the target's and runs its operations there; an
// agent that was stopped during the migration is redirected by the source
// when it comes back, and moves too.
func TestMachineAgentFollowsItsModelsMigration(t *testing.T) {
	env := newAgentEnv(t, 1)
	src, model := env.c, env.model
	dst := newTestCluster(t, 1)
	online, offline, late := addMachineAgent(t, env, src), addMachineAgent(t, env, src), addMachineAgent(t, env, src)
	online.start(t)
	machine := online.config(t).Machine
	if task := runOn(t, src, model, machine, "echo east"); task.Results["stdout"] != "east\n" {
		t.Fatalf("the command on the source: %+v", task.Results)
	}

	// A command runs when the model is quiesced: it finishes and reports,
	// and only then does the agent report QUIESCE.
	release := filepath.Join(t.TempDir(), "release")
	mc := src.client(0).Model(model)
	tasks, err := mc.RunAction(t.Context(), api.RunActionRequest{Receivers: []string{"machine-" + machine},
		Action: api.ExecAction, Params: map[string]any{"command": "while [ ! -e " + release + " ]; do sleep 0.02; done; echo done"}})
	if err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyWithin(t, 30*time.Second, func() (bool, error) {
		task, err := mc.Task(t.Context(), tasks[0].ID, 0)
		return err == nil && task.Status == api.TaskRunning, err
	}, "the command running")
	status, _, b := src.migrationCall(t, "POST", model, "quiesce", "mig-1/QUIESCE/1", stepBody("mig-1"), nil)
	wantStep(t, "quiesce", status, http.StatusOK, b)
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r := waitReport(t, src, model, online.tag, api.MigrationQuiesce)
	task, err := mc.Task(t.Context(), tasks[0].ID, 0)
	if err != nil || task.Status != api.TaskCompleted || task.Results["stdout"] != "done\n" {
		t.Fatalf("the command running at the quiesce: %+v, %v (want it completed)", task, err)
	}
	if !r.Success || r.MigrationID != "mig-1" || r.Time.Before(task.Completed) {
		t.Fatalf("the QUIESCE report %+v, the command completed at %v: want a success after it", r, task.Completed)
	}
	status, hdr, export := src.migrationCall(t, "GET", model, "export?migration=mig-1", "mig-1/EXPORT/1", nil, nil)
	wantStep(t, "export", status, http.StatusOK, export)
	status, _, b = dst.migrationCall(t, "POST", model, "import?migration=mig-1", "mig-1/IMPORT/1", export,
		map[string]string{api.HeaderExportSHA256: hdr.Get(api.HeaderExportSHA256)})
	wantStep(t, "import", status, http.StatusOK, b)

	target := &api.TargetController{ControllerUUID: "west-uuid", ControllerName: "west",
		Addresses: []string{dst.nodes[0].cfg.Listen}, CACert: dst.cred.CACert}
	setPhase(t, src, model, api.MigrationValidation, target)
	if r := waitReport(t, src, model, online.tag, api.MigrationValidation); !r.Success {
		t.Fatalf("the VALIDATION report: %+v", r)
	}

	setPhase(t, src, model, api.MigrationSuccess, target)
	if r := waitReport(t, src, model, online.tag, api.MigrationSuccess); !r.Success {
		t.Fatalf("the SUCCESS report: %+v", r)
	}
	online.waitMoved(t, target)
	if st, err := os.Stat(online.conf); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("agent.conf after the move: %v, %v (want mode 0600)", st.Mode(), err)
	}
	if c := online.config(t); c.Secret != "secret-"+machine || c.Tag != online.tag || c.DataDir != online.dir {
		t.Fatalf("agent.conf lost fields: %+v", c)
	}
	status, _, b = dst.migrationCall(t, "POST", model, "activate", "mig-1/SUCCESS/1", stepBody("mig-1"), nil)
	wantStep(t, "activate", status, http.StatusOK, b)
	if task := runOn(t, dst, model, machine, "echo west"); task.Results["stdout"] != "west\n" {
		t.Fatalf("the command on the target: %+v", task.Results)
	}

	// The agent that was away logs in to the source, is redirected, and
	// moves.
	offline.start(t)
	offline.waitMoved(t, target)
	if task := runOn(t, dst, model, offline.config(t).Machine, "echo back"); task.Results["stdout"] != "back\n" {
		t.Fatalf("the command on the redirected agent: %+v", task.Results)
	}

	// Once the source reaped the model, its tombstone still redirects an
	// agent that proves who it is with the secret it had.
	status, _, b = src.migrationCall(t, "POST", model, "reap", "mig-1/REAP/1", stepBody("mig-1"), nil)
	wantStep(t, "reap", status, http.StatusNoContent, b)
	late.start(t)
	late.waitMoved(t, target)
	if task := runOn(t, dst, model, late.config(t).Machine, "echo late"); task.Results["stdout"] != "late\n" {
		t.Fatalf("the command on the agent redirected by the tombstone: %+v", task.Results)
	}

	// With every node of the source stopped, the model runs on.
	src.stopAll()
	for _, a := range []*machineAgent{online, offline, late} {
		if task := runOn(t, dst, model, a.config(t).Machine, "echo alone"); task.Results["stdout"] != "alone\n" {
			t.Fatalf("a command on %s with the source stopped: %+v", a.tag, task.Results)
		}
	}
}

// TestMachineAgentResumesAfterAnAbort: a migration released (aborted)
// lets the agent run commands again, and a later migration of the model is
// reported anew.
func TestMachineAgentResumesAfterAnAbort(t *testing.T) {
	env := newAgentEnv(t, 1)
	src, model := env.c, env.model
	m := addMachineAgent(t, env, src)
	m.start(t)
	machine := m.config(t).Machine
	runOn(t, src, model, machine, "true")
	for _, id := range []string{"mig-1", "mig-2"} {
		status, _, b := src.migrationCall(t, "POST", model, "quiesce", id+"/QUIESCE/1", stepBody(id), nil)
		wantStep(t, "quiesce "+id, status, http.StatusOK, b)
		testkit.EventuallyWithin(t, 30*time.Second, func() (bool, error) {
			mod, err := src.nodes[0].srv.Store().Snapshot().ModelByUUID(model)
			if err != nil || mod.Migration == nil {
				return false, err
			}
			r := mod.Migration.Minions[m.tag]
			return r.MigrationID == id && r.Phase == api.MigrationQuiesce && r.Success, nil
		}, m.tag+" reports QUIESCE for "+id)
		status, _, b = src.migrationCall(t, "POST", model, "release", id+"/ABORTING/1", stepBody(id), nil)
		wantStep(t, "release "+id, status, http.StatusOK, b)
		if task := runOn(t, src, model, machine, "echo "+id); task.Results["stdout"] != id+"\n" {
			t.Fatalf("a command after %s was released: %+v", id, task.Results)
		}
	}
}

// TestSetMachineProvider records a machine as provisioned under the
// provider ID given, as benchmarks with simulated agents do.
func TestSetMachineProvider(t *testing.T) {
	env := newAgentEnv(t, 1)
	ctx := t.Context()
	ms, err := env.cl.Model(env.model).AddMachines(ctx, api.AddMachinesRequest{NumMachines: 1})
	if err != nil || len(ms) != 1 {
		t.Fatalf("add machine: %v %v", ms, err)
	}
	id := ms[0].ID
	if err := env.c.nodes[0].srv.SetMachineProvider(ctx, env.model, id, "manual:bench:"+id); err != nil {
		t.Fatal(err)
	}
	mc, err := env.cl.Model(env.model).Machine(ctx, id, api.ReadOptions{Consistent: true})
	if err != nil {
		t.Fatal(err)
	}
	if mc.ProviderID != "manual:bench:"+id {
		t.Fatalf("machine %s provider ID %q, want manual:bench:%s", id, mc.ProviderID, id)
	}
}
