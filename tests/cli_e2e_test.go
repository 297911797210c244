package tests

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/spoke/provider/local"
	"github.com/droverhq/drover/tests/testkit"
)

// droverCLI runs the built drover binary with its own client store.
type droverCLI struct {
	t     *testing.T
	bin   string
	store string
	extra []string // more environment, NAME=VALUE
}

func newDroverCLI(t *testing.T) *droverCLI {
	return &droverCLI{t: t, bin: filepath.Join(binaries(t), "drover"), store: filepath.Join(t.TempDir(), "store")}
}

func (d *droverCLI) env() []string {
	return append(append(os.Environ(), "DROVER_DATA="+d.store, "TERM=xterm"), d.extra...)
}

// run runs drover and returns stdout, stderr and the exit code.
func (d *droverCLI) run(args ...string) (string, string, int) {
	d.t.Helper()
	cmd := exec.Command(d.bin, args...)
	cmd.Env = d.env()
	cmd.Dir = "testdata"
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		d.t.Fatalf("drover %v: %v", args, err)
	}
	return out.String(), errb.String(), code
}

// ok runs drover and fails the test unless it exits 0.
func (d *droverCLI) ok(args ...string) string {
	d.t.Helper()
	out, errs, code := d.run(args...)
	if code != 0 {
		d.t.Fatalf("drover %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, out, errs)
	}
	return out + errs
}

// TestCLIEndToEnd drives the built drover binary against a droverd it
// bootstraps itself, through a whole model's life.
func TestCLIEndToEnd(t *testing.T) {
	d := newDroverCLI(t)
	dataDir := filepath.Join(t.TempDir(), "ctl")
	t.Cleanup(func() { killLeftover(dataDir) })

	listen, raftListen := testkit.FreeAddr(t), testkit.FreeAddr(t)
	out := d.ok("bootstrap", "e2e", "--data-dir", dataDir, "--listen", listen, "--raft-listen", raftListen)
	if !strings.Contains(out, `Bootstrap complete, controller "e2e"`) {
		t.Fatalf("bootstrap output:\n%s", out)
	}
	pid, err := readPIDFile(dataDir)
	if err != nil {
		t.Fatal(err)
	}
	if out := d.ok("controllers"); !regexp.MustCompile(`(?m)^e2e\*\s+-\s+admin\s+superuser\s+localhost\s+\d+\s+1\s+none`).MatchString(out) {
		t.Errorf("controllers:\n%s", out)
	}
	if out := d.ok("show-controller", "--format", "json"); !strings.Contains(out, `"leader":true`) {
		t.Errorf("show-controller:\n%s", out)
	}

	d.ok("add-model", "demo")
	if out := d.ok("switch"); strings.TrimSpace(out) != "e2e:demo" {
		t.Errorf("switch: %q", out)
	}
	// --wait follows the model until every unit of the bundle (the
	// subordinate logfwd units included) has run its hooks and is idle.
	out = d.ok("deploy", "./bundle/bundle.yaml", "--wait=5m")
	for _, want := range []string{`Deployed "kv"`, "Added web/0 on kv/0", `Exposed "web"`, "Related kv:kv web:db", "5/5 units settled"} {
		if !strings.Contains(out, want) {
			t.Errorf("deploy output lacks %q:\n%s", want, out)
		}
	}

	// The bundle's trust: true is honoured.
	if out := d.ok("show-application", "web"); !strings.Contains(out, "  trust: true\n") {
		t.Errorf("show-application web (trusted by the bundle):\n%s", out)
	}

	// An ambiguous integration lists the candidates and exits 1.
	_, errs, code := d.run("integrate", "web", "kv")
	if code != 1 || !strings.Contains(errs, "ERROR ambiguous relation") || !strings.Contains(errs, "web:cache") {
		t.Errorf("ambiguous integrate: exit %d\n%s", code, errs)
	}
	d.ok("integrate", "web:cache", "kv")

	d.ok("config", "kv", "port=7005", "debug=true")
	if out := d.ok("config", "kv", "port"); strings.TrimSpace(out) != "7005" {
		t.Errorf("config get: %q", out)
	}
	d.ok("config", "kv", "--reset", "debug")
	if out := d.ok("scale", "kv", "3", "--wait=5m"); !strings.Contains(out, "units settled") {
		t.Errorf("scale --wait:\n%s", out)
	}
	if out := d.ok("actions", "kv", "--schema"); !strings.Contains(out, "get:\n") || !strings.Contains(out, "params:") {
		t.Errorf("actions --schema (YAML by default):\n%s", out)
	}
	if out := d.ok("actions", "kv"); !strings.Contains(out, "get      Read a key.") {
		t.Errorf("actions:\n%s", out)
	}

	// The unit agent runs the action; its results come back.
	out = d.ok("run", "kv/0", "get", "key=foo", "--background")
	m := regexp.MustCompile(`task (\S+) on unit-kv-0`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("run output:\n%s", out)
	}
	var task struct {
		ID, Unit, Status string
		Results          map[string]any
	}
	if err := json.Unmarshal([]byte(d.ok("show-task", m[1], "--wait", "2m", "--format", "json")), &task); err != nil {
		t.Fatal(err)
	}
	if task.Status != api.TaskCompleted || task.Unit != "kv/0" || task.ID != m[1] || task.Results["value"] != "value-of-foo" ||
		task.Results["return-code"] != float64(0) {
		t.Errorf("task: %+v", task)
	}

	// As jubilant drives it: --format json, --wait as a separate argument;
	// the results are Juju's shape, keyed by unit.
	stdout, errs, code := d.run("run", "kv/0", "get", "key=foo", "--format", "json", "--wait", "2m")
	var ran map[string]struct {
		ID, Status, Unit string
		Results          map[string]any
	}
	if err := json.Unmarshal([]byte(stdout), &ran); code != 0 || err != nil || ran["kv/0"].Status != api.TaskCompleted ||
		ran["kv/0"].Unit != "kv/0" || ran["kv/0"].Results["value"] != "value-of-foo" || ran["kv/0"].Results["return-code"] != float64(0) {
		t.Errorf("run --format json: exit %d (%v)\n%s%s", code, err, stdout, errs)
	}

	// status --format json matches the model.
	var fs api.FullStatus
	if err := json.Unmarshal([]byte(d.ok("status", "--format", "json")), &fs); err != nil {
		t.Fatal(err)
	}
	checkE2EStatus(t, &fs)
	tab := d.ok("status")
	for _, want := range []string{"kv/2", "  logfwd/0", "web:cache", "Integration provider"} {
		if !strings.Contains(tab, want) {
			t.Errorf("status lacks %q:\n%s", want, tab)
		}
	}
	// show-status-log: the entity says what it is (a unit, a machine).
	if out := d.ok("show-status-log", "kv/0"); !regexp.MustCompile(`(?m)workload\s+active`).MatchString(out) {
		t.Errorf("show-status-log kv/0:\n%s", out)
	}
	if out := d.ok("show-status-log", "0"); !regexp.MustCompile(`(?m)machine\s+started`).MatchString(out) {
		t.Errorf("show-status-log 0 (a machine):\n%s", out)
	}
	// The kv charm's install hook wrote a line with juju-log; the agent sent
	// it to the controller, and debug-log replays it, for kv/0 only.
	out = d.ok("debug-log", "--replay", "--no-tail", "--include", "kv/0")
	if !regexp.MustCompile(`(?m)^unit-kv-0: \d\d:\d\d:\d\d INFO unit\.kv/0\.juju-log kv installed on kv/0$`).MatchString(out) ||
		// and, as Juju's uniter does, every hook it ran
		!regexp.MustCompile(`(?m)^unit-kv-0: \d\d:\d\d:\d\d INFO juju\.worker\.uniter\.operation ran "install" hook \(via `).MatchString(out) ||
		strings.Contains(out, "unit-kv-1:") {
		t.Errorf("debug-log --replay --no-tail --include kv/0:\n%s", out)
	}
	if out := d.ok("debug-log", "--no-tail", "-n", "1", "--include", "kv/1", "--level", "INFO"); strings.Count(out, "\n") != 1 ||
		!strings.HasPrefix(out, "unit-kv-1: ") {
		t.Errorf("debug-log -n 1 --include kv/1:\n%s", out)
	}

	// status --watch sees its model to the end: destroyed, it says so and
	// exits 0.
	d.ok("add-model", "brief", "--no-switch")
	watch := exec.Command(d.bin, "status", "--watch", "-m", "brief")
	watch.Env = d.env()
	var wout, werr testkit.SyncBuffer // read while the command writes
	watch.Stdout, watch.Stderr = &wout, &werr
	if err := watch.Start(); err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyWithin(t, 20*time.Second, func() (bool, error) {
		return strings.Contains(wout.String(), "brief"), nil
	}, "status --watch drew the model")
	d.ok("destroy-model", "brief", "-y")
	done := make(chan error, 1)
	go func() { done <- watch.Wait() }()
	select {
	case err := <-done:
		if err != nil || !strings.Contains(werr.String(), `Model "brief" is gone`) {
			t.Errorf("status --watch of a destroyed model: %v\n%s", err, werr.String())
		}
	case <-time.After(30 * time.Second):
		_ = watch.Process.Kill()
		t.Errorf("status --watch still runs after its model was destroyed:\n%s", werr.String())
	}

	// A standalone controller offers its own cloud and region.
	if out := d.ok("clouds"); !strings.Contains(out, `Clouds available on controller "e2e":`) ||
		!regexp.MustCompile(`(?m)^localhost\s+localhost\s+e2e$`).MatchString(out) {
		t.Errorf("clouds at a standalone controller:\n%s", out)
	}

	// destroy-controller refuses while applications exist.
	_, errs, code = d.run("destroy-controller", "e2e", "-y")
	if code != 1 || !strings.Contains(errs, "--destroy-all-models") {
		t.Errorf("destroy-controller with applications: exit %d\n%s", code, errs)
	}

	// Unprovisioned machines only go once a provisioner removes them, so
	// do not wait for the model to disappear.
	d.ok("destroy-model", "demo", "--force", "-y", "--no-wait")
	if out := d.ok("models", "--format", "json"); strings.Contains(out, `"life":"alive"`) {
		t.Errorf("model still alive after destroy-model:\n%s", out)
	}

	// A node restarted by hand (or by a service manager) records its own
	// PID: kill-controller stops it, not the process bootstrap started.
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyWithin(t, 30*time.Second, func() (bool, error) { return !alive(pid), nil }, "droverd %d stops", pid)
	restarted := exec.Command(filepath.Join(filepath.Dir(d.bin), "droverd"), "spoke", "--bootstrap", "--name", "e2e",
		"--data-dir", dataDir, "--listen", listen, "--raft-listen", raftListen)
	restarted.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := restarted.Start(); err != nil {
		t.Fatal(err)
	}
	go restarted.Wait() //nolint:errcheck // reaped; the test checks it is gone
	pid = restarted.Process.Pid
	testkit.EventuallyWithin(t, 60*time.Second, func() (bool, error) {
		_, _, code := d.run("models")
		return code == 0, nil
	}, "the restarted controller answers")
	d.ok("kill-controller", "e2e", "-y")
	if alive(pid) {
		t.Errorf("droverd (pid %d) still runs after kill-controller", pid)
	}
	if left := processesNaming(dataDir); len(left) > 0 {
		t.Errorf("machine agents or workloads still run after kill-controller: %v", left)
	}
	if _, err := os.Stat(dataDir); !os.IsNotExist(err) {
		t.Errorf("data dir left behind: %v", err)
	}
	if out := d.ok("controllers"); !strings.Contains(out, "No controllers") {
		t.Errorf("controllers after kill:\n%s", out)
	}
}

func checkE2EStatus(t *testing.T, fs *api.FullStatus) {
	t.Helper()
	if fs.Model.Name != "demo" || fs.Model.Controller != "e2e" {
		t.Errorf("model: %+v", fs.Model)
	}
	kv, web, lf := fs.Applications["kv"], fs.Applications["web"], fs.Applications["logfwd"]
	if len(kv.Units) != 3 || len(web.Units) != 1 || len(lf.Units) != 0 || !web.Exposed || kv.Exposed {
		t.Errorf("applications: kv %d units, web %d units (exposed %v), logfwd %d units", len(kv.Units), len(web.Units), web.Exposed, len(lf.Units))
	}
	if len(lf.SubordinateTo) != 1 || lf.SubordinateTo[0] != "kv" {
		t.Errorf("logfwd subordinate-to %v", lf.SubordinateTo)
	}
	if u := kv.Units["kv/0"]; len(u.Subordinates) != 1 || web.Units["web/0"].Machine != u.Machine {
		t.Errorf("kv/0 subordinates %v, web/0 on machine %q, kv/0 on %q", u.Subordinates, web.Units["web/0"].Machine, u.Machine)
	}
	want := map[string]bool{"kv:kv web:db": false, "kv:kv web:cache": false, "kv:juju-info logfwd:juju-info": false, "kv:cluster kv:cluster": false}
	for _, r := range fs.Relations {
		key := r.Provider + " " + r.Requirer
		if _, ok := want[key]; ok {
			want[key] = true
		}
	}
	for k, seen := range want {
		if !seen {
			t.Errorf("relation %s missing from status: %+v", k, fs.Relations)
		}
	}
	if len(fs.Machines) != 3 {
		t.Errorf("%d machines, want 3", len(fs.Machines))
	}
}

func readPIDFile(dir string) (int, error) {
	data, err := os.ReadFile(filepath.Join(dir, "droverd.pid"))
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(data)))
}

