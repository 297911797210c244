package tests

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/tests/testkit"
)

// TestMigrationEndToEnd moves a live model from east to west through the
// hub with real processes (the `droverd dev` stack: PostgreSQL, OpenFGA,
// Dex, the hub, both spokes, the machines' agents and the sample charms'
// workloads): an HTTP client hits the webapp every 50 ms throughout and
// never fails; a pending action waits out the migration and runs on west;
// no hook runs twice; afterwards the model keeps its UUID, its relation
// data and its leader, its units are active on west, a config change runs
// its hook through west, and stopping east changes nothing.
func TestMigrationEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs real processes (PostgreSQL, hub, two spokes, agents)")
	}
	s := startDevStack(t)
	demo := newDroverCLI(t)
	deviceLogin(t, demo, s)
	const model = "moving"
	demo.ok("add-model", model, "east")
	charms := filepath.Join(repoRoot(t), "charms")
	webPort := testkit.FreePort(t)
	demo.ok("deploy", filepath.Join(charms, "kvstore"), "kvstore", "-m", model, "--config", fmt.Sprintf("port=%d", testkit.FreePort(t)))
	demo.ok("deploy", filepath.Join(charms, "webapp"), "webapp", "-m", model, "--config", fmt.Sprintf("port=%d", webPort))
	demo.ok("integrate", "webapp", "kvstore", "-m", model)
	waitActive(t, demo, model, "east", "kvstore", "webapp")
	demo.ok("run", "kvstore/0", "set", "key=colour", "value=teal", "-m", model)

	cl := hubClient(t, demo, s)
	uuid := modelUUID(t, cl, model)
	before := normalizedModel(t, demo, model)
	historyBefore := statusLogs(t, demo, model, "kvstore/0", "webapp/0")
	hooksBefore := hookLogs(t, s, uuid)
	if len(hooksBefore) == 0 {
		t.Fatalf("no hook logs found for model %s", uuid)
	}

	// The webapp serves throughout: every 50 ms, from now until the end.
	var hits, failures atomic.Int64
	var firstFailure atomic.Value
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			hits.Add(1)
			if _, err := httpGet(fmt.Sprintf("http://127.0.0.1:%d/data", webPort)); err != nil {
				failures.Add(1)
				firstFailure.CompareAndSwap(nil, err.Error())
			}
		}
	}()
	defer func() { close(stop); wg.Wait() }()

	// A pending action: the unit is busy with a command when the
	// migration quiesces the model, so the action queued behind it waits
	// for the migration and runs on west.
	demo.ok("exec", "--unit", "kvstore/0", "-m", model, "--background", "--", "sleep", "8")
	_, scheduled, code := demo.run("run", "kvstore/0", "get", "key=colour", "-m", model, "--background")
	m := regexp.MustCompile(`show-task (\S+)'`).FindStringSubmatch(scheduled)
	if code != 0 || m == nil {
		t.Fatalf("run --background: exit %d, %s", code, scheduled)
	}
	taskID := m[1]

	out := demo.ok("migrate", model, "west", "--wait", "--timeout", "3m")
	t.Logf("drover migrate --wait:\n%s", out)
	if !strings.Contains(out, "DONE") {
		t.Fatalf("migrate --wait:\n%s", out)
	}
	close(stop)
	wg.Wait()
	stop = make(chan struct{})
	if n := failures.Load(); n > 0 || hits.Load() < 20 {
		t.Errorf("webapp requests during the migration: %d of %d failed (first: %v)", n, hits.Load(), firstFailure.Load())
	}

	// Same UUID, on west, every unit active there.
	if got := modelUUID(t, cl, model); got != uuid {
		t.Fatalf("model UUID after migration %s, want %s", got, uuid)
	}
	waitActive(t, demo, model, "west", "kvstore", "webapp")
	// The pending action waited out the migration and ran on west: it
	// completed after the migration reached SUCCESS.
	task := waitTask(t, demo, model, taskID)
	if task["status"] != "completed" || !strings.Contains(fmt.Sprint(task["results"]), "teal") {
		t.Errorf("the pending action after the migration: %v", task)
	}
	migs, err := cl.Migrations(t.Context(), api.MigrationFilter{Model: uuid})
	if err != nil || len(migs) != 1 || migs[0].Phase != "DONE" || migs[0].Agents.OK == 0 {
		t.Fatalf("the model's migrations: %+v, %v", migs, err)
	}
	events, err := cl.MigrationEvents(t.Context(), migs[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	var success time.Time
	for _, e := range events {
		if e.Kind == "phase" && e.Phase == "SUCCESS" {
			success = e.At
		}
	}
	done, err := cl.Model(uuid).Task(t.Context(), taskID, 0)
	if err != nil || success.IsZero() || done.Completed.Before(success) {
		t.Errorf("the pending action completed at %v, the migration reached SUCCESS at %v (%v): want it run on west", done.Completed, success, err)
	}
	after := normalizedModel(t, demo, model)
	// The status history came along: every entry recorded before the
	// migration is there after it, in the same order.
	historyAfter := statusLogs(t, demo, model, "kvstore/0", "webapp/0")
	for unit, log := range historyBefore {
		if got := historyAfter[unit]; len(got) < len(log) || !slices.Equal(got[:len(log)], log) {
			t.Errorf("status history of %s after the migration does not start with the one before:\nbefore %q\nafter  %q", unit, log, got)
		}
	}
	if before != after {
		t.Errorf("the model changed in the migration:\nbefore %s\nafter  %s", before, after)
	}
	// No hook ran twice: the logs continue, and nothing was replayed.
	hooksAfter := hookLogs(t, s, uuid)
	for unit, log := range hooksBefore {
		if got := hooksAfter[unit]; len(got) < len(log) || !slices.Equal(got[:len(log)], log) {
			t.Errorf("hook log of %s was rewritten:\nbefore %q\nafter  %q", unit, log, got)
		}
	}
	// A config change runs its hook through west.
	demo.ok("config", "webapp", "title=Moved", "-m", model)
	testkit.EventuallyWithin(t, time.Minute, func() (bool, error) {
		body, err := httpGet(fmt.Sprintf("http://127.0.0.1:%d/", webPort))
		return strings.Contains(body, "Moved"), err
	}, "the webapp shows the new title set through west")
	// The migration is recorded: phases, agents, DONE.
	if out := demo.ok("migrations", "--model", model); !strings.Contains(out, "DONE") || !strings.Contains(out, "east") || !strings.Contains(out, "west") {
		t.Errorf("migrations:\n%s", out)
	}
	if out := demo.ok("show-model", model); !strings.Contains(out, "migration:") || !strings.Contains(out, "phase: DONE") {
		t.Errorf("show-model after the migration:\n%s", out)
	}
}

// waitActive waits until the model's units of apps are active, served by
// controller ctl.
func waitActive(t *testing.T, d *droverCLI, model, ctl string, apps ...string) {
	t.Helper()
	var last *api.FullStatus
	testkit.EventuallyWithin(t, 3*time.Minute, func() (bool, error) {
		fs, err := statusOf(d, model)
		if err != nil {
			return false, err
		}
		last = fs
		return fs.Controller.Name == ctl && unitsActive(fs, 1, apps...), nil
	}, "units of %v active in %s on %s; last:\n%s", apps, model, ctl, describeStatusLazy(&last))
}

func modelUUID(t *testing.T, cl *api.Client, name string) string {
	t.Helper()
	ms, err := cl.Models(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if m.Name == name {
			return m.UUID
		}
	}
	t.Fatalf("model %s not listed", name)
	return ""
}

// normalizedModel is what a migration must keep: applications, units,
// leaders, relation data and workload statuses, as the CLI shows them.
func normalizedModel(t *testing.T, d *droverCLI, model string) string {
	t.Helper()
	fs, err := statusOf(d, model)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, name := range sortedKeys(fs.Applications) {
		app := fs.Applications[name]
		fmt.Fprintf(&b, "%s charm=%s rev=%d;", name, app.Charm, app.CharmRev)
		for _, un := range sortedKeys(app.Units) {
			u := app.Units[un]
			fmt.Fprintf(&b, " %s leader=%v workload=%s/%s;", un, u.Leader, u.WorkloadStatus.Current, u.WorkloadStatus.Message)
			data := d.ok("show-unit", un, "-m", model, "--format", "json")
			var doc map[string]any
			if err := json.Unmarshal([]byte(data), &doc); err != nil {
				t.Fatalf("show-unit %s: %v", un, err)
			}
			rel, _ := json.Marshal(doc[un].(map[string]any)["relation-info"])
			fmt.Fprintf(&b, " relations=%s;", rel)
		}
	}
	return b.String()
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// statusLogs are the units' status histories, oldest first, one line per
// entry (show-status-log's JSON).
func statusLogs(t *testing.T, d *droverCLI, model string, units ...string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, u := range units {
		var entries []map[string]any
		if err := json.Unmarshal([]byte(d.ok("show-status-log", u, "-m", model, "-n", "1000", "--format", "json")), &entries); err != nil {
			t.Fatalf("show-status-log %s: %v", u, err)
		}
		for _, e := range entries {
			b, _ := json.Marshal(e)
			out[u] = append(out[u], string(b))
		}
	}
	return out
}

// hookLogs are the hooks each unit of the model recorded (the sample
// charms append one line per successful hook to hooks.log), by unit
// directory name, wherever the controllers keep their machines.
func hookLogs(t *testing.T, s *devStack, model string) map[string][]string {
	t.Helper()
	var roots []string
	for _, c := range s.info.Controllers {
		roots = append(roots, filepath.Join(c.DataDir, "machines"))
	}
	roots = append(roots, "/var/lib/drover-machines/*")
	out := map[string][]string{}
	for _, root := range roots {
		files, _ := filepath.Glob(filepath.Join(root, model, "*", "agents", "*", "charm", "hooks.log"))
		for _, f := range files {
			// A controller links the machines it adopted in the other's
			// directory: the file is listed there.
			if fi, err := os.Lstat(filepath.Dir(filepath.Dir(filepath.Dir(filepath.Dir(f))))); err == nil && fi.Mode()&os.ModeSymlink != 0 {
				continue
			}
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			unit := filepath.Base(filepath.Dir(filepath.Dir(f)))
			if _, dup := out[unit]; dup {
				t.Errorf("unit %s has hook logs on two controllers' machines", unit)
			}
			out[unit] = strings.Fields(strings.TrimSpace(string(data)))
		}
	}
	return out
}

// waitTask waits until a task has finished and returns it as show-task's
// JSON.
func waitTask(t *testing.T, d *droverCLI, model, id string) map[string]any {
	t.Helper()
	var task map[string]any
	testkit.EventuallyWithin(t, 2*time.Minute, func() (bool, error) {
		out, errs, code := d.run("show-task", id, "-m", model, "--format", "json")
		if code != 0 {
			return false, fmt.Errorf("show-task: %s", errs)
		}
		task = map[string]any{}
		if err := json.Unmarshal([]byte(out), &task); err != nil {
			return false, err
		}
		st := fmt.Sprint(task["status"])
		return st == "completed" || st == "failed", nil
	}, "task %s finished", id)
	return task
}

// TestDrainControllerEndToEnd drains three models off east with two
// migrations at a time through the real hub and spokes, then removes east
// from the hub: nothing is left on it, and every model is served by west
// with the same UUID.
func TestDrainControllerEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs real processes (PostgreSQL, hub, two spokes)")
	}
	s := startDevStack(t)
	demo := newDroverCLI(t)
	deviceLogin(t, demo, s)
	cl := hubClient(t, demo, s)
	names := []string{"drain-a", "drain-b", "drain-c"}
	uuids := map[string]string{}
	for _, n := range names {
		demo.ok("add-model", n, "east")
		demo.ok("model-config", "-m", n, "logging-config=<root>=DEBUG")
		uuids[n] = modelUUID(t, cl, n)
	}
	out := demo.ok("drain-controller", "east", "--to", "west", "--parallel", "2", "--timeout", "3m")
	t.Logf("drover drain-controller:\n%s", out)
	if !strings.Contains(out, "remove-controller east") {
		t.Errorf("drain-controller's summary does not say east can be removed:\n%s", out)
	}
	// At most two at once: the migrations' lifetimes never overlap three deep.
	migs, err := cl.Migrations(t.Context(), api.MigrationFilter{Controller: "east"})
	if err != nil || len(migs) != len(names) {
		t.Fatalf("migrations off east: %+v, %v", migs, err)
	}
	for _, m := range migs {
		if m.Phase != "DONE" || m.SourceController != "east" || m.TargetController != "west" || m.EndedAt == nil {
			t.Errorf("migration %s of %s: %s from %s to %s", m.ID, m.ModelName, m.Phase, m.SourceController, m.TargetController)
		}
	}
	for _, a := range migs {
		overlapping := 0
		for _, b := range migs {
			if !b.StartedAt.After(a.StartedAt) && b.EndedAt.After(a.StartedAt) {
				overlapping++
			}
		}
		if overlapping > 2 {
			t.Errorf("%d migrations ran at once when %s started (--parallel 2)", overlapping, a.ModelName)
		}
	}
	for _, n := range names {
		if got := modelUUID(t, cl, n); got != uuids[n] {
			t.Errorf("model %s has UUID %s after the drain, want %s", n, got, uuids[n])
		}
		if out := demo.ok("show-model", n); !strings.Contains(out, "controller-name: hub/west") || !strings.Contains(out, "migration: migrated from controller east to west") {
			t.Errorf("show-model %s after the drain:\n%s", n, out)
		}
		if cfg := demo.ok("model-config", "-m", n, "logging-config"); !strings.Contains(cfg, "<root>=DEBUG") {
			t.Errorf("model %s lost its config in the drain: %s", n, cfg)
		}
	}
	if out := demo.ok("remove-controller", "east", "-y"); !strings.Contains(out, `Controller "east" removed from the hub.`) || strings.Contains(out, "forgot the models") {
		t.Errorf("remove-controller east after the drain:\n%s", out)
	}
}

