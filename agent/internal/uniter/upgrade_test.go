package uniter

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/charm"
)

// hookScript logs "<hook>@<version>" to hooks.log, then runs more.
func hookScript(version string, more ...string) string {
	return "#!/bin/sh\necho \"$JUJU_HOOK_NAME@" + version + "\" >>\"$CHARM_DIR/hooks.log\"\n" + strings.Join(more, "\n") + "\n"
}

// failWhileMarked fails the hook while the unit directory holds a "fail"
// file: the test decides when the hook is fixed.
const failWhileMarked = `if [ -e "$CHARM_DIR/../fail" ]; then exit 1; fi`

// versionedCharm packs a bash charm whose hooks log "<hook>@<version>";
// files adds files or replaces hooks (a "" value leaves a file out).
func versionedCharm(t *testing.T, version string, files map[string]string) ([]byte, string) {
	t.Helper()
	all := map[string]string{"metadata.yaml": "name: app\nsummary: s\ndescription: d\n", "version": version + "\n"}
	for _, h := range []string{"install", "config-changed", "start", "leader-elected", "upgrade-charm", "stop", "remove"} {
		all["hooks/"+h] = hookScript(version)
	}
	for name, content := range files {
		all[name] = content
	}
	dir := t.TempDir()
	for name, content := range all {
		if content == "" {
			continue
		}
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	if err := charm.ArchiveDir(dir, &buf); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(buf.Bytes())
	return buf.Bytes(), hex.EncodeToString(sum[:])
}

// publish makes a charm downloadable and the one the unit must run.
func (h *harness) publish(data []byte, sha string, force bool) {
	h.ctl.update(func(_ *api.MachineState, u *api.UnitRemoteState) {
		h.ctl.charms[sha] = data
		u.CharmSHA256, u.ForceCharmUpgrade = sha, force
	})
}

// killAt makes the next charm deployment stop after step, as a kill of
// the agent there would; the flag says it happened.
func (h *harness) killAt(step string) *atomic.Bool {
	var stopped atomic.Bool
	h.deployFault = func(s string) error {
		if s == step {
			stopped.Store(true)
			return errors.New("killed")
		}
		return nil
	}
	return &stopped
}

// inErrorOnV1 starts the unit on a version 1 whose config-changed then
// fails (auto-retry off), and gives version 2 to upgrade it to.
func (h *harness) inErrorOnV1() (v2 []byte, sha1, sha2 string) {
	h.t.Helper()
	h.ctl.ms.AutoRetry = false
	v1, sha1 := versionedCharm(h.t, "1", map[string]string{"hooks/config-changed": hookScript("1", failWhileMarked)})
	v2, sha2 = versionedCharm(h.t, "2", nil)
	h.publish(v1, sha1, false)
	h.run("started", started(h))
	h.mark(true)
	h.ctl.update(func(_ *api.MachineState, u *api.UnitRemoteState) { u.Config = map[string]any{"x": "2"} })
	h.run("config-changed failed", func([]string) bool { return failedHook(h.local()) == HookConfigChanged })
	return v2, sha1, sha2
}

// upgradeKilledAfterExpanding starts the unit on a version 1 (with a
// v1-only file), then upgrades it to a version 2 (with a v2-only file) and
// kills the agent once v2 is expanded, before the old files are removed.
func (h *harness) upgradeKilledAfterExpanding() (v1 []byte, sha1, sha2 string) {
	h.t.Helper()
	v1, sha1 = versionedCharm(h.t, "1", map[string]string{"v1-only": "1"})
	v2, sha2 := versionedCharm(h.t, "2", map[string]string{"v2-only": "2"})
	h.publish(v1, sha1, false)
	h.run("started", started(h))
	stopped := h.killAt("expanded")
	h.publish(v2, sha2, false)
	h.run("killed", func([]string) bool { return stopped.Load() })
	_, old := h.charmFile("v1-only")
	if v, _ := h.charmFile("version"); v != "2" || !old {
		h.t.Fatalf("the killed deployment did not stop after the expansion: version %q, v1-only there %v", v, old)
	}
	h.deployFault = nil
	return v1, sha1, sha2
}

// mark creates or removes the unit directory's "fail" file.
func (h *harness) mark(fail bool) {
	h.t.Helper()
	p := filepath.Join(h.dir, "fail")
	var err error
	if fail {
		err = os.WriteFile(p, nil, 0o644)
	} else {
		err = os.Remove(p)
	}
	if err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) charmFile(name string) (string, bool) {
	data, err := os.ReadFile(filepath.Join(h.dir, "charm", name))
	return strings.TrimSpace(string(data)), err == nil
}

// failedHook is the unit's failed hook, "" when it is not in error.
func failedHook(l *Local) string {
	if l.Op.Kind == OpRunHook && l.Op.Step == Pending && l.Op.Failed {
		return l.Op.Hook.Kind
	}
	return ""
}

// reported holds once the uniter run next has reported the agent status
// st (as it does when it resolved to nothing to do) and cond holds: what
// has not run by then will not run.
func reported(h *harness, st string, cond func(*Local) bool) func([]string) bool {
	h.ctl.mu.Lock()
	before := len(h.ctl.status)
	h.ctl.mu.Unlock()
	return func([]string) bool {
		h.ctl.mu.Lock()
		seen := slices.Contains(h.ctl.status[before:], "juju-unit:"+st)
		h.ctl.mu.Unlock()
		return seen && cond(h.local())
	}
}

// TestUniterForcedUpgradeOutOfError: a unit in error deploys a charm
// refreshed with --force-units at once, runs no upgrade-charm for it and
// stays in error; the failed hook's retry (backoff or resolved) runs the
// new charm's code, and the contract's sequence carries on from there
// (CHARM-CONTRACT §2.3, §2.5).
func TestUniterForcedUpgradeOutOfError(t *testing.T) {
	t.Run("failed install, automatic retry", testForcedUpgradeFailedInstall)
	t.Run("failed config-changed, resolved", testForcedUpgradeFailedConfigChanged)
	t.Run("killed after the files, before the state", testForcedUpgradeKilledBeforeState)
}

func testForcedUpgradeFailedInstall(t *testing.T) {
	h := newHarness(t)
	h.ctl.ms.AutoRetry = false
	v1, sha1 := versionedCharm(t, "1", map[string]string{"hooks/install": hookScript("1", "exit 1")})
	v2, sha2 := versionedCharm(t, "2", map[string]string{"v2-only": "x"})
	h.publish(v1, sha1, false)
	h.run("install failed", func([]string) bool { return failedHook(h.local()) == HookInstall })

	h.publish(v2, sha2, true)
	h.run("v2 deployed in error", reported(h, "error", func(l *Local) bool { return l.DeployedSHA == sha2 }))
	l := h.local()
	if got := h.hooks(); !slices.Equal(got, []string{"install@1"}) {
		t.Fatalf("hooks %v: nothing may run for a forced upgrade in error", got)
	}
	if failedHook(l) != HookInstall || l.Op.Hook.Hash != sha2 || l.Installed || l.CharmSHA != "" {
		t.Fatalf("after the forced deployment: %+v (hook %+v); want install still failed, now for %s", l, l.Op.Hook, sha2)
	}
	if v, _ := h.charmFile("version"); v != "2" {
		t.Fatalf("charm on disk is version %q", v)
	}
	if _, ok := h.charmFile("v2-only"); !ok {
		t.Fatal("v2's own file is not on disk")
	}

	h.ctl.update(func(ms *api.MachineState, _ *api.UnitRemoteState) { ms.AutoRetry = true })
	h.run("started", started(h))
	want := []string{"install@1", "install@2", "leader-elected@2", "config-changed@2", "start@2"}
	if got := h.hooks(); !slices.Equal(got, want) {
		t.Fatalf("hooks %v, want %v", got, want)
	}
	if l := h.local(); l.CharmSHA != sha2 || l.DeployedSHA != sha2 {
		t.Fatalf("charm %s deployed %s, want %s", l.CharmSHA, l.DeployedSHA, sha2)
	}
}

func testForcedUpgradeFailedConfigChanged(t *testing.T) {
	h := newHarness(t)
	v2, _, sha2 := h.inErrorOnV1()

	h.publish(v2, sha2, true)
	h.run("v2 deployed in error", reported(h, "error", func(l *Local) bool { return l.DeployedSHA == sha2 }))
	l := h.local()
	v1Hooks := []string{"install@1", "leader-elected@1", "config-changed@1", "start@1", "config-changed@1"}
	if got := h.hooks(); !slices.Equal(got, v1Hooks) {
		t.Fatalf("hooks %v: nothing may run for a forced upgrade in error", got)
	}
	if failedHook(l) != HookConfigChanged || l.CharmSHA != sha2 {
		t.Fatalf("after the forced deployment: charm %s, op %+v; want config-changed still failed, the unit on %s", l.CharmSHA, l.Op, sha2)
	}

	// resolved (retry): the failed hook runs from v2, which has no
	// marker check, and nothing else follows: no upgrade-charm.
	h.ctl.update(func(_ *api.MachineState, u *api.UnitRemoteState) { u.Resolved, u.RetryVersion = "retry", 1 })
	h.run("resolved", reported(h, "idle", func(l *Local) bool { return l.Op.Kind == OpNone }))
	if got, want := h.hooks(), append(v1Hooks, "config-changed@2"); !slices.Equal(got, want) {
		t.Fatalf("hooks %v, want %v", got, want)
	}
}

func testForcedUpgradeKilledBeforeState(t *testing.T) {
	h := newHarness(t)
	v2, sha1, sha2 := h.inErrorOnV1()

	// The last step of the deployment fails as a kill there would:
	// the files and the manifest are v2's, the local state v1's.
	stopped := h.killAt("saved")
	h.publish(v2, sha2, true)
	h.run("killed", func([]string) bool { return stopped.Load() })
	if l := h.local(); l.DeployedSHA != sha1 || l.CharmSHA != sha1 || failedHook(l) != HookConfigChanged {
		t.Fatalf("killed deployment saved state: %+v", l)
	}
	h.deployFault = nil
	h.run("v2 deployed in error", reported(h, "error", func(l *Local) bool { return l.DeployedSHA == sha2 }))
	if l := h.local(); l.CharmSHA != sha2 || failedHook(l) != HookConfigChanged {
		t.Fatalf("after the restart: charm %s, op %+v", l.CharmSHA, l.Op)
	}
	h.ctl.update(func(ms *api.MachineState, _ *api.UnitRemoteState) { ms.AutoRetry = true })
	h.run("retried", reported(h, "idle", func(l *Local) bool { return l.Op.Kind == OpNone }))
	want := []string{"install@1", "leader-elected@1", "config-changed@1", "start@1", "config-changed@1", "config-changed@2"}
	if got := h.hooks(); !slices.Equal(got, want) {
		t.Fatalf("hooks %v, want %v", got, want)
	}
}

// TestUniterUpgradeWaitsForErrorResolved: without force, a unit in error
// keeps its charm until the failed hook succeeds; then upgrade-charm and
// config-changed run.
func TestUniterUpgradeWaitsForErrorResolved(t *testing.T) {
	h := newHarness(t)
	v2, sha1, sha2 := h.inErrorOnV1()

	h.publish(v2, sha2, false)
	h.run("still in error", reported(h, "error", func(*Local) bool { return true }))
	l := h.local()
	if l.DeployedSHA != sha1 || l.CharmSHA != sha1 || failedHook(l) != HookConfigChanged {
		t.Fatalf("a unit in error changed charm without force: %+v", l)
	}
	if v, _ := h.charmFile("version"); v != "1" {
		t.Fatalf("charm on disk is version %q", v)
	}
	v1Hooks := []string{"install@1", "leader-elected@1", "config-changed@1", "start@1", "config-changed@1"}
	if got := h.hooks(); !slices.Equal(got, v1Hooks) {
		t.Fatalf("hooks %v: nothing may run in error", got)
	}

	h.mark(false)
	h.ctl.update(func(_ *api.MachineState, u *api.UnitRemoteState) { u.Resolved, u.RetryVersion = "retry", 1 })
	h.run("upgraded", reported(h, "idle", func(l *Local) bool { return l.CharmSHA == sha2 && l.Op.Kind == OpNone }))
	want := append(v1Hooks, "config-changed@1", "upgrade-charm@2", "config-changed@2")
	if got := h.hooks(); !slices.Equal(got, want) {
		t.Fatalf("hooks %v, want %v", got, want)
	}
}

// TestUniterUpgradeReplacesCharmFiles: an upgrade removes the files only
// the old charm had, keeps those the charm created and replaces those both
// have (CHARM-CONTRACT §1.1), also when the agent is killed at any step of
// the deployment and restarted.
func TestUniterUpgradeReplacesCharmFiles(t *testing.T) {
	create := hookScript("1", `echo mine >"$CHARM_DIR/created"`, `echo mine >"$CHARM_DIR/keepdir/mine"`)
	for _, step := range []string{"", "recorded", "cleared", "expanded", "pruned", "saved"} {
		name := "no kill"
		if step != "" {
			name = "killed after " + step
		}
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			v1, sha1 := versionedCharm(t, "1", map[string]string{"hooks/install": create,
				"old-only": "1", "both": "1", "olddir/x": "1", "keepdir/y": "1", "hooks/update-status": hookScript("1")})
			v2, sha2 := versionedCharm(t, "2", map[string]string{"both": "2", "new-only": "2"})
			h.publish(v1, sha1, false)
			h.run("started", started(h))
			if _, ok := h.charmFile("hooks/update-status"); !ok {
				t.Fatal("v1 not on disk")
			}

			h.publish(v2, sha2, false)
			if step != "" {
				stopped := h.killAt(step)
				h.run("killed", func([]string) bool { return stopped.Load() })
				h.deployFault = nil
			}
			h.run("upgraded", reported(h, "idle", func(l *Local) bool { return l.CharmSHA == sha2 && l.Op.Kind == OpNone }))

			want := []string{"install@1", "leader-elected@1", "config-changed@1", "start@1", "upgrade-charm@2", "config-changed@2"}
			if got := h.hooks(); !slices.Equal(got, want) {
				t.Fatalf("hooks %v, want %v", got, want)
			}
			for _, gone := range []string{"old-only", "olddir", "keepdir/y", "hooks/update-status"} {
				if _, err := os.Lstat(filepath.Join(h.dir, "charm", gone)); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("%s, only in the old charm, is still there: %v", gone, err)
				}
			}
			for name, content := range map[string]string{"created": "mine", "keepdir/mine": "mine", "both": "2", "new-only": "2", "version": "2"} {
				if got, ok := h.charmFile(name); !ok || got != content {
					t.Errorf("%s: %q (present %v), want %q", name, got, ok, content)
				}
			}
			m, err := h.files().load()
			if err != nil || m == nil || m.SHA != sha2 || slices.Contains(m.Paths, "old-only") || !slices.Contains(m.Paths, "new-only") {
				t.Fatalf("manifest %+v, %v", m, err)
			}
		})
	}
}

