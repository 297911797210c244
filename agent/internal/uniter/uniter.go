// Package uniter runs one unit's charm by the Juju charm contract: a
// level-triggered loop that resolves the next operation from persisted
// local state and the controller's remote state, then runs it in persisted
// steps (prepare, execute, commit).
//
// Invariants:
//   - Resolve is pure; every decision comes from (Local, Remote).
//   - Local state is saved before a hook starts (Step Pending) and after its
//     changes are committed to the controller (Step Done), then again once
//     the bookkeeping is done, so a kill at any point resumes correctly: a
//     hook interrupted while Pending is failed and retried (its buffered
//     changes were never sent); a Done operation only finishes its
//     bookkeeping.
//   - At most one hook or action runs at a time per unit; hooks (and
//     non-parallel actions) also hold the machine lock.
//   - Buffered hook changes reach the controller in one commit-hook request
//     only after a zero exit.
//   - A forced charm upgrade deploys around a failed hook
//     (Decision.ForceDeploy) rather than replacing it in the local state.
//   - The charm directory holds the deployed charm plus what the charm
//     created; the manifest next to state.json lists the charm's own paths,
//     the only ones an upgrade removes (charmFiles).
package uniter

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/droverhq/drover/agent/internal/hooktools"
	"github.com/droverhq/drover/api"
)

// Caller sends one agent request to the controller.
type Caller interface {
	Call(ctx context.Context, method string, params, out any) error
}

// Locker is the machine-wide hook lock: Acquire blocks until the named
// lock is held or ctx ends.
type Locker interface {
	Acquire(ctx context.Context, name string) (release func(), err error)
}

// Config holds a Uniter's dependencies.
type Config struct {
	Unit string
	// Dir is the unit's directory: state.json, the charm directory.
	Dir      string
	ToolsDir string
	Caller   Caller
	// Download fetches a charm archive by sha256.
	Download func(ctx context.Context, sha string) ([]byte, error)
	// DownloadResource fetches a resource's content by sha256 into the
	// file dst (resource-get); nil refuses resource-get.
	DownloadResource func(ctx context.Context, sha, dst string) error
	// States returns the latest machine state and a channel closed when a
	// newer one arrives.
	States       func() (*api.MachineState, <-chan struct{})
	APIAddresses func() []string
	Lock         Locker
	Logger       *slog.Logger
	Now          func() time.Time
	// SocketAddress is the hook tool socket (an abstract "@..." address
	// keeps the path short).
	SocketAddress string
	// RetryDelay is the first automatic retry delay of a failed hook
	// (default 5s, doubling to RetryMax, default 5m).
	RetryDelay, RetryMax time.Duration
	// BootID identifies the machine's current boot; when it differs from
	// the one a started unit last saw, the unit runs start again. Empty
	// turns reboot detection off.
	BootID string
	// Reboot, if set, has the machine agent reboot the machine (juju-reboot);
	// the agent then stops this uniter. Nil: juju-reboot is unsupported.
	Reboot func(ctx context.Context) error
	// Gate, if set, admits each operation (hook, action, deployment)
	// before it starts: while the model migrates it refuses, and the
	// uniter waits for the next state (fortress.Fortress).
	Gate Gate
}

// Gate admits an operation: leave is called once it has finished; a
// refused operation is not started.
type Gate interface {
	Enter() (leave func(), ok bool)
}

// Uniter runs one unit.
type Uniter struct {
	cfg    Config
	log    *slog.Logger
	state  StateFile
	local  *Local
	files  *charmFiles
	leader *tracker
	tools  *hooktools.Server
	wakeCh chan struct{}

	mu        sync.Mutex
	updateDue bool
	lastAgent string // last agent status sent
	charmCfg  *charmInfo
	dying     bool
	finished  bool
}