// alive reports whether pid runs and is not a zombie.
func alive(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(stat, ')')
	return i < 0 || i+2 >= len(stat) || (stat[i+2] != 'Z' && stat[i+2] != 'X')
}

// killLeftover kills the processes a failed test left running: the
// bootstrap node and any HA nodes beside it, then (no provisioner left to
// start them again) their local machines' agents and workloads.
func killLeftover(dataDir string) {
	dirs, _ := filepath.Glob(dataDir + "-ha-*")
	dirs = append([]string{dataDir}, dirs...)
	for _, dir := range dirs {
		if pid, err := readPIDFile(dir); err == nil && alive(pid) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	for _, dir := range dirs {
		killLocalProcessesUnder(dir)
		// As root the machines live outside the data dir, each a user of
		// its own: their processes, users and directories go too.
		_ = local.DestroyMachines(local.DefaultDir(dir), 5*time.Second)
	}
}

// processesNaming lists live processes whose command line or working
// directory is under dir.
func processesNaming(dir string) []string {
	entries, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		base := "/proc/" + e.Name()
		if st, err := os.ReadFile(base + "/stat"); err != nil || strings.Contains(string(st), ") Z ") {
			continue
		}
		cmd, _ := os.ReadFile(base + "/cmdline")
		cwd, _ := os.Readlink(base + "/cwd")
		if strings.Contains(string(cmd), dir) || strings.HasPrefix(cwd, dir) {
			out = append(out, e.Name()+": "+strings.ReplaceAll(string(cmd), "\x00", " "))
		}
	}
	return out
}