func (h *harness) files() *charmFiles {
	return &charmFiles{dir: filepath.Join(h.dir, "charm"), manifest: filepath.Join(h.dir, "charm-manifest.json")}
}

// TestUniterFinishesInterruptedDeployment: an upgrade killed half-way
// while the controller then went back to the unit's charm leaves a mix of
// the two on disk; the unit's charm is deployed again before its next
// hook runs.
func TestUniterFinishesInterruptedDeployment(t *testing.T) {
	h := newHarness(t)
	v1, sha1, _ := h.upgradeKilledAfterExpanding()
	h.publish(v1, sha1, false)
	h.ctl.update(func(_ *api.MachineState, u *api.UnitRemoteState) { u.Config = map[string]any{"x": "2"} })
	h.run("config-changed", reported(h, "idle", func(l *Local) bool { return l.Op.Kind == OpNone && l.ConfigHash != "" }))
	want := []string{"install@1", "leader-elected@1", "config-changed@1", "start@1", "config-changed@1"}
	if got := h.hooks(); !slices.Equal(got, want) {
		t.Fatalf("hooks %v, want %v", got, want)
	}
	if _, ok := h.charmFile("v2-only"); ok {
		t.Fatal("v2's file is still there")
	}
	if v, _ := h.charmFile("version"); v != "1" {
		t.Fatalf("charm on disk is version %q", v)
	}
}