// TestMigrationAbortsForAStoppedAgentEndToEnd: a machine agent that
// cannot answer (stopped with SIGSTOP) keeps the migration from going on:
// after the agent wait it aborts naming the agent, the model stays on
// east, and once the agent runs again its hooks resume there and the
// model migrates.
func TestMigrationAbortsForAStoppedAgentEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs real processes (PostgreSQL, hub, two spokes, agents)")
	}
	root := postgresRoot(t, "drover-hub-e2e-")
	s := startDevStackIn(t, filepath.Join(root, "state"), filepath.Join(root, "dev.log"),
		"--hub-listen", testkit.FreeAddr(t), "--idp-listen", testkit.FreeAddr(t),
		"--east-listen", pairAddr(t), "--west-listen", pairAddr(t), "--log-level", "warn", "--migration-agent-wait", "6s")
	demo := newDroverCLI(t)
	deviceLogin(t, demo, s)
	const model = "stalled"
	demo.ok("add-model", model, "east")
	demo.ok("deploy", filepath.Join(repoRoot(t), "charms", "kvstore"), "kvstore", "-m", model, "--config", fmt.Sprintf("port=%d", testkit.FreePort(t)))
	waitActive(t, demo, model, "east", "kvstore")
	uuid := modelUUID(t, hubClient(t, demo, s), model)

	pid := machineAgentPID(t, s, uuid, "0")
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
				t.Errorf("resume the agent: %v", err)
			}
		}
	}
	defer resume()
	out, errs, code := demo.run("migrate", model, "west", "--wait", "--timeout", "2m")
	if code == 0 || !strings.Contains(out+errs, "ABORTED") || !strings.Contains(out+errs, "machine-"+uuid+"-0") {
		t.Fatalf("migrate with a stopped agent: exit %d\n%s\n%s", code, out, errs)
	}
	resume()

	// The model stays on east, and its hooks run there again.
	before := len(hookLogs(t, s, uuid)["unit-kvstore-0"])
	demo.ok("config", "kvstore", fmt.Sprintf("port=%d", testkit.FreePort(t)), "-m", model)
	testkit.EventuallyWithin(t, time.Minute, func() (bool, error) {
		log := hookLogs(t, s, uuid)["unit-kvstore-0"]
		return len(log) > before && slices.Contains(log[before:], "config-changed"), nil
	}, "kvstore/0 ran config-changed on east after the abort")
	waitActive(t, demo, model, "east", "kvstore")

	// And it migrates once its agent answers.
	if out := demo.ok("migrate", model, "west", "--wait", "--timeout", "2m"); !strings.Contains(out, "DONE") {
		t.Fatalf("migrate after the agent resumed:\n%s", out)
	}
	waitActive(t, demo, model, "west", "kvstore")
}

// machineAgentPID is the PID of the agent of a model's machine, from the
// agent.pid in its directory (wherever the controllers keep machines).
func machineAgentPID(t *testing.T, s *devStack, model, machine string) int {
	t.Helper()
	var roots []string
	for _, c := range s.info.Controllers {
		roots = append(roots, filepath.Join(c.DataDir, "machines"))
	}
	roots = append(roots, "/var/lib/drover-machines/*")
	for _, root := range roots {
		files, _ := filepath.Glob(filepath.Join(root, model, machine, "agent.pid"))
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
			if err == nil && pid > 0 {
				return pid
			}
		}
	}
	t.Fatalf("no agent.pid for machine %s of model %s", machine, model)
	return 0
}
