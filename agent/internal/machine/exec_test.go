package machine

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/droverhq/drover/agent/internal/fortress"
	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/tests/testkit"
)

// fakeController holds a machine's tasks as the gateway does: start-task
// makes one running, finish-task ends it (it leaves the machine state).
type fakeController struct {
	mu       sync.Mutex
	tasks    []api.TaskRef
	notify   chan struct{}
	started  []string
	finished map[string]api.AgentTaskParams
	// migration is the machine state's.
	migration *api.AgentMigration
}

func newFakeController(tasks ...api.TaskRef) *fakeController {
	return &fakeController{tasks: tasks, notify: make(chan struct{}), finished: map[string]api.AgentTaskParams{}}
}

func (f *fakeController) State() (*api.MachineState, <-chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return &api.MachineState{Machine: "3", Life: api.Alive, Tasks: slices.Clone(f.tasks), Migration: f.migration}, f.notify
}

func (f *fakeController) changedLocked() {
	close(f.notify)
	f.notify = make(chan struct{})
}

func (f *fakeController) Call(_ context.Context, method string, params, _ any) error {
	p := params.(api.AgentTaskParams)
	if p.Machine != "3" || p.Unit != "" {
		return fmt.Errorf("%s for machine %q unit %q, want machine 3", method, p.Machine, p.Unit)
	}
	// The wire carries the params as JSON, numbers and all.
	b, err := json.Marshal(p)
	if err != nil {
		return err
	}
	p = api.AgentTaskParams{}
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	i := slices.IndexFunc(f.tasks, func(t api.TaskRef) bool { return t.ID == p.ID })
	if i < 0 {
		return api.Errorf(api.CodeNotFound, "task %q not found", p.ID)
	}
	switch method {
	case api.AgentStartTask:
		f.started = append(f.started, p.ID)
		f.tasks[i].Status = api.TaskRunning
	case api.AgentFinishTask:
		f.finished[p.ID] = p
		f.tasks = slices.Delete(f.tasks, i, i+1)
	default:
		return fmt.Errorf("unexpected call %s", method)
	}
	f.changedLocked()
	return nil
}

func (f *fakeController) report(id string) (api.AgentTaskParams, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.finished[id]
	return p, ok
}

func execTask(id, command string, extra ...string) api.TaskRef {
	params := map[string]any{"command": command}
	if len(extra) == 2 {
		params[extra[0]] = extra[1]
	}
	return api.TaskRef{ID: id, Action: api.ExecAction, Params: params, Parallel: true, Status: api.TaskPending}
}

// TestMachineExecRunsTasks: the machine agent runs the machine's juju-exec
// tasks outside any unit, with bash in the machine's directory and
// environment, and reports each as a unit's exec is reported: output and
// return code; a non-zero exit is a failed task with its results; a
// command past its timeout is killed and fails; a task found running that
// this process never started (the agent restarted under it) is failed
// without being run again.
func TestMachineExecRunsTasks(t *testing.T) {
	testkit.CheckLeaks(t)
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran-again")
	f := newFakeController(
		execTask("1", `echo "$PWD $DROVER_TEST_ENV"; echo oops >&2`),
		execTask("2", "echo partial; exit 3"),
		execTask("3", "sleep 30", "timeout", "200ms"),
		api.TaskRef{ID: "4", Action: api.ExecAction, Params: map[string]any{"command": "touch " + marker}, Parallel: true, Status: api.TaskRunning},
	)
	mx, err := newMachineExec(execConfig{Machine: "3", Dir: dir, Env: []string{"DROVER_TEST_ENV=machine-env", "PATH=" + os.Getenv("PATH")},
		Caller: f, States: f.State, Lock: newLocks(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	runUntilEnd(t, mx)
	testkit.EventuallyWithin(t, 20*time.Second, func() (bool, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		return len(f.finished) == 4, nil
	}, "every task reported")

	if p, _ := f.report("1"); p.Status != api.TaskCompleted || p.Results["stdout"] != dir+" machine-env\n" ||
		p.Results["stderr"] != "oops\n" || p.Results["return-code"] != float64(0) {
		t.Errorf("task 1 = %+v, want completed with the machine directory and environment", p)
	}
	if p, _ := f.report("2"); p.Status != api.TaskFailed || p.Message != "exit status 3" || p.Results["stdout"] != "partial\n" ||
		p.Results["return-code"] != float64(3) {
		t.Errorf("task 2 = %+v, want failed with return-code 3 and its output", p)
	}
	if p, _ := f.report("3"); p.Status != api.TaskFailed || p.Message != "command timed out after 200ms" {
		t.Errorf("task 3 = %+v, want failed as timed out", p)
	}
	if p, _ := f.report("4"); p.Status != api.TaskFailed || p.Message != errAgentRestarted {
		t.Errorf("task 4 = %+v, want failed as interrupted by a restart", p)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the task found running was run again")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	slices.Sort(f.started)
	if !slices.Equal(f.started, []string{"1", "2", "3"}) {
		t.Errorf("started %v, want the pending tasks 1, 2, 3 once each", f.started)
	}
}

// TestMachineExecHeldWhileMigrating: a pending command does not start
// while the model migrates (the fortress refuses it); it runs once the
// migration goes away.
func TestMachineExecHeldWhileMigrating(t *testing.T) {
	testkit.CheckLeaks(t)
	f := newFakeController(execTask("1", "true"))
	f.migration = &api.AgentMigration{ID: "mig-1", Phase: api.MigrationQuiesce}
	gate := fortress.New(f.State)
	mx, err := newMachineExec(execConfig{Machine: "3", Dir: t.TempDir(), Env: []string{"PATH=" + os.Getenv("PATH")},
		Caller: f, States: f.State, Lock: newLocks(), Gate: gate, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	runUntilEnd(t, mx)
	testkit.EventuallyWithin(t, 20*time.Second, func() (bool, error) { return gate.Refused() > 0, nil }, "the command held")
	f.mu.Lock()
	started := len(f.started)
	f.migration = nil
	f.changedLocked()
	f.mu.Unlock()
	if started != 0 {
		t.Fatalf("a command started while the model migrates: %v", f.started)
	}
	testkit.EventuallyWithin(t, 20*time.Second, func() (bool, error) { _, ok := f.report("1"); return ok, nil }, "the command ran after the release")
}

// runUntilEnd runs mx until the test ends, failing it if Run fails.
func runUntilEnd(t *testing.T, mx *machineExec) {
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() { errc <- mx.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-errc; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
}
