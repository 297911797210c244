package uniter

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/droverhq/drover/agent/internal/hooktools"
	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/charm"
	"github.com/droverhq/drover/tests/testkit"
)

// fakeCtl is an in-memory controller: it answers agent requests and serves
// one machine state.
type fakeCtl struct {
	mu     sync.Mutex
	ms     *api.MachineState
	notify chan struct{}
	calls  []string
	status []string // agent and workload statuses set, "kind:status"
	tasks  map[string]api.AgentTaskParams
	charms map[string][]byte // by sha256
}

func (f *fakeCtl) Call(ctx context.Context, method string, params, out any) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, method)
	switch method {
	case api.AgentClaimLeader:
		*out.(*api.AgentLeaderResult) = api.AgentLeaderResult{Leader: true, Expiry: time.Now().Add(time.Minute)}
	case api.AgentSetStatus:
		p := params.(api.AgentStatusParams)
		f.status = append(f.status, p.Kind+":"+p.Status.Status)
	case api.AgentFinishTask:
		p := params.(api.AgentTaskParams)
		f.tasks[p.ID] = p
		u := f.ms.Units["app/0"]
		u.Tasks = slices.DeleteFunc(u.Tasks, func(t api.TaskRef) bool { return t.ID == p.ID })
		f.bumpLocked()
	}
	return nil
}

func (f *fakeCtl) States() (*api.MachineState, <-chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ms, f.notify
}

// download serves a charm archive by sha256, as the controller does.
func (f *fakeCtl) download(_ context.Context, sha string) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	data, ok := f.charms[sha]
	if !ok {
		return nil, fmt.Errorf("charm %s: %w", sha, api.ErrNotFound)
	}
	return data, nil
}

// update changes the unit's remote state and tells the uniter.
func (f *fakeCtl) update(change func(ms *api.MachineState, u *api.UnitRemoteState)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	change(f.ms, f.ms.Units["app/0"])
	f.bumpLocked()
}

func (f *fakeCtl) bumpLocked() {
	close(f.notify)
	f.notify = make(chan struct{})
}

type noLock struct{}

func (noLock) Acquire(context.Context, string) (func(), error) { return func() {}, nil }

// testCharm packs a bash charm whose hooks append their name to hooks.log;
// config-changed then runs configChanged, if any.
func testCharm(t *testing.T, configChanged ...string) ([]byte, string) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "metadata.yaml"), []byte("name: app\nsummary: s\ndescription: d\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "actions.yaml"), []byte("hello:\n  description: d\nmissing:\n  description: d\n"), 0o644)
	os.MkdirAll(filepath.Join(dir, "hooks"), 0o755)
	os.MkdirAll(filepath.Join(dir, "actions"), 0o755)
	script := "#!/bin/sh\necho \"$JUJU_HOOK_NAME\" >>\"$CHARM_DIR/hooks.log\"\n"
	for _, h := range []string{"install", "config-changed", "start", "leader-elected", "stop", "remove"} {
		s := script
		if h == "config-changed" {
			s += strings.Join(configChanged, "\n") + "\n"
		}
		os.WriteFile(filepath.Join(dir, "hooks", h), []byte(s), 0o755)
	}
	os.WriteFile(filepath.Join(dir, "actions", "hello"), []byte("#!/bin/sh\naction-set greeting=\"hi $(action-get name)\"\n"), 0o755)
	var buf bytes.Buffer
	if err := charm.ArchiveDir(dir, &buf); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(buf.Bytes())
	return buf.Bytes(), hex.EncodeToString(sum[:])
}

type harness struct {
	t     *testing.T
	ctl   *fakeCtl
	dir   string
	data  []byte
	sha   string
	tools string
	boot  string // the machine boot the next run sees
	// reboots counts juju-reboot's requests to the machine agent, when
	// canReboot offers them.
	canReboot bool
	reboots   atomic.Int32
	// deployFault, if set, is injected after each step of a charm
	// deployment (charmFiles.fault).
	deployFault func(step string) error
}