// New validates cfg.
func New(cfg Config) (*Uniter, error) {
	if cfg.Unit == "" || cfg.Dir == "" || cfg.Caller == nil || cfg.States == nil || cfg.Download == nil || cfg.Lock == nil || cfg.Logger == nil {
		return nil, errors.New("uniter: Unit, Dir, Caller, States, Download, Lock and Logger are required")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.RetryDelay <= 0 {
		cfg.RetryDelay = 5 * time.Second
	}
	if cfg.RetryMax <= 0 {
		cfg.RetryMax = 5 * time.Minute
	}
	if cfg.APIAddresses == nil {
		cfg.APIAddresses = func() []string { return nil }
	}
	u := &Uniter{cfg: cfg, log: cfg.Logger.With("unit", cfg.Unit), state: StateFile{Path: filepath.Join(cfg.Dir, "state.json")},
		wakeCh: make(chan struct{}, 1)}
	u.files = &charmFiles{dir: u.charmDir(), manifest: filepath.Join(cfg.Dir, "charm-manifest.json")}
	u.leader = newTracker(cfg.Unit, cfg.Caller.Call, cfg.Now, u.wake, func() bool {
		u.mu.Lock()
		defer u.mu.Unlock()
		return u.dying
	})
	return u, nil
}

// Finished reports whether the unit completed its teardown (unit-dead).
func (u *Uniter) Finished() bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.finished
}

func (u *Uniter) wake() {
	select {
	case u.wakeCh <- struct{}{}:
	default:
	}
}

func (u *Uniter) charmDir() string { return filepath.Join(u.cfg.Dir, "charm") }

// Run runs the unit until ctx ends or its teardown is complete.
func (u *Uniter) Run(ctx context.Context) error {
	if err := os.MkdirAll(u.cfg.Dir, 0o755); err != nil {
		return err
	}
	local, err := u.state.Load()
	if err != nil {
		return err
	}
	u.local = local
	if b := u.cfg.BootID; b != "" && local.BootID != b {
		if local.BootID != "" && local.Started && !local.Stopped {
			u.log.Info("machine rebooted since the unit last ran: start runs again", "boot", b)
		} else if err := u.recordBoot(b); err != nil { // the first sighting, or start is still to come
			return err
		}
	}
	tools, err := hooktools.Listen("unix", u.cfg.SocketAddress)
	if err != nil {
		return err
	}
	u.tools = tools
	g, gctx := errgroup.WithContext(ctx)
	loopCtx, stopAux := context.WithCancel(gctx)
	g.Go(func() error { return tools.Serve(loopCtx) })
	g.Go(func() error { return u.leader.run(loopCtx) })
	g.Go(func() error { return u.updateStatusTimer(loopCtx) })
	g.Go(func() error {
		defer stopAux()
		return u.loop(gctx)
	})
	return g.Wait()
}

// updateStatusTimer marks update-status due every 80–120 % of the model's
// interval (CHARM-CONTRACT §2.3).
func (u *Uniter) updateStatusTimer(ctx context.Context) error {
	for {
		interval := 5 * time.Minute
		if ms, _ := u.cfg.States(); ms != nil && ms.UpdateStatusInterval > 0 {
			interval = ms.UpdateStatusInterval
		}
		d := time.Duration(float64(interval) * (0.8 + 0.4*rand.Float64()))
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(d):
		}
		u.mu.Lock()
		u.updateDue = true
		u.mu.Unlock()
		u.wake()
	}
}

