package uniter

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/droverhq/drover/api"
)

// fresh is a unit that has installed, started and settled.
func fresh() *Local {
	return &Local{Installed: true, Started: true, CharmSHA: "c1", DeployedSHA: "c1", ConfigHash: "h1",
		LeaderSettingsSeen: true, Relations: map[int]*RelationLocal{}}
}

func remote() *Remote {
	return &Remote{Unit: "app/0", Life: api.Alive, CharmSHA: "c1", ConfigHash: "h1", LeaderKnown: true,
		Relations: map[int]*api.RelationRemoteState{}, AutoRetry: true, Now: time.Unix(1000, 0)}
}

func rel(id int, life api.Life, members map[string]int, appVersion int) *api.RelationRemoteState {
	return &api.RelationRemoteState{ID: id, Endpoint: "db", RemoteApp: "other", Role: "requirer", Life: life, Members: members, AppVersion: appVersion}
}

func localRel(id int, members map[string]int) *RelationLocal {
	return &RelationLocal{ID: id, Endpoint: "db", RemoteApp: "other", Joined: true, Created: true, Members: members}
}

// want describes the expected decision: a hook name (plus remote unit), a
// non-hook operation kind, or "" for nothing.
func describeOp(d Decision) string {
	switch {
	case d.ForceDeploy != "":
		return "force-deploy " + d.ForceDeploy
	case d.Op == nil:
		return ""
	case d.Op.Hook != nil:
		s := d.Op.Hook.Name()
		if d.Op.Hook.RemoteUnit != "" {
			s += " " + d.Op.Hook.RemoteUnit
		}
		if d.Op.Step == Done {
			s += " (commit)"
		}
		return s
	case d.Op.TaskID != "":
		return string(d.Op.Kind) + " " + d.Op.TaskID
	default:
		return string(d.Op.Kind)
	}
}