func newHarness(t *testing.T, configChanged ...string) *harness {
	testkit.CheckLeaks(t)
	data, sha := testCharm(t, configChanged...)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	tools := t.TempDir()
	// The test binary is the hook tool (see TestMain).
	if err := hooktools.InstallSymlinks(tools, exe); err != nil {
		t.Fatal(err)
	}
	ms := &api.MachineState{ModelUUID: "m", ModelName: "model", Machine: "0", Life: api.Alive, AutoRetry: true,
		Units: map[string]*api.UnitRemoteState{"app/0": {Unit: "app/0", Application: "app", Life: api.Alive,
			CharmSHA256: sha, Config: map[string]any{"x": "1"}, Relations: map[int]*api.RelationRemoteState{}}}}
	return &harness{t: t, ctl: &fakeCtl{ms: ms, notify: make(chan struct{}), tasks: map[string]api.AgentTaskParams{},
		charms: map[string][]byte{sha: data}}, dir: t.TempDir(), data: data, sha: sha, tools: tools}
}

// run runs a uniter until cond holds on its hook log, then stops it.
func (h *harness) run(what string, cond func(hooks []string) bool) {
	h.t.Helper()
	defer func() {
		if h.t.Failed() {
			h.ctl.mu.Lock()
			h.t.Logf("calls: %v", h.ctl.calls)
			h.ctl.mu.Unlock()
		}
	}()
	var b [8]byte
	rand.Read(b[:])
	u, err := New(Config{Unit: "app/0", Dir: h.dir, ToolsDir: h.tools, Caller: h.ctl, States: h.ctl.States,
		Download: h.ctl.download, Lock: noLock{},
		Logger:        slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		SocketAddress: "@drover-uniter-test-" + hex.EncodeToString(b[:]), RetryDelay: 10 * time.Millisecond, BootID: h.boot})
	if err != nil {
		h.t.Fatal(err)
	}
	if h.canReboot {
		u.cfg.Reboot = func(context.Context) error { h.reboots.Add(1); return nil }
	}
	u.files.fault = h.deployFault
	ctx, cancel := context.WithCancel(h.t.Context())
	done := make(chan error, 1)
	go func() { done <- u.Run(ctx) }()
	testkit.EventuallyWithin(h.t, 20*time.Second, func() (bool, error) { return cond(h.hooks()), nil }, what)
	cancel()
	if err := <-done; err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) hooks() []string {
	data, _ := os.ReadFile(filepath.Join(h.dir, "charm", "hooks.log"))
	return strings.Fields(string(data))
}

func (h *harness) local() *Local {
	l, err := StateFile{Path: filepath.Join(h.dir, "state.json")}.Load()
	if err != nil {
		h.t.Fatal(err)
	}
	return l
}

func started(h *harness) func([]string) bool {
	return func([]string) bool { l := h.local(); return l.Started && l.Op.Kind == OpNone }
}

// idleAgain holds once the uniter run next has resolved to nothing to do
// (it reports its agent idle), the unit started: a restart's "nothing
// ran" is then a fact, not a race with the uniter's first pass.
func idleAgain(h *harness) func([]string) bool {
	h.ctl.mu.Lock()
	before := len(h.ctl.status)
	h.ctl.mu.Unlock()
	return func([]string) bool {
		h.ctl.mu.Lock()
		idle := slices.Contains(h.ctl.status[before:], "juju-unit:idle")
		h.ctl.mu.Unlock()
		return idle && started(h)(nil)
	}
}

func TestUniterDeploySequence(t *testing.T) {
	h := newHarness(t)
	h.run("started", started(h))
	if got, want := h.hooks(), []string{"install", "leader-elected", "config-changed", "start"}; !slices.Equal(got, want) {
		t.Fatalf("hooks %v, want %v", got, want)
	}
	if !slices.Contains(h.ctl.status, "workload:maintenance") || !slices.Contains(h.ctl.status, "workload:unknown") {
		t.Fatalf("statuses %v: want maintenance before install and unknown after start", h.ctl.status)
	}
	// A restart resumes with nothing to do.
	h.run("idle again", idleAgain(h))
	if n := len(h.hooks()); n != 4 {
		t.Fatalf("a restarted uniter re-ran hooks: %v", h.hooks())
	}
}