// remote builds the resolver's remote view; nil when the unit is not in
// the machine state (removed).
func (u *Uniter) remote(ms *api.MachineState) *Remote {
	if ms == nil {
		return nil
	}
	urs := ms.Units[u.cfg.Unit]
	if urs == nil {
		return nil
	}
	known, leader := u.leader.state()
	u.mu.Lock()
	u.dying = urs.Life != api.Alive
	due := u.updateDue
	u.mu.Unlock()
	return &Remote{Unit: u.cfg.Unit, Life: urs.Life, CharmSHA: urs.CharmSHA256, ForceUpgrade: urs.ForceCharmUpgrade,
		CharmModified: urs.CharmModifiedVersion, ConfigHash: configHash(urs.Config, urs.Trust), LeaderKnown: known, Leader: leader, LeaderSettingsVersion: urs.LeaderSettingsVersion,
		Relations: urs.Relations, Tasks: urs.Tasks, Resolved: urs.Resolved, RetryVersion: urs.RetryVersion,
		AutoRetry: ms.AutoRetry, UpdateStatusDue: due, BootID: u.cfg.BootID, Now: u.cfg.Now()}
}

// configHash is what config-changed brings the unit to: its config and
// whether its application is trusted (Juju's config and trust hashes). An
// untrusted unit's hash is its config's alone, so a hash recorded by an
// agent that did not know trust still matches and runs no config-changed.
func configHash(cfg map[string]any, trusted bool) string {
	data, _ := json.Marshal(cfg) // map keys are sorted
	sum := sha256.Sum256(data)
	h := hex.EncodeToString(sum[:8])
	if trusted {
		h += "+trust"
	}
	return h
}

// loop is the resolve-run cycle.
func (u *Uniter) loop(ctx context.Context) error {
	if err := u.recover(ctx); err != nil {
		return err
	}
	for ctx.Err() == nil {
		ms, changed := u.cfg.States()
		r := u.remote(ms)
		if r == nil {
			if ms != nil && u.local.Removed {
				u.markFinished()
				return nil
			}
			if err := u.waitFor(ctx, changed, time.Time{}); err != nil {
				return nil
			}
			continue
		}
		d := Resolve(u.local, r)
		leave := func() {}
		if g := u.cfg.Gate; g != nil && (d.ForceDeploy != "" || d.Op != nil) {
			var ok bool
			if leave, ok = g.Enter(); !ok {
				// The model migrates: nothing starts until it is released
				// or this agent has moved to its new controller.
				if err := u.waitFor(ctx, changed, time.Time{}); err != nil {
					return nil
				}
				continue
			}
		}
		var finished bool
		var err error
		switch {
		case d.ForceDeploy != "":
			err = u.forceDeploy(ctx, d.ForceDeploy)
		case d.Op != nil:
			finished, err = u.runOp(ctx, d.Op, r, ms)
		default:
			leave()
			u.setAgentStatus(ctx, u.idleStatus())
			if err := u.waitFor(ctx, changed, d.Wake); err != nil {
				return nil
			}
			continue
		}
		leave()
		if finished {
			u.markFinished()
			return nil
		}
		if err != nil && ctx.Err() == nil {
			u.log.Warn("operation failed; will retry", "op", describe(d), "err", err)
			if err := u.waitFor(ctx, nil, u.cfg.Now().Add(time.Second)); err != nil {
				return nil
			}
		}
	}
	return nil
}

func (u *Uniter) markFinished() {
	u.mu.Lock()
	u.finished = true
	u.mu.Unlock()
}

// describe names a decision for the log.
func describe(d Decision) string {
	switch {
	case d.ForceDeploy != "":
		return "forced charm deployment " + d.ForceDeploy
	case d.Op == nil:
		return ""
	case d.Op.Hook != nil:
		return string(d.Op.Kind) + " " + d.Op.Hook.Name()
	case d.Op.TaskID != "":
		return string(d.Op.Kind) + " " + d.Op.TaskID
	}
	return string(d.Op.Kind)
}

// waitFor blocks until the state changes, a wake-up, or the deadline.
func (u *Uniter) waitFor(ctx context.Context, changed <-chan struct{}, deadline time.Time) error {
	var timer <-chan time.Time
	if !deadline.IsZero() {
		t := time.NewTimer(max(time.Until(deadline), 0))
		defer t.Stop()
		timer = t.C
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-changed:
	case <-u.wakeCh:
	case <-timer:
	}
	return nil
}