func TestResolve(t *testing.T) {
	cases := []struct {
		name  string
		local func(*Local)
		rem   func(*Remote)
		want  string
	}{
		{"nothing to do", nil, nil, ""},
		{"same boot: nothing", func(l *Local) { l.BootID = "b1" }, func(r *Remote) { r.BootID = "b1" }, ""},
		{"a reboot runs start again, before relations and leadership", func(l *Local) { l.BootID = "b1"; l.ConfigHash = "" },
			func(r *Remote) { r.BootID = "b2"; r.Leader = true; r.Relations[3] = rel(3, api.Alive, nil, 0) }, "start"},
		{"boot unknown: no reboot", func(l *Local) { l.BootID = "b1" }, nil, ""},
		{"first boot seen is no reboot", nil, func(r *Remote) { r.BootID = "b2" }, ""},
		{"a unit not yet started starts the usual way", func(l *Local) { l.BootID, l.Started = "b1", false },
			func(r *Remote) { r.BootID = "b2" }, ""},
		{"a reboot waits for a failed hook", func(l *Local) {
			l.BootID = "b1"
			l.Op = Operation{Kind: OpRunHook, Step: Pending, Failed: true, Hook: &HookInfo{Kind: HookConfigChanged}, NextRetry: time.Unix(2000, 0)}
		}, func(r *Remote) { r.BootID = "b2" }, ""},
		{"a dying unit stops rather than starts", func(l *Local) { l.BootID = "b1" },
			func(r *Remote) { r.BootID = "b2"; r.Life = api.Dying }, "stop"},
		{"a stopped unit does not start again", func(l *Local) { l.BootID, l.Stopped = "b1", true },
			func(r *Remote) { r.BootID = "b2" }, ""},
		{"install first", func(l *Local) { *l = Local{Relations: map[int]*RelationLocal{}} }, nil, "install"},
		{"nothing but install before install: not even leadership or relations",
			func(l *Local) { *l = Local{Relations: map[int]*RelationLocal{}} },
			func(r *Remote) { r.Leader = true; r.Relations[1] = rel(1, api.Alive, nil, 0) }, "install"},
		{"relation-created before leadership", func(l *Local) { l.ConfigHash = "" },
			func(r *Remote) { r.Leader = true; r.Relations[3] = rel(3, api.Alive, nil, 0) }, "db-relation-created"},
		{"leader-elected before config-changed", func(l *Local) { l.ConfigHash = "" }, func(r *Remote) { r.Leader = true }, "leader-elected"},
		{"new non-leader runs leader-settings-changed", func(l *Local) { l.LeaderSettingsSeen = false; l.ConfigHash = "" }, nil, "leader-settings-changed"},
		{"leadership waits for the first claim", func(l *Local) { l.ConfigHash = "" }, func(r *Remote) { r.LeaderKnown, r.Leader = false, true }, "config-changed"},
		{"leader-settings version bump", func(l *Local) { l.LeaderSettingsVersion = 1 }, func(r *Remote) { r.LeaderSettingsVersion = 2 }, "leader-settings-changed"},
		{"leader does not run leader-settings-changed", func(l *Local) { l.Leader = true }, func(r *Remote) { r.Leader = true; r.LeaderSettingsVersion = 5 }, ""},
		{"deposed leader resigns", func(l *Local) { l.Leader = true }, nil, "resign-leadership"},
		{"config-changed after install", func(l *Local) { l.ConfigHash = ""; l.Started = false }, nil, "config-changed"},
		{"queued start runs next", func(l *Local) { l.Started = false; l.Op = *hookOp(HookInfo{Kind: HookStart}) }, nil, "start"},
		{"queued start is not lost to a new relation or leadership", func(l *Local) { l.Started = false; l.Op = *hookOp(HookInfo{Kind: HookStart}) },
			func(r *Remote) { r.Leader = true; r.Relations[3] = rel(3, api.Alive, nil, 0) }, "start"},
		{"upgrade-charm on a new charm", nil, func(r *Remote) { r.CharmSHA = "c2" }, "upgrade-charm"},
		{"upgrade before config", nil, func(r *Remote) { r.CharmSHA = "c2"; r.ConfigHash = "h2" }, "upgrade-charm"},
		{"an interrupted upgrade goes before actions", func(l *Local) { l.Op = *hookOp(HookInfo{Kind: HookUpgradeCharm, Hash: "c2"}) },
			func(r *Remote) { r.CharmSHA = "c2"; r.Tasks = []api.TaskRef{{ID: "7", Action: "backup"}} }, "upgrade-charm"},
		{"joined for a new member", func(l *Local) { l.Relations[1] = localRel(1, map[string]int{}) },
			func(r *Remote) { r.Relations[1] = rel(1, api.Alive, map[string]int{"other/1": 0, "other/0": 2}, 0) }, "db-relation-joined other/0"},
		{"changed pending runs before other members join", func(l *Local) {
			l.Relations[1] = localRel(1, map[string]int{"other/0": 2})
			l.Relations[1].ChangedPending = "other/0"
		}, func(r *Remote) { r.Relations[1] = rel(1, api.Alive, map[string]int{"other/1": 0, "other/0": 2}, 0) }, "db-relation-changed other/0"},
		{"changed for a bag version bump", func(l *Local) { l.Relations[1] = localRel(1, map[string]int{"other/0": 1}) },
			func(r *Remote) { r.Relations[1] = rel(1, api.Alive, map[string]int{"other/0": 2}, 0) }, "db-relation-changed other/0"},
		{"departed before joined", func(l *Local) { l.Relations[1] = localRel(1, map[string]int{"other/0": 1}) },
			func(r *Remote) { r.Relations[1] = rel(1, api.Alive, map[string]int{"other/1": 0}, 0) }, "db-relation-departed other/0"},
		{"app-only changed when the app bag changes", func(l *Local) { l.Relations[1] = localRel(1, map[string]int{"other/0": 1}) },
			func(r *Remote) { r.Relations[1] = rel(1, api.Alive, map[string]int{"other/0": 1}, 3) }, "db-relation-changed"},
		{"no app-only changed for version 0", func(l *Local) { l.Relations[1] = localRel(1, map[string]int{}) },
			func(r *Remote) { r.Relations[1] = rel(1, api.Alive, map[string]int{}, 0) }, ""},
		{"relation ids in order", func(l *Local) {
			l.Relations[2] = localRel(2, map[string]int{})
			l.Relations[1] = localRel(1, map[string]int{})
		}, func(r *Remote) {
			r.Relations[2] = rel(2, api.Alive, map[string]int{"b/0": 0}, 0)
			r.Relations[1] = rel(1, api.Alive, map[string]int{"a/0": 0}, 0)
		}, "db-relation-joined a/0"},
		{"dying relation departs members first", func(l *Local) { l.Relations[1] = localRel(1, map[string]int{"other/0": 1}) },
			func(r *Remote) { r.Relations[1] = rel(1, api.Dying, map[string]int{"other/0": 1}, 0) }, "db-relation-departed other/0"},
		{"dying relation breaks when empty", func(l *Local) { l.Relations[1] = localRel(1, map[string]int{}) },
			func(r *Remote) { r.Relations[1] = rel(1, api.Dying, map[string]int{"other/0": 1}, 0) }, "db-relation-broken"},
		{"vanished relation breaks", func(l *Local) { l.Relations[1] = localRel(1, map[string]int{}) }, nil, "db-relation-broken"},
		{"peer relation never breaks: it leaves scope", func(l *Local) {
			l.Relations[1] = localRel(1, map[string]int{})
			l.Relations[1].Peer = true
		}, func(r *Remote) { r.Relations[1] = rel(1, api.Dying, nil, 0) }, "leave-scope"},
		{"dying unit departs every member before stop", func(l *Local) { l.Relations[1] = localRel(1, map[string]int{"other/0": 1}) },
			func(r *Remote) {
				r.Life = api.Dying
				r.Relations[1] = rel(1, api.Alive, map[string]int{"other/0": 1}, 0)
			}, "db-relation-departed other/0"},
		{"dying unit breaks before stop", func(l *Local) { l.Relations[1] = localRel(1, map[string]int{}) },
			func(r *Remote) { r.Life = api.Dying; r.Relations[1] = rel(1, api.Alive, nil, 0) }, "db-relation-broken"},
		{"dying unit stops", nil, func(r *Remote) { r.Life = api.Dying }, "stop"},
		{"then removes", func(l *Local) { l.Stopped = true }, func(r *Remote) { r.Life = api.Dying }, "remove"},
		{"then reports dead", func(l *Local) { l.Stopped, l.Removed = true, true }, func(r *Remote) { r.Life = api.Dying }, "unit-dead"},
		{"dying unit runs no leadership hooks", func(l *Local) { l.LeaderSettingsSeen = false }, func(r *Remote) { r.Life = api.Dying; r.Leader = true }, "stop"},
		{"never-installed dying unit just dies", func(l *Local) { *l = Local{Relations: map[int]*RelationLocal{}} }, func(r *Remote) { r.Life = api.Dying }, "unit-dead"},
		{"update-status only when idle", nil, func(r *Remote) { r.UpdateStatusDue = true }, "update-status"},
		{"update-status has the lowest priority", nil, func(r *Remote) { r.UpdateStatusDue = true; r.ConfigHash = "h2" }, "config-changed"},
		{"actions run between hooks", func(l *Local) { l.Op = *hookOp(HookInfo{Kind: HookStart}) },
			func(r *Remote) { r.Tasks = []api.TaskRef{{ID: "7", Action: "get"}} }, "run-action 7"},
		{"completed actions do not run again", func(l *Local) { l.CompletedTasks = []string{"7"} },
			func(r *Remote) { r.Tasks = []api.TaskRef{{ID: "7"}, {ID: "8"}} }, "run-action 8"},
		{"done operation commits first", func(l *Local) {
			l.Op = Operation{Kind: OpRunHook, Step: Done, Hook: &HookInfo{Kind: HookConfigChanged}}
		}, func(r *Remote) { r.Leader = true }, "config-changed (commit)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l, r := fresh(), remote()
			if c.local != nil {
				c.local(l)
			}
			if c.rem != nil {
				c.rem(r)
			}
			if got := describeOp(Resolve(l, r)); got != c.want {
				t.Fatalf("got %q, want %q", got, c.want)
			}
		})
	}
}