// TestUniterRunsStartAfterReboot: a started unit runs start again when the
// machine booted since it last ran (its workload comes back up), once per
// boot; a restart within the same boot runs nothing.
func TestUniterRunsStartAfterReboot(t *testing.T) {
	h := newHarness(t)
	h.boot = "boot-1"
	h.run("started", started(h))
	if got := h.local().BootID; got != "boot-1" {
		t.Fatalf("the first boot was recorded as %q", got)
	}
	h.run("idle in the same boot", idleAgain(h))
	if got := h.hooks(); len(got) != 4 {
		t.Fatalf("a restart in the same boot ran hooks: %v", got)
	}
	h.boot = "boot-2"
	h.run("start after the reboot", func([]string) bool { l := h.local(); return l.BootID == "boot-2" && l.Op.Kind == OpNone })
	if got, want := h.hooks(), []string{"install", "leader-elected", "config-changed", "start", "start"}; !slices.Equal(got, want) {
		t.Fatalf("hooks %v, want %v", got, want)
	}
	h.boot = "" // unknown: no reboot detection
	h.run("idle without a boot id", idleAgain(h))
	if got := h.hooks(); len(got) != 5 || h.local().BootID != "boot-2" {
		t.Fatalf("hooks %v, boot %q: nothing should run when the boot is unknown", got, h.local().BootID)
	}
}

