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

	// jubilant's version(): --all, parsed by Juju's version regexps.
	var ver string
	decodeJuju(t, "version --format json", j.ok("version", "--format", "json"), &ver)
	var all jujuVersionDetail
	decodeJuju(t, "version --format json --all", j.ok("version", "--format", "json", "--all"), &all)
	if !regexp.MustCompile(`^\d+\.\d+(\.\d+)?-genericlinux-[a-z0-9]+$`).MatchString(ver) || all.Version != ver || all.Compiler == "" {
		t.Errorf("version %q, --all %+v: not Juju's NUMBER-genericlinux-ARCH", ver, all)
	}

	// jubilant's add_model: --no-switch, then --model after the command
	// name on every call that works in the model.
	j.ok("add-model", "--no-switch", "charmtest")
	j.model = "charmtest"
	j.ok("model-config", "update-status-hook-interval=1h")

	files := t.TempDir()
	archive := packCharm(t, filepath.Join("testdata", "charms", "res"), files)
	conf := filepath.Join(files, "conf.txt")
	params := filepath.Join(files, "params.yaml")
	writeFile(t, conf, "first")
	writeFile(t, params, "prefix: conf=\ntimes: 2\n") // as jubilant's yaml.safe_dump writes run's params

	j.ok("deploy", archive, "--resource", "conf="+conf)
	j.ok("deploy", "./charms/kv", "store")
	j.ok("integrate", "res:db", "store:kv")
	j.ok("wait-for", "application", "res", "--query", `life=="alive" && status=="active"`, "--timeout", "5m")
	j.ok("wait-for", "unit", "store/0", "--timeout", "5m")

	var st jujuStatus
	decodeJuju(t, "status --format json", j.ok("status", "--format", "json"), &st)
	checkScriptStatus(t, &st)

	// jubilant's run(unit, action, params, wait=120): the params in a YAML
	// file, the wait in seconds as a float.
	ran := map[string]jujuTask{}
	decodeJuju(t, "run --params", j.ok("run", "--format", "json", "res/0", "read-conf", "--wait", "120.0s", "--params", params), &ran)
	if task := ran["res/0"]; len(ran) != 1 || task.Status != "completed" || task.Unit != "res/0" || task.ID == "" ||
		task.Results["content"] != "conf=firstfirst" || task.Results["greeting"] != "hello" ||
		task.Results["return-code"] != float64(0) || task.Results["stdout"] != "read 5 bytes\n" ||
		len(task.Log) != 1 || !regexp.MustCompile(`^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d+)? [+-]\d{4} \S+ reading /\S+/conf\.txt$`).MatchString(task.Log[0]) ||
		task.Timing.Enqueued == "" || task.Timing.Started == "" || task.Timing.Completed == "" {
		t.Errorf("run read-conf: %+v", ran)
	}

	// APP/leader runs on the leader, keyed by the unit it ran on.
	ran = map[string]jujuTask{}
	decodeJuju(t, "run on res/leader", j.ok("run", "--format", "json", "res/leader", "read-conf", "--wait", "120.0s", "--params", params), &ran)
	if task := ran["res/0"]; len(ran) != 1 || task.Status != "completed" || task.Results["content"] != "conf=firstfirst" {
		t.Errorf("run on res/leader: %+v", ran)
	}
	// A wait that runs out: "timed out" (jubilant raises TimeoutError) and
	// no results.
	if out, errs, code := j.run("run", "--format", "json", "res/0", "read-conf", "--wait", "0.001s", "--params", params); code != 1 ||
		strings.TrimSpace(out) != "" || !strings.Contains(errs, "timed out") {
		t.Errorf("run --wait 0.001s: exit %d\n%s%s", code, out, errs)
	}

	// A failing action: its results on stdout, then "task failed", exit 1
	// (jubilant reads both, and raises TaskError).
	out, errs, code := j.run("run", "--format", "json", "res/0", "fail", "--wait", "120.0s", "--params", writeParams(t, files, "reason: told to\n"))
	failed := map[string]jujuTask{}
	decodeJuju(t, "failed run", out, &failed)
	if task := failed["res/0"]; code != 1 || task.Status != "failed" || task.Message != "told to" ||
		!strings.Contains(errs, "ERROR the following task failed:\n - id \""+task.ID+"\" with return code 0") {
		t.Errorf("run fail: exit %d %+v\n%s", code, failed, errs)
	}
	// An action the charm does not define: jubilant raises on an error
	// without "task failed"; Juju's text ends "(not found)".
	if out, errs, code := j.run("run", "--format", "json", "res/0", "nope", "--wait", "120.0s"); code != 1 || out != "" ||
		strings.Contains(errs, "task failed") || !strings.Contains(errs, "(not found)") {
		t.Errorf("run of an unknown action: exit %d\n%s%s", code, out, errs)
	}

	// jubilant's exec(command, *args, unit=U): the unit's hook context,
	// where resource-get works too; as Juju does, the words are joined
	// with spaces into one shell command.
	execd := map[string]jujuTask{}
	decodeJuju(t, "exec", j.ok("exec", "--format", "json", "--unit", "res/0", "--wait", "120.0s", "--",
		`cat "$(resource-get conf)";`, "echo", `" on $JUJU_UNIT_NAME"`), &execd)
	if task := execd["res/0"]; len(execd) != 1 || task.Status != "completed" || task.Results["return-code"] != float64(0) ||
		task.Results["stdout"] != "first on res/0\n" {
		t.Errorf("exec: %+v", execd)
	}
	out, errs, code = j.run("exec", "--format", "json", "--unit", "res/0", "--wait", "120.0s", "--", "echo oops >&2; exit 3")
	execd = map[string]jujuTask{}
	decodeJuju(t, "failing exec", out, &execd)
	if task := execd["res/0"]; code != 1 || task.Status != "failed" || task.Results["return-code"] != float64(3) ||
		task.Results["stderr"] != "oops\n" || !strings.Contains(errs, "task failed") || !strings.Contains(errs, "with return code 3") {
		t.Errorf("failing exec: exit %d %+v\n%s", code, execd, errs)
	}

	units := map[string]jujuUnitInfo{}
	decodeJuju(t, "show-unit", j.ok("show-unit", "res/0", "--format", "json"), &units)
	if u := units["res/0"]; len(units) != 1 || !regexp.MustCompile(`^local:res-\d+$`).MatchString(u.Charm) || !u.Leader ||
		u.Life != "alive" || u.Machine != st.Applications["res"].Units["res/0"].Machine || u.OpenedPorts == nil ||
		len(u.RelationInfo) != 1 || u.RelationInfo[0].Endpoint != "db" || u.RelationInfo[0].RelatedEndpoint != "kv" ||
		u.RelationInfo[0].ApplicationData == nil || !u.RelationInfo[0].RelatedUnits["store/0"].InScope {
		t.Errorf("show-unit res/0: %+v", units)
	}

	// jubilant's config(app) and config(app, app_config=True).
	var cfg jujuAppConfig
	decodeJuju(t, "config", j.ok("config", "--format", "json", "res"), &cfg)
	if g := cfg.Settings["greeting"]; cfg.Application != "res" || cfg.Charm != "res" || g.Value != "hello" || g.Default != "hello" ||
		g.Type != "string" || g.Source != "default" || cfg.ApplicationConfig["trust"].Value != false || cfg.ApplicationConfig["trust"].Type != "bool" {
		t.Errorf("config res: %+v", cfg)
	}

	// jubilant's model_config(): {KEY: {Value, Source}}.
	mcfg := map[string]jujuConfigValue{}
	decodeJuju(t, "model-config", j.ok("model-config", "--format", "json"), &mcfg)
	if v := mcfg["update-status-hook-interval"]; v.Value != "1h" || v.Source != "model" {
		t.Errorf("model-config update-status-hook-interval: %+v", v)
	}
	if v := mcfg["automatically-retry-hooks"]; v.Source != "default" {
		t.Errorf("model-config automatically-retry-hooks: %+v", v)
	}

	// jubilant's show_model(): the model as an argument, keyed by its short name.
	shown := map[string]jujuModelInfo{}
	decodeJuju(t, "show-model", j.global("show-model", "--format", "json", "charmtest"), &shown)
	if info, ok := shown["charmtest"]; len(shown) != 1 || !ok || info.Name != "admin/charmtest" || info.ShortName != "charmtest" ||
		info.UUID != st.Model.UUID || info.ModelType != "iaas" || info.ControllerUUID == "" || info.ControllerName != "scripted" ||
		info.IsController == nil || *info.IsController || info.Cloud == "" || info.Life != "alive" || info.Status == nil || info.Status.Current != "available" {
		t.Errorf("show-model: %+v", shown)
	}

	var models jujuModelSummarySet
	decodeJuju(t, "models", j.global("models", "--format", "json"), &models)
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

	// jubilant's debug_log(limit=5): the most recent lines, in Juju's line
	// format, and exit.
	out = j.ok("debug-log", "--limit", "5")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 5 {
		t.Errorf("debug-log --limit 5 printed %d lines:\n%s", len(lines), out)
	}
	for _, l := range lines {
		if !regexp.MustCompile(`^(unit|machine)-[a-z0-9-]+: \d\d:\d\d:\d\d (TRACE|DEBUG|INFO|WARNING|ERROR|CRITICAL) \S+ `).MatchString(l) {
			t.Errorf("debug-log line not in Juju's format: %q", l)
		}
	}

	// jubilant's destroy_model(name, destroy_storage=True, force=True).
	j.global("destroy-model", "charmtest", "--no-prompt", "--destroy-storage", "--force")
	// No models and no current one: an empty list, no current-model, as
	// Juju prints them.
	if out := j.global("models", "--format", "json"); strings.TrimSpace(out) != `{"models":[]}` {
		t.Errorf("models after destroy-model: %s", out)
	}
}