func TestResolveErrorState(t *testing.T) {
	failed := func(l *Local) {
		l.Op = Operation{Kind: OpRunHook, Step: Pending, Failed: true, Attempts: 1,
			Hook: &HookInfo{Kind: HookConfigChanged}, NextRetry: time.Unix(1005, 0)}
	}
	l, r := fresh(), remote()
	failed(l)
	r.Leader, r.ConfigHash = true, "h2"
	r.Relations[1] = rel(1, api.Alive, nil, 0)
	d := Resolve(l, r)
	if d.Op != nil || !d.Wake.Equal(time.Unix(1005, 0)) {
		t.Fatalf("in error before the backoff: got %q wake %v; want nothing until the retry", describeOp(d), d.Wake)
	}
	r.Now = time.Unix(1006, 0)
	if got := describeOp(Resolve(l, r)); got != "config-changed" {
		t.Fatalf("after the backoff: got %q, want the failed hook again", got)
	}
	r.Now, r.AutoRetry = time.Unix(1000, 0), false
	if d := Resolve(l, r); d.Op != nil || !d.Wake.IsZero() {
		t.Fatalf("no auto retry: got %q", describeOp(d))
	}
	r.Resolved, r.RetryVersion = "retry", 1
	if got := describeOp(Resolve(l, r)); got != "config-changed" {
		t.Fatalf("resolved: got %q", got)
	}
	r.Resolved = "no-retry"
	if got := describeOp(Resolve(l, r)); got != "config-changed (commit)" {
		t.Fatalf("resolved --no-retry: got %q, want the hook skipped to its commit", got)
	}
	l.RetryVersion = 1
	if d := Resolve(l, r); d.Op != nil {
		t.Fatalf("a consumed resolved request acted on again: %q", describeOp(d))
	}
	r.Tasks = []api.TaskRef{{ID: "1"}}
	if got := describeOp(Resolve(l, r)); got != "run-action 1" {
		t.Fatalf("actions still run in error: got %q", got)
	}
}

