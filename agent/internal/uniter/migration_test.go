package uniter

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/droverhq/drover/agent/internal/fortress"
	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/tests/testkit"
)

// start runs a uniter behind gate until the returned stop is called.
func (h *harness) start(gate Gate) (stop func()) {
	h.t.Helper()
	var b [8]byte
	rand.Read(b[:])
	u, err := New(Config{Unit: "app/0", Dir: h.dir, ToolsDir: h.tools, Caller: h.ctl, States: h.ctl.States,
		Download: h.ctl.download, Lock: noLock{}, Gate: gate,
		Logger:        slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		SocketAddress: "@drover-uniter-test-" + hex.EncodeToString(b[:]), RetryDelay: 10 * time.Millisecond})
	if err != nil {
		h.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(h.t.Context())
	done := make(chan error, 1)
	go func() { done <- u.Run(ctx) }()
	return func() {
		cancel()
		if err := <-done; err != nil {
			h.t.Error(err)
		}
	}
}

func (h *harness) exists(name string) func() (bool, error) {
	return func() (bool, error) { _, err := os.Stat(filepath.Join(h.dir, name)); return err == nil, nil }
}

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// TestUniterHoldsWhileTheModelMigrates: a hook running when the model's
// migration arrives finishes and commits; nothing new starts (the uniter
// tries, and the fortress refuses) until the migration goes away, then
// the unit catches up.
func TestUniterHoldsWhileTheModelMigrates(t *testing.T) {
	// config-changed blocks while the unit directory holds "block", until
	// it holds "release".
	h := newHarness(t, `if [ -e "$CHARM_DIR/../block" ]; then touch "$CHARM_DIR/../blocked"; while [ ! -e "$CHARM_DIR/../release" ]; do sleep 0.02; done; fi`)
	h.run("started", started(h))
	if err := os.WriteFile(filepath.Join(h.dir, "block"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	f := fortress.New(h.ctl.States)
	stop := h.start(f)
	defer stop()
	h.ctl.update(func(_ *api.MachineState, u *api.UnitRemoteState) { u.Config = map[string]any{"x": "2"} })
	testkit.EventuallyWithin(t, 20*time.Second, h.exists("blocked"), "config-changed running")

	h.ctl.update(func(ms *api.MachineState, u *api.UnitRemoteState) {
		ms.Migration = &api.AgentMigration{ID: "mig-1", Phase: api.MigrationQuiesce}
		u.Tasks = []api.TaskRef{{ID: "1", Action: "hello", Params: map[string]any{"name": "bob"}, Status: api.TaskPending}}
	})
	if closed(f.Idle()) {
		t.Fatal("the fortress is idle while config-changed runs")
	}
	refused := f.Refused()
	if err := os.WriteFile(filepath.Join(h.dir, "release"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyWithin(t, 20*time.Second, func() (bool, error) { return closed(f.Idle()), nil }, "the running hook finished")
	testkit.EventuallyWithin(t, 20*time.Second, func() (bool, error) { return f.Refused() > refused, nil }, "the action held")
	h.ctl.mu.Lock()
	ran := len(h.ctl.tasks)
	h.ctl.mu.Unlock()
	if l := h.local(); l.Op.Kind != OpNone || l.ConfigHash != configHash(map[string]any{"x": "2"}, false) || ran != 0 {
		t.Fatalf("quiesced: operation %+v, config hash %q, actions run %d (want the hook done, none run)", l.Op, l.ConfigHash, ran)
	}
	if got := h.hooks(); len(got) != 5 || got[4] != "config-changed" {
		t.Fatalf("hooks while quiesced: %v", got)
	}

	// Released: the held action runs.
	h.ctl.update(func(ms *api.MachineState, _ *api.UnitRemoteState) { ms.Migration = nil })
	testkit.EventuallyWithin(t, 20*time.Second, func() (bool, error) {
		h.ctl.mu.Lock()
		defer h.ctl.mu.Unlock()
		return h.ctl.tasks["1"].Status == api.TaskCompleted, nil
	}, "the held action ran after the release")
}
