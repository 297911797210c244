package tests

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/droverhq/drover/charm"
	"github.com/droverhq/drover/tests/testkit"
)

// TestCLIAsACharmTestDrivesIt drives the CLI as a charm author's
// integration test (jubilant, pytest-operator) drives juju: through a
// juju symlink to drover, with the flags those libraries pass, parsing
// every answer with decoders that mirror Juju 3.6's JSON (closed shapes
// refuse unknown keys, open ones must hold their required keys). A .charm
// archive with a file resource is deployed, related to a second
// application, waited for, read back, acted on (an action with a params
// file, a failing action, exec, a failing exec) and destroyed with
// --destroy-storage --force.
func TestCLIAsACharmTestDrivesIt(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs real processes")
	}
	d := newDroverCLI(t)
	dataDir := filepath.Join(t.TempDir(), "ctl")
	t.Cleanup(func() { killLeftover(dataDir) })
	d.ok("bootstrap", "scripted", "--data-dir", dataDir, "--listen", testkit.FreeAddr(t), "--raft-listen", testkit.FreeAddr(t))
	t.Cleanup(func() { d.run("kill-controller", "scripted", "-y") })

	// The same program under Juju's name, as `pip install jubilant` finds it.
	juju := *d
	juju.bin = filepath.Join(t.TempDir(), "juju")
	if err := os.Symlink(d.bin, juju.bin); err != nil {
		t.Fatal(err)
	}
	j := &jujuScript{t: t, cli: &juju}

	var ver string
	decodeJuju(t, "version --format json", j.ok("version", "--format", "json"), &ver)
	if !regexp.MustCompile(`^\d+\.\d+\.\d+-genericlinux-[a-z0-9]+$`).MatchString(ver) {
		t.Errorf("version %q is not Juju's NUMBER-genericlinux-ARCH", ver)
	}

	// jubilant's temp_model: add-model --no-switch, then -m on every call.
	j.ok("add-model", "charmtest", "--no-switch")
	m := []string{"-m", "charmtest"}
	j.ok(append(m, "model-config", "update-status-hook-interval=1h")...)

	files := t.TempDir()
	archive := packCharm(t, filepath.Join("testdata", "charms", "res"), files)
	conf := filepath.Join(files, "conf.txt")
	params := filepath.Join(files, "params.yaml")
	writeFile(t, conf, "first")
	writeFile(t, params, "prefix: 'conf='\ntimes: 2\n")

	j.ok(append(m, "deploy", archive, "--resource", "conf="+conf)...)
	j.ok(append(m, "deploy", "./charms/kv", "store")...)
	j.ok(append(m, "integrate", "res:db", "store:kv")...)
	j.ok(append(m, "wait-for", "application", "res", "--query", `life=="alive" && status=="active"`, "--timeout", "5m")...)
	j.ok(append(m, "wait-for", "unit", "store/0", "--timeout", "5m")...)

	var st jujuStatus
	decodeJuju(t, "status --format json", j.ok(append(m, "status", "--format", "json")...), &st)
	checkScriptStatus(t, &st)

	// An action with a params file, as jubilant's run(params=...) passes it.
	ran := map[string]jujuTask{}
	decodeJuju(t, "run --params --format json", j.ok(append(m, "run", "res/0", "read-conf", "--params", params, "--format", "json", "--wait", "2m")...), &ran)
	if task := ran["res/0"]; len(ran) != 1 || task.Status != "completed" || task.Unit != "res/0" || task.ID == "" ||
		task.Results["content"] != "conf=firstfirst" || task.Results["greeting"] != "hello" ||
		task.Results["return-code"] != float64(0) || task.Results["stdout"] != "read 5 bytes\n" ||
		len(task.Log) != 1 || !strings.HasSuffix(task.Log[0], " reading "+resourcePathOf(task.Log[0])) ||
		task.Timing.Enqueued == "" || task.Timing.Started == "" || task.Timing.Completed == "" {
		t.Errorf("run read-conf: %+v", ran)
	}

	// A failing action: its results are printed, then "task failed", exit 1.
	out, errs, code := j.run(append(m, "run", "res/0", "fail", "reason=told to", "--format", "json", "--wait", "2m")...)
	failed := map[string]jujuTask{}
	decodeJuju(t, "run fail --format json", out, &failed)
	if task := failed["res/0"]; code != 1 || task.Status != "failed" || task.Message != "told to" ||
		!strings.Contains(errs, "ERROR the following task failed:\n - id \""+task.ID+"\" with return code 0") {
		t.Errorf("run fail: exit %d %+v\n%s", code, failed, errs)
	}
	// An action the charm does not define.
	if _, errs, code := j.run(append(m, "run", "res/0", "nope", "--format", "json", "--wait", "2m")...); code != 1 || !strings.Contains(errs, "(not found)") {
		t.Errorf("run of an unknown action: exit %d\n%s", code, errs)
	}

	// exec in the unit's hook context, where resource-get works too. As
	// Juju does, the arguments are joined with spaces into one shell
	// command (jubilant's exec(command, *args) relies on it).
	execd := map[string]jujuTask{}
	decodeJuju(t, "exec --format json", j.ok(append(m, "exec", "--unit", "res/0", "--format", "json", "--wait", "2m", "--",
		`cat "$(resource-get conf)";`, "echo", `" on $JUJU_UNIT_NAME"`)...), &execd)
	if task := execd["res/0"]; len(execd) != 1 || task.Status != "completed" || task.Results["return-code"] != float64(0) ||
		task.Results["stdout"] != "first on res/0\n" {
		t.Errorf("exec: %+v", execd)
	}
	out, errs, code = j.run(append(m, "exec", "--unit", "res/0", "--format", "json", "--wait", "2m", "--", "echo oops >&2; exit 3")...)
	execd = map[string]jujuTask{}
	decodeJuju(t, "failing exec --format json", out, &execd)
	if task := execd["res/0"]; code != 1 || task.Status != "failed" || task.Results["return-code"] != float64(3) ||
		task.Results["stderr"] != "oops\n" || !strings.Contains(errs, "with return code 3") {
		t.Errorf("failing exec: exit %d %+v\n%s", code, execd, errs)
	}

	units := map[string]jujuUnitInfo{}
	decodeJuju(t, "show-unit --format json", j.ok(append(m, "show-unit", "res/0", "--format", "json")...), &units)
	if u := units["res/0"]; len(units) != 1 || !regexp.MustCompile(`^local:res-\d+$`).MatchString(u.Charm) || !u.Leader ||
		u.Life != "alive" || u.Machine != st.Applications["res"].Units["res/0"].Machine || u.OpenedPorts == nil ||
		len(u.RelationInfo) != 1 || u.RelationInfo[0].Endpoint != "db" || u.RelationInfo[0].RelatedEndpoint != "kv" ||
		u.RelationInfo[0].ApplicationData == nil {
		t.Errorf("show-unit res/0: %+v", units)
	}

	var cfg jujuAppConfig
	decodeJuju(t, "config --format json", j.ok(append(m, "config", "res", "--format", "json")...), &cfg)
	if g := cfg.Settings["greeting"]; cfg.Application != "res" || cfg.Charm != "res" || g.Value != "hello" || g.Default != "hello" ||
		g.Type != "string" || g.Source != "default" || cfg.ApplicationConfig["trust"].Value != false {
		t.Errorf("config res: %+v", cfg)
	}

	mcfg := map[string]jujuConfigValue{}
	decodeJuju(t, "model-config --format json", j.ok(append(m, "model-config", "--format", "json")...), &mcfg)
	if v := mcfg["update-status-hook-interval"]; v.Value != "1h" || v.Source != "model" {
		t.Errorf("model-config update-status-hook-interval: %+v", v)
	}
	if v := mcfg["automatically-retry-hooks"]; v.Source != "default" {
		t.Errorf("model-config automatically-retry-hooks: %+v", v)
	}

	shown := map[string]jujuModelInfo{}
	decodeJuju(t, "show-model --format json", j.ok(append(m, "show-model", "--format", "json")...), &shown)
	if info, ok := shown["charmtest"]; len(shown) != 1 || !ok || info.Name != "admin/charmtest" || info.ShortName != "charmtest" ||
		info.UUID != st.Model.UUID || info.ModelType != "iaas" || info.ControllerUUID == "" || info.ControllerName != "scripted" ||
		info.IsController == nil || *info.IsController || info.Cloud == "" || info.Life != "alive" || info.Status == nil || info.Status.Current != "available" {
		t.Errorf("show-model: %+v", shown)
	}

	var models jujuModelSummarySet
	decodeJuju(t, "models --format json", j.ok("models", "--format", "json"), &models)
	var listed *jujuModelSummary
	for i, mi := range models.Models {
		if mi.ShortName == "charmtest" {
			listed = &models.Models[i]
		}
	}
	if listed == nil || listed.Name != "admin/charmtest" || listed.UUID != st.Model.UUID || listed.ModelType != "iaas" ||
		listed.ControllerUUID != shown["charmtest"].ControllerUUID || listed.ControllerName != "scripted" || listed.IsController == nil ||
		listed.Cloud != st.Model.Cloud || listed.Region != st.Model.Region || listed.Life != "alive" ||
		listed.Status == nil || listed.Status.Current != "available" || listed.Current || models.CurrentModel != "" {
		t.Errorf("models (charmtest listed, not current after --no-switch): %+v", models)
	}

	// debug-log --limit: the most recent lines, in Juju's line format, and exit.
	out = j.ok(append(m, "debug-log", "--limit", "5")...)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 5 {
		t.Errorf("debug-log --limit 5 printed %d lines:\n%s", len(lines), out)
	}
	for _, l := range lines {
		if !regexp.MustCompile(`^(unit|machine)-[a-z0-9-]+: \d\d:\d\d:\d\d (TRACE|DEBUG|INFO|WARNING|ERROR|CRITICAL) \S+ `).MatchString(l) {
			t.Errorf("debug-log line not in Juju's format: %q", l)
		}
	}

	j.ok("destroy-model", "charmtest", "--no-prompt", "--destroy-storage", "--force")
	// No models and no current one: an empty list, no current-model, as
	// Juju prints them.
	if out := j.ok("models", "--format", "json"); strings.TrimSpace(out) != `{"models":[]}` {
		t.Errorf("models after destroy-model: %s", out)
	}
}