// TestResolveForcedUpgrade: a forced charm upgrade is the one thing that
// proceeds in error (CHARM-CONTRACT §2.5): the charm is deployed with the
// failed hook kept; without force, or once the charm is on disk, the error
// handling is the usual one.
func TestResolveForcedUpgrade(t *testing.T) {
	failed := func(kind string) func(*Local) {
		return func(l *Local) {
			l.Op = Operation{Kind: OpRunHook, Step: Pending, Failed: true, Attempts: 1,
				Hook: &HookInfo{Kind: kind, Hash: "c1"}, NextRetry: time.Unix(1005, 0)}
		}
	}
	forced := func(r *Remote) { r.CharmSHA, r.ForceUpgrade = "c2", true }
	cases := []struct {
		name  string
		local func(*Local)
		rem   func(*Remote)
		want  string
		wake  bool // want a wake-up at the failed hook's retry time
	}{
		{"forced in error: deploy, before the backoff has passed", failed(HookConfigChanged), forced, "force-deploy c2", false},
		{"forced in error: deploy before a resolved retry", failed(HookConfigChanged),
			func(r *Remote) { forced(r); r.Resolved, r.RetryVersion = "retry", 1 }, "force-deploy c2", false},
		{"forced in error: deploy before a resolved no-retry", failed(HookConfigChanged),
			func(r *Remote) { forced(r); r.Resolved, r.RetryVersion = "no-retry", 1 }, "force-deploy c2", false},
		{"forced with a failed install", func(l *Local) { failed(HookInstall)(l); l.Installed, l.Started = false, false },
			forced, "force-deploy c2", false},
		{"forced over a failed upgrade-charm to a third charm", func(l *Local) {
			failed(HookUpgradeCharm)(l)
			l.Op.Hook.Hash, l.DeployedSHA = "c3", "c3"
		}, forced, "force-deploy c2", false},
		{"forced in error while dying", failed(HookConfigChanged), func(r *Remote) { forced(r); r.Life = api.Dying }, "force-deploy c2", false},
		{"not forced in error: the old charm stays", failed(HookConfigChanged), func(r *Remote) { r.CharmSHA = "c2" }, "", true},
		{"not forced in error, resolved: the failed hook first", failed(HookConfigChanged),
			func(r *Remote) { r.CharmSHA, r.Resolved, r.RetryVersion = "c2", "retry", 1 }, "config-changed", false},
		{"forced, already deployed: the usual error handling", func(l *Local) {
			failed(HookConfigChanged)(l)
			l.CharmSHA, l.DeployedSHA = "c2", "c2"
		}, forced, "", true},
		{"forced, already deployed, backoff passed: the failed hook again", func(l *Local) {
			failed(HookConfigChanged)(l)
			l.CharmSHA, l.DeployedSHA = "c2", "c2"
		}, func(r *Remote) { forced(r); r.Now = time.Unix(1006, 0) }, "config-changed", false},
		{"forced, a failed upgrade-charm has the charm on disk: no second deployment", func(l *Local) {
			failed(HookUpgradeCharm)(l)
			l.Op.Hook.Hash, l.DeployedSHA = "c2", "c2"
		}, forced, "", true},
		{"forced without a charm: nothing", failed(HookConfigChanged), func(r *Remote) { r.CharmSHA, r.ForceUpgrade = "", true }, "", true},
		{"forced, not in error: upgrade-charm", nil, forced, "upgrade-charm", false},
		{"forced, a queued hook runs first", func(l *Local) { l.Started = false; l.Op = *hookOp(HookInfo{Kind: HookStart}) }, forced, "start", false},
		{"forced, a committed hook's bookkeeping first", func(l *Local) {
			l.Op = Operation{Kind: OpRunHook, Step: Done, Hook: &HookInfo{Kind: HookConfigChanged}}
		}, forced, "config-changed (commit)", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l, r := fresh(), remote()
			if c.local != nil {
				c.local(l)
			}
			if c.rem != nil {
				c.rem(r)
			}
			before := l.Clone()
			d := Resolve(l, r)
			if got := describeOp(d); got != c.want {
				t.Fatalf("got %q, want %q", got, c.want)
			}
			if d.ForceDeploy != "" && d.Op != nil {
				t.Fatalf("a forced deployment comes with an operation %+v that would replace the failed hook", d.Op)
			}
			if c.wake != d.Wake.Equal(time.Unix(1005, 0)) {
				t.Fatalf("wake %v, want the retry time: %v", d.Wake, c.wake)
			}
			if after, _ := json.Marshal(l); string(after) != string(must(json.Marshal(before))) {
				t.Fatalf("Resolve changed the local state: %s", after)
			}
		})
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestResolveResourceChange: new resource content (the application's
// charm-modified-version moves, the charm does not) runs upgrade-charm,
// whose commit records the version, after which nothing is left to do.
func TestResolveResourceChange(t *testing.T) {
	l, r := fresh(), remote()
	r.CharmModified = 1
	d := Resolve(l, r)
	if got := describeOp(d); got != HookUpgradeCharm || d.Op.Hook.Hash != "c1" || d.Op.Hook.Version != 1 {
		t.Fatalf("after a resource change: %q %+v, want upgrade-charm to c1 at version 1", got, d.Op)
	}
	l.CharmModified = 1
	if got := describeOp(Resolve(l, r)); got != "" {
		t.Fatalf("with the version recorded: %q, want nothing", got)
	}
	// An upgrade a restart interrupted follows a later resource change.
	l.Op = *hookOp(HookInfo{Kind: HookUpgradeCharm, Hash: "c1", Version: 1})
	r.CharmModified = 2
	if d := Resolve(l, r); d.Op == nil || d.Op.Hook.Version != 2 {
		t.Fatalf("interrupted upgrade: %+v, want it to version 2", d.Op)
	}
}