// jujuScript runs the CLI as jubilant does: stdout is the answer,
// stderr the progress and errors, the exit code the verdict; with a
// model set, --model MODEL goes right after the command's name.
type jujuScript struct {
	t     *testing.T
	cli   *droverCLI
	model string
}

func (j *jujuScript) run(args ...string) (string, string, int) {
	j.t.Helper()
	if j.model != "" {
		args = append([]string{args[0], "--model", j.model}, args[1:]...)
	}
	return j.cli.run(args...)
}

// ok runs a command in the model and returns its stdout, failing the
// test unless it exits 0.
func (j *jujuScript) ok(args ...string) string {
	j.t.Helper()
	out, errs, code := j.run(args...)
	if code != 0 {
		j.t.Fatalf("juju %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, out, errs)
	}
	return out
}

// global is ok for the commands jubilant runs without --model.
func (j *jujuScript) global(args ...string) string {
	j.t.Helper()
	model := j.model
	j.model = ""
	defer func() { j.model = model }()
	return j.ok(args...)
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

// writeParams writes an action's params file in dir.
func writeParams(t *testing.T, dir, yaml string) string {
	t.Helper()
	f, err := os.CreateTemp(dir, "params-*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(yaml); err != nil {
		t.Fatal(err)
	}
	return f.Name()
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
