package uniter

import (
	"encoding/base64"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/charm"
)

// enqueue gives the unit tasks, as the controller lists them.
func (h *harness) enqueue(tasks ...api.TaskRef) {
	h.ctl.update(func(_ *api.MachineState, u *api.UnitRemoteState) { u.Tasks = append(u.Tasks, tasks...) })
}

// finishedTasks holds once n tasks were reported finished.
func (h *harness) finishedTasks(n int) func([]string) bool {
	return func([]string) bool {
		h.ctl.mu.Lock()
		defer h.ctl.mu.Unlock()
		return len(h.ctl.tasks) == n
	}
}

// TestUniterExec: the juju-exec action runs its command with bash in the
// unit's hook context (no hook, no dispatch path, no action name; the hook
// tools work) and reports its return code and output; a timeout ends it.
func TestUniterExec(t *testing.T) {
	h := newHarness(t)
	h.run("started", started(h))
	h.enqueue(
		api.TaskRef{ID: "1", Action: api.ExecAction, Status: api.TaskPending, Params: map[string]any{"command": `
echo "hook=${JUJU_HOOK_NAME-unset} dispatch=${JUJU_DISPATCH_PATH-unset} action=${JUJU_ACTION_NAME-unset} unit=$JUJU_UNIT_NAME"
echo "x=$(config-get x) pwd=$(basename "$PWD")"
echo oops >&2
exit 3`}},
		api.TaskRef{ID: "2", Action: api.ExecAction, Status: api.TaskPending, Params: map[string]any{"command": "echo before; sleep 30", "timeout": "300ms"}},
		api.TaskRef{ID: "3", Action: api.ExecAction, Status: api.TaskPending, Params: map[string]any{"command": "true"}},
		api.TaskRef{ID: "4", Action: api.ExecAction, Status: api.TaskPending, Params: map[string]any{"command": `printf 'a\377b\n'`}})
	h.run("exec tasks done", h.finishedTasks(4))
	// Output that is not UTF-8 comes back in base64, as Juju sends it.
	if r := h.ctl.tasks["4"]; r.Results["stdout-encoding"] != "base64" || r.Results["stdout"] != base64.StdEncoding.EncodeToString([]byte("a\xffb\n")) {
		t.Fatalf("exec printing bytes that are not UTF-8: %+v", r)
	}
	r := h.ctl.tasks["1"]
	want := "hook= dispatch=unset action=unset unit=app/0\nx=1 pwd=charm\n"
	if r.Status != api.TaskFailed || r.Message != "exit status 3" || r.Results["return-code"] != 3 ||
		r.Results["stdout"] != want || r.Results["stderr"] != "oops\n" {
		t.Fatalf("exec exiting 3: %+v; want failed, return-code 3, stdout %q, stderr oops", r, want)
	}
	if r := h.ctl.tasks["2"]; r.Status != api.TaskFailed || !strings.Contains(r.Message, "command timed out after 300ms") {
		t.Fatalf("exec past its timeout: %+v", r)
	}
	if r := h.ctl.tasks["3"]; r.Status != api.TaskCompleted || r.Results["return-code"] != 0 {
		t.Fatalf("exec true: %+v", r)
	}
	if got := h.hooks(); slices.Contains(got, "") || len(got) != 4 {
		t.Fatalf("hooks %v: exec ran no hook", got)
	}
}

