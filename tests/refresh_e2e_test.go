package tests

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/spoke/provider/local"
	"github.com/droverhq/drover/tests/testkit"
)

// stampHook is the hook of the stamp test charm: it appends
// "<hook> <version>" to hooks.log in its directory, creates created.txt on
// install (a file of the charm's own, which upgrades must keep), and fails
// config-changed while its "fail" option is true.
const stampHook = `#!/bin/bash
set -eu
cd "$CHARM_DIR"
version=$(cat VERSION)
if [ "$JUJU_HOOK_NAME" = install ]; then echo "made by $version" >created.txt; fi
if [ "$JUJU_HOOK_NAME" = config-changed ] && [ "$(config-get fail 2>/dev/null || echo False)" = True ]; then
  echo "$JUJU_HOOK_NAME $version failed" >>hooks.log
  exit 1
fi
if [ "$JUJU_HOOK_NAME" = start ] || [ "$JUJU_HOOK_NAME" = config-changed ]; then status-set active "running $version"; fi
echo "$JUJU_HOOK_NAME $version" >>hooks.log
`

// stampCharm writes version of the stamp charm: its config options
// (config.yaml's body) and extra files.
func stampCharm(t *testing.T, version, options string, extra ...string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "stamp-"+version)
	files := map[string]string{
		"metadata.yaml": "name: stamp\nsummary: records its hooks and version\ndescription: refresh test charm\n",
		"config.yaml":   "options:\n" + options,
		"VERSION":       version + "\n",
	}
	for _, f := range extra {
		files[f] = version + "\n"
	}
	if err := os.MkdirAll(filepath.Join(dir, "hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "hooks", "hook"), []byte(stampHook), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"install", "config-changed", "start", "upgrade-charm", "update-status", "stop", "remove"} {
		if err := os.Symlink("hook", filepath.Join(dir, "hooks", h)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestRefreshEndToEnd refreshes a deployed application with the drover
// binary, on a controller it bootstraps and real unit agents: the unit runs
// upgrade-charm then config-changed with the new charm's code, keeps the
// files it made and loses the old charm's own; a unit in error keeps its
// charm until forced, and a forced upgrade retries the failed hook with the
// new code without running upgrade-charm. On the way, exec looks into the
// unit in error, and machines, show-application and remove-machine work on
// what the test deployed.
func TestRefreshEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs real processes")
	}
	d := newDroverCLI(t)
	dataDir := filepath.Join(t.TempDir(), "ctl")
	t.Cleanup(func() { killLeftover(dataDir) })
	d.ok("bootstrap", "refresh", "--data-dir", dataDir, "--listen", testkit.FreeAddr(t), "--raft-listen", testkit.FreeAddr(t))
	d.ok("add-model", "up")
	d.ok("model-config", "update-status-hook-interval=1h")

	v1 := stampCharm(t, "v1", "  mode: {type: string, default: fast}\n", "only-in-v1.txt")
	v2 := stampCharm(t, "v2", "  fail: {type: boolean, default: false}\n")
	v3 := stampCharm(t, "v3", "  fail: {type: boolean, default: false}\n")
	v4 := stampCharm(t, "v4", "  fail: {type: boolean, default: false}\n")
	d.ok("deploy", v1, "--config", "mode=slow", "--wait=5m")

	dirs, _ := filepath.Glob(filepath.Join(local.DefaultDir(dataDir), "*", "*", "agents", "unit-stamp-0", "charm"))
	if len(dirs) != 1 {
		t.Fatalf("stamp/0's charm directory: %q", dirs)
	}
	charmDir := dirs[0]
	hooks := func() []string {
		data, _ := os.ReadFile(filepath.Join(charmDir, "hooks.log"))
		return strings.Split(strings.TrimSpace(string(data)), "\n")
	}
	waitHooks := func(what string, cond func([]string) bool) {
		t.Helper()
		testkit.EventuallyWithin(t, 90*time.Second, func() (bool, error) { return cond(hooks()), nil }, "%s; hooks.log: %q", what, hooks())
	}
	if got := hooks(); !slices.Equal(got, []string{"install v1", "config-changed v1", "start v1"}) {
		t.Fatalf("hooks after deploy: %q", got)
	}

	// The same charm is no refresh, and no error; another charm without
	// --switch is refused before anything is uploaded or changed.
	if out, errs, code := d.run("refresh", "stamp", "--path", v1); code != 0 || !strings.Contains(out+errs, `Application "stamp" already runs local charm "stamp", revision 0`) {
		t.Errorf("refresh to the same charm: exit %d\n%s%s", code, out, errs)
	}
	if _, errs, code := d.run("refresh", "stamp", "--path", "charms/kv"); code != 2 || !strings.Contains(errs, "--switch") {
		t.Errorf("refresh to another charm without --switch: exit %d\n%s", code, errs)
	}

	// v2: upgrade-charm then config-changed run with v2's code; "mode" is
	// gone from v2 and dropped; --config sets the new "fail", which makes
	// that config-changed fail.
	out := d.ok("refresh", "stamp", "--path", v2, "--config", "fail=true")
	if !strings.Contains(out, `Added local charm "stamp", revision 1, to the model`) ||
		!strings.Contains(out, "Settings dropped") || !strings.Contains(out, "mode") {
		t.Errorf("refresh to v2:\n%s", out)
	}
	waitHooks("v2 fails config-changed", func(h []string) bool { return slices.Contains(h, "config-changed v2 failed") })
	if got := hooks(); !slices.Equal(got[:4], []string{"install v1", "config-changed v1", "start v1", "upgrade-charm v2"}) {
		t.Errorf("hooks of the upgrade: %q", got)
	}
	if _, err := os.Stat(filepath.Join(charmDir, "only-in-v1.txt")); !os.IsNotExist(err) {
		t.Errorf("a file only the old charm had is still there: %v", err)
	}
	if data, err := os.ReadFile(filepath.Join(charmDir, "created.txt")); err != nil || string(data) != "made by v1\n" {
		t.Errorf("the charm's own file was not kept: %q %v", data, err)
	}

	// exec reaches the unit in error (how one looks into it) and leaves it
	// in error; a command's exit code comes back.
	if out, errs, code := d.run("exec", "--unit", "stamp/0", "--", "cat VERSION; config-get fail"); code != 0 || out != "v2\nTrue\n" {
		t.Errorf("exec on the unit in error: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	if out, errs, code := d.run("exec", "--application", "stamp", "exit", "4"); code != 1 ||
		!strings.Contains(errs, "the following task failed:") || !strings.Contains(errs, "with return code 4 (exit status 4)") {
		t.Errorf("exec exiting 4: exit %d\n%s%s", code, out, errs)
	}
	if out, _, _ := d.run("exec", "--all", "--format", "json", "--", "echo", "hi"); !strings.Contains(out, `"stamp/0":{`) ||
		!strings.Contains(out, `"stdout":"hi\n"`) || !strings.Contains(out, `"return-code":0`) {
		t.Errorf("exec --all --format json: %s", out)
	}

	// v3 without --force-units: the unit in error keeps v2 (a retry runs
	// v2's config-changed again) and is named.
	out = d.ok("refresh", "stamp", "--path", v3)
	if !strings.Contains(out, "revision 2") || !strings.Contains(out, "Units in error") || !strings.Contains(out, "stamp/0") {
		t.Errorf("refresh to v3 with a unit in error:\n%s", out)
	}
	mark := len(hooks())
	d.ok("resolved", "stamp/0")
	waitHooks("a retry after the v3 refresh", func(h []string) bool { return len(h) > mark })
	if got := hooks(); got[mark] != "config-changed v2 failed" {
		t.Errorf("a unit in error took the new charm without --force-units: %q", got[mark:])
	}

	// v4 with --force-units: the failed hook is retried with v4's code;
	// no upgrade-charm runs; the unit settles on v4.
	mark = len(hooks())
	d.ok("refresh", "stamp", "--path", v4, "--force-units", "--config", "fail=false")
	d.ok("resolved", "stamp/0") // retry now, not after the backoff
	waitHooks("config-changed succeeds with v4", func(h []string) bool { return slices.Contains(h[mark:], "config-changed v4") })
	for _, h := range hooks()[mark:] {
		if strings.HasPrefix(h, "upgrade-charm") || strings.HasSuffix(h, " v3") {
			t.Errorf("after a forced refresh: %q", hooks()[mark:])
			break
		}
	}
	testkit.EventuallyWithin(t, 60*time.Second, func() (bool, error) {
		var fs api.FullStatus
		if err := json.Unmarshal([]byte(d.ok("status", "--format", "json")), &fs); err != nil {
			return false, err
		}
		u := fs.Applications["stamp"].Units["stamp/0"]
		return fs.Applications["stamp"].CharmRev == 3 && u.WorkloadStatus.Current == "active" &&
			u.WorkloadStatus.Message == "running v4" && u.JujuStatus.Current == "idle", nil
	}, "stamp/0 settles on v4 at revision 3")

	// trust: the unit runs config-changed, and show-application says so.
	mark = len(hooks())
	d.ok("trust", "stamp")
	waitHooks("config-changed after trust", func(h []string) bool { return slices.Contains(h[mark:], "config-changed v4") })
	if out := d.ok("show-application", "stamp"); !strings.Contains(out, "stamp:\n  charm: stamp\n  charm-rev: 3\n") ||
		!strings.Contains(out, "  principal: true\n") || !strings.Contains(out, "  trust: true\n") || !strings.Contains(out, "  scale: 1\n") {
		t.Errorf("show-application stamp:\n%s", out)
	}

	// machines lists the unit's machine; remove-machine refuses it while
	// it hosts the unit, and with --force removes both.
	if out := d.ok("machines"); !regexp.MustCompile(`(?m)^Machine\s+State\s+Address\s+Inst id\s+Base\s+AZ\s+Message\n0\s+started\s+127\.0\.0\.1\s`).MatchString(out) {
		t.Errorf("machines:\n%s", out)
	}
	if _, errs, code := d.run("remove-machine", "0"); code != 1 || !strings.Contains(errs, `machine "0" still hosts unit "stamp/0"`) {
		t.Errorf("remove-machine of a machine with a unit: exit %d\n%s", code, errs)
	}
	if _, errs, code := d.run("remove-machine", "zero"); code != 2 || !strings.Contains(errs, "not a machine id") {
		t.Errorf("remove-machine zero: exit %d\n%s", code, errs)
	}
	// add-machine: an empty machine, which remove-machine removes as it is.
	if out := d.ok("add-machine"); !strings.Contains(out, "created machine 1") {
		t.Errorf("add-machine: %s", out)
	}
	testkit.EventuallyWithin(t, 60*time.Second, func() (bool, error) {
		return regexp.MustCompile(`(?m)^1\s+started\s`).MatchString(d.ok("machines")), nil
	}, "machine 1 started")
	if out := d.ok("show-machine", "1"); !strings.Contains(out, "machines:\n  \"1\":\n") || !strings.Contains(out, "current: started") {
		t.Errorf("show-machine 1:\n%s", out)
	}
	if _, errs, code := d.run("show-machine", "9"); code != 1 || !strings.Contains(errs, `machine "9" not found`) {
		t.Errorf("show-machine 9: exit %d: %s", code, errs)
	}
	d.ok("remove-machine", "1")
	d.ok("remove-machine", "0", "--force")
	testkit.EventuallyWithin(t, 60*time.Second, func() (bool, error) {
		out, errs, code := d.run("machines")
		return code == 0 && out == "" && strings.Contains(errs, `has no machines`), nil
	}, "machines 0 and 1 are released and removed")

	d.ok("destroy-model", "up", "-y")
	d.ok("kill-controller", "refresh", "-y")
}