// recover handles an operation the previous agent left mid-way: a hook
// that was running failed (it is retried), an action that was running is
// reported failed.
func (u *Uniter) recover(ctx context.Context) error {
	op := &u.local.Op
	switch {
	case op.Kind == OpRunHook && op.Step == Pending && !op.Failed:
		u.log.Warn("agent restarted during a hook: treating it as failed", "hook", op.Hook.Name())
		op.Failed = true
		op.Attempts = 1
		op.NextRetry = u.cfg.Now().Add(u.cfg.RetryDelay)
		if err := u.save(); err != nil {
			return err
		}
		// Show the failure before the retry, whenever the retry comes.
		u.setAgentStatus(ctx, u.idleStatus())
	case op.Kind == OpRunAction && op.Step == Pending:
		id := op.TaskID
		err := u.cfg.Caller.Call(ctx, api.AgentFinishTask, api.AgentTaskParams{Unit: u.cfg.Unit, ID: id,
			Status: api.TaskFailed, Message: "action interrupted: the agent restarted"}, nil)
		if err != nil && !errors.Is(err, api.ErrConflict) && !errors.Is(err, api.ErrNotFound) && !errors.Is(err, api.ErrInvalid) {
			u.log.Warn("cannot fail the interrupted action yet", "task", id, "err", err)
			return nil // the resolver re-runs the Pending action op's recovery
		}
		u.local.addCompleted(id)
		u.local.Op = u.local.Op.afterAction()
		return u.save()
	}
	return nil
}

func (u *Uniter) save() error { return u.state.Save(u.local) }

// recordBoot notes the machine's boot as seen without running a hook.
func (u *Uniter) recordBoot(b string) error {
	u.local.BootID = b
	return u.save()
}

func (u *Uniter) idleStatus() api.Status {
	if u.local.Op.Kind == OpRunHook && u.local.Op.Step == Pending && u.local.Op.Failed {
		h := u.local.Op.Hook
		data := map[string]any{"hook": h.Name()}
		if h.IsRelation() {
			data["relation-id"] = h.RelationID
			if h.RemoteUnit != "" {
				data["remote-unit"] = h.RemoteUnit
			}
		}
		return api.Status{Status: "error", Message: fmt.Sprintf("hook failed: %q", h.Name()), Data: data}
	}
	return api.Status{Status: "idle"}
}

// setAgentStatus sends the unit agent status when it changed.
func (u *Uniter) setAgentStatus(ctx context.Context, st api.Status) {
	key := st.Status + "\x00" + st.Message
	u.mu.Lock()
	same := u.lastAgent == key
	u.mu.Unlock()
	if same {
		return
	}
	err := u.cfg.Caller.Call(ctx, api.AgentSetStatus, api.AgentStatusParams{Unit: u.cfg.Unit, Kind: api.StatusKindAgent, Status: st}, nil)
	if err != nil {
		u.log.Debug("cannot set agent status", "err", err)
		return
	}
	u.mu.Lock()
	u.lastAgent = key
	u.mu.Unlock()
}

func (u *Uniter) setWorkloadStatus(ctx context.Context, status, message string) error {
	return u.cfg.Caller.Call(ctx, api.AgentSetStatus, api.AgentStatusParams{Unit: u.cfg.Unit, Kind: api.StatusKindWorkload,
		Status: api.Status{Status: status, Message: message}}, nil)
}

// log sends one debug-log line for the unit (best effort).
func (u *Uniter) logRemote(ctx context.Context, level, module, message string) {
	err := u.cfg.Caller.Call(ctx, api.AgentLog, api.AgentLogParams{Unit: u.cfg.Unit, Time: u.cfg.Now(), Level: level,
		Module: module, Message: message}, nil)
	if err != nil {
		u.log.Debug("cannot send log line", "err", err)
	}
}

func unitTag(unit string) string { return "unit-" + strings.ReplaceAll(unit, "/", "-") }