// TestUniterResumesAfterCrash seeds the state a kill at each step leaves
// behind and checks the restarted uniter continues correctly.
func TestUniterResumesAfterCrash(t *testing.T) {
	seed := func(h *harness, step Step) {
		if err := charm.ExpandArchive(h.data, filepath.Join(h.dir, "charm")); err != nil {
			t.Fatal(err)
		}
		l := &Local{Installed: true, Leader: true, CharmSHA: h.sha, DeployedSHA: h.sha, Relations: map[int]*RelationLocal{},
			Op: Operation{Kind: OpRunHook, Step: step, Hook: &HookInfo{Kind: HookConfigChanged, Hash: configHash(map[string]any{"x": "1"}, false)}}}
		if err := (StateFile{Path: filepath.Join(h.dir, "state.json")}).Save(l); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("killed while the hook ran: failed, retried", func(t *testing.T) {
		h := newHarness(t)
		seed(h, Pending)
		h.run("started", started(h))
		if got, want := h.hooks(), []string{"config-changed", "start"}; !slices.Equal(got, want) {
			t.Fatalf("hooks %v, want %v", got, want)
		}
		if !slices.Contains(h.ctl.status, "juju-unit:error") {
			t.Fatalf("statuses %v: the interrupted hook must show as failed", h.ctl.status)
		}
	})
	t.Run("killed after the commit: bookkeeping only", func(t *testing.T) {
		h := newHarness(t)
		seed(h, Done)
		h.run("started", started(h))
		if got, want := h.hooks(), []string{"start"}; !slices.Equal(got, want) {
			t.Fatalf("hooks %v, want %v (config-changed must not run twice)", got, want)
		}
	})
	t.Run("killed with start queued", func(t *testing.T) {
		h := newHarness(t)
		seed(h, Queued)
		l := h.local()
		l.ConfigHash, l.Op = l.Op.Hook.Hash, *hookOp(HookInfo{Kind: HookStart})
		(StateFile{Path: filepath.Join(h.dir, "state.json")}).Save(l)
		h.run("started", started(h))
		if got, want := h.hooks(), []string{"start"}; !slices.Equal(got, want) {
			t.Fatalf("hooks %v, want %v", got, want)
		}
	})
}

func TestUniterActions(t *testing.T) {
	h := newHarness(t)
	h.run("started", started(h))
	h.ctl.mu.Lock()
	h.ctl.ms.Units["app/0"].Tasks = []api.TaskRef{
		{ID: "1", Action: "hello", Params: map[string]any{"name": "bob"}, Status: api.TaskPending},
		{ID: "2", Action: "missing", Status: api.TaskPending}}
	h.ctl.mu.Unlock()
	h.run("tasks done", func([]string) bool {
		h.ctl.mu.Lock()
		defer h.ctl.mu.Unlock()
		return len(h.ctl.tasks) == 2
	})
	if r := h.ctl.tasks["1"]; r.Status != api.TaskCompleted || r.Results["greeting"] != "hi bob" {
		t.Fatalf("hello: %+v", r)
	}
	if r := h.ctl.tasks["2"]; r.Status != api.TaskFailed || r.Message != `action not implemented on unit "app/0"` {
		t.Fatalf("missing action: %+v", r)
	}
}

// TestUniterJujuReboot: juju-reboot has the machine agent reboot the
// machine after the hook committed, or with --now at once, the hook killed
// and queued to run again; the agent status says rebooting; after the
// reboot (a new boot) the unit carries on.
func TestUniterJujuReboot(t *testing.T) {
	for _, tc := range []struct {
		name, flags    string
		before, after  []string
		queuedAfterNow bool
	}{
		{name: "after the hook", before: []string{"install", "leader-elected", "config-changed", "after-juju-reboot"},
			after: []string{"install", "leader-elected", "config-changed", "after-juju-reboot", "start"}},
		{name: "now", flags: "--now", before: []string{"install", "leader-elected", "config-changed"},
			after: []string{"install", "leader-elected", "config-changed", "config-changed", "start"}, queuedAfterNow: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, `if [ ! -e "$CHARM_DIR/../asked" ]; then touch "$CHARM_DIR/../asked"`,
				`  juju-reboot `+tc.flags+` || echo juju-reboot-failed >>"$CHARM_DIR/hooks.log"`,
				`  echo after-juju-reboot >>"$CHARM_DIR/hooks.log"`, `fi`)
			h.canReboot, h.boot = true, "boot-1"
			h.run("reboot asked", func([]string) bool { return h.reboots.Load() == 1 })
			if got := h.hooks(); !slices.Equal(got, tc.before) {
				t.Fatalf("hooks before the reboot %v, want %v", got, tc.before)
			}
			l := h.local()
			if tc.queuedAfterNow && (l.Op.Step != Queued || l.Op.Hook == nil || l.Op.Hook.Kind != HookConfigChanged) {
				t.Fatalf("after juju-reboot --now the hook is not queued again: %+v", l.Op)
			}
			if !tc.queuedAfterNow && l.ConfigHash == "" {
				t.Fatal("the hook that asked for a reboot was not committed")
			}
			h.ctl.mu.Lock()
			rebooting := slices.Contains(h.ctl.status, "juju-unit:rebooting")
			h.ctl.mu.Unlock()
			if !rebooting {
				t.Fatalf("statuses %v: want the agent rebooting", h.ctl.status)
			}
			h.boot = "boot-2" // the machine came back
			h.run("started after the reboot", started(h))
			if got := h.hooks(); !slices.Equal(got, tc.after) || h.reboots.Load() != 1 {
				t.Fatalf("hooks after the reboot %v (reboots %d), want %v", got, h.reboots.Load(), tc.after)
			}
		})
	}

	// Where the agent cannot reboot the machine, juju-reboot fails.
	h := newHarness(t, `juju-reboot || echo juju-reboot-failed >>"$CHARM_DIR/hooks.log"`)
	h.run("started", started(h))
	if got := h.hooks(); !slices.Contains(got, "juju-reboot-failed") {
		t.Fatalf("juju-reboot on a machine that cannot reboot: hooks %v", got)
	}
}