// TestUniterActionsKeepTheHookTheyRunBefore: an action (here juju exec,
// which is how one debugs a unit in error) runs in front of a failed hook,
// or of a hook the contract queued, and the unit then carries on with that
// hook: still in error, or starting, as Juju's runAction commits back to
// the interrupted hook.
func TestUniterActionsKeepTheHookTheyRunBefore(t *testing.T) {
	t.Run("a failed hook", func(t *testing.T) {
		h := newHarness(t, failWhileMarked)
		h.ctl.ms.AutoRetry = false
		h.run("started", started(h))
		h.mark(true)
		h.ctl.update(func(_ *api.MachineState, u *api.UnitRemoteState) { u.Config = map[string]any{"x": "2"} })
		h.run("config-changed failed", func([]string) bool { return failedHook(h.local()) == HookConfigChanged })

		h.enqueue(api.TaskRef{ID: "1", Action: api.ExecAction, Status: api.TaskPending, Params: map[string]any{"command": "ls ../fail"}})
		h.run("exec done", h.finishedTasks(1))
		if r := h.ctl.tasks["1"]; r.Status != api.TaskCompleted {
			t.Fatalf("exec on a unit in error: %+v", r)
		}
		h.run("still in error", reported(h, "error", func(l *Local) bool { return failedHook(l) == HookConfigChanged }))

		h.mark(false)
		h.ctl.update(func(_ *api.MachineState, u *api.UnitRemoteState) { u.Resolved, u.RetryVersion = "retry", 1 })
		h.run("resolved", reported(h, "idle", func(l *Local) bool {
			return l.Op.Kind == OpNone && l.ConfigHash == configHash(map[string]any{"x": "2"}, false)
		}))
		// config-changed logs its name before it fails: the failed run, then
		// the one after resolved.
		if got, want := h.hooks(), []string{"install", "leader-elected", "config-changed", "start", "config-changed", "config-changed"}; !slices.Equal(got, want) {
			t.Fatalf("hooks %v, want %v (the failed config-changed ran again once it was resolved)", got, want)
		}
	})
	t.Run("a queued start", func(t *testing.T) {
		h := newHarness(t)
		if err := charm.ExpandArchive(h.data, filepath.Join(h.dir, "charm")); err != nil {
			t.Fatal(err)
		}
		l := &Local{Installed: true, Leader: true, CharmSHA: h.sha, DeployedSHA: h.sha, Relations: map[int]*RelationLocal{},
			ConfigHash: configHash(map[string]any{"x": "1"}, false), Op: *hookOp(HookInfo{Kind: HookStart})}
		if err := (StateFile{Path: filepath.Join(h.dir, "state.json")}).Save(l); err != nil {
			t.Fatal(err)
		}
		h.enqueue(api.TaskRef{ID: "1", Action: "hello", Status: api.TaskPending, Params: map[string]any{"name": "ann"}})
		h.run("started after the action", func([]string) bool { l := h.local(); return l.Started && l.Op.Kind == OpNone && len(h.ctl.tasks) == 1 })
		if got := h.hooks(); !slices.Equal(got, []string{"start"}) {
			t.Fatalf("hooks %v, want [start]", got)
		}
	})
}

// TestUniterInterruptedUpgradeGoesFirst: an agent killed while it deployed
// a new charm finishes the upgrade first when it starts again: an action
// waiting meanwhile runs after upgrade-charm, not on a half-deployed charm
// directory (Juju's resolver puts an upgrade in progress before actions
// and hooks).
func TestUniterInterruptedUpgradeGoesFirst(t *testing.T) {
	h := newHarness(t)
	_, _, sha2 := h.upgradeKilledAfterExpanding()
	h.enqueue(api.TaskRef{ID: "1", Action: api.ExecAction, Status: api.TaskPending, Params: map[string]any{
		"command": `echo "exec@$(cat version)$([ -e v1-only ] && echo +v1-only)" >>hooks.log`}})
	h.run("upgraded and exec done", func([]string) bool {
		l := h.local()
		return l.CharmSHA == sha2 && l.Op.Kind == OpNone && len(h.ctl.tasks) == 1
	})
	want := []string{"install@1", "leader-elected@1", "config-changed@1", "start@1", "upgrade-charm@2", "exec@2", "config-changed@2"}
	if got := h.hooks(); !slices.Equal(got, want) {
		t.Fatalf("hooks %v, want %v", got, want)
	}
}

// TestUniterTrustRunsConfigChanged: trusting the application, and taking
// the trust back, each run config-changed (Juju's trust hash).
func TestUniterTrustRunsConfigChanged(t *testing.T) {
	h := newHarness(t)
	h.run("started", started(h))
	for i, trust := range []bool{true, false} {
		h.ctl.update(func(_ *api.MachineState, u *api.UnitRemoteState) { u.Trust = trust })
		h.run("config-changed", func(hooks []string) bool {
			return h.local().ConfigHash == configHash(map[string]any{"x": "1"}, trust) && h.local().Op.Kind == OpNone
		})
		if got := h.hooks(); len(got) != 4+i+1 || got[len(got)-1] != "config-changed" {
			t.Fatalf("hooks after trust %v: %v", trust, got)
		}
	}
}