// jujuScript runs the CLI as a test library does: stdout is the answer,
// stderr the progress and errors, the exit code the verdict.
type jujuScript struct {
	t   *testing.T
	cli *droverCLI
}

func (j *jujuScript) run(args ...string) (string, string, int) {
	j.t.Helper()
	return j.cli.run(args...)
}

// ok runs juju and returns its stdout, failing the test unless it exits 0.
func (j *jujuScript) ok(args ...string) string {
	j.t.Helper()
	out, errs, code := j.cli.run(args...)
	if code != 0 {
		j.t.Fatalf("juju %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, out, errs)
	}
	return out
}

// decodeJuju decodes one JSON document into v, refusing keys v's structs
// do not name (maps take any key) and anything after the document.
func decodeJuju(t *testing.T, what, data string, v any) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("%s is not Juju's shape: %v\n%s", what, err, data)
	}
	if _, err := dec.Token(); err != io.EOF {
		t.Fatalf("%s: more than one JSON document:\n%s", what, data)
	}
}

// resourcePathOf returns the path at the end of an action-log line.
func resourcePathOf(line string) string {
	return line[strings.LastIndexByte(line, ' ')+1:]
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// packCharm packs a charm directory into dir as NAME.charm, as charmcraft
// pack would.
func packCharm(t *testing.T, charmDir, dir string) string {
	t.Helper()
	var buf bytes.Buffer
	if err := charm.ArchiveDir(charmDir, &buf); err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(dir, filepath.Base(charmDir)+".charm")
	writeFile(t, archive, buf.String())
	return archive
}
