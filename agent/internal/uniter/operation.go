package uniter

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/droverhq/drover/agent/internal/hookctx"
	"github.com/droverhq/drover/api"
)

// errSkip means the prepared hook must not run (e.g. leader-elected after
// leadership was lost again).
var errSkip = errors.New("operation skipped")

// runOp runs one operation through its steps; finished reports that the
// unit's teardown is complete.
func (u *Uniter) runOp(ctx context.Context, op *Operation, r *Remote, ms *api.MachineState) (bool, error) {
	switch op.Kind {
	case OpUnitDead:
		err := u.cfg.Caller.Call(ctx, api.AgentUnitDead, api.AgentUnitParams{Unit: u.cfg.Unit}, nil)
		if err != nil && !errors.Is(err, api.ErrNotFound) && !errors.Is(err, api.ErrForbidden) {
			return false, err
		}
		u.log.Info("unit teardown complete")
		return true, nil
	case OpResign:
		u.local.Leader, u.local.LeaderSettingsSeen = false, false
		u.local.Op = Operation{}
		return false, u.save()
	case OpLeave:
		return false, u.leaveScope(ctx, op.RelationID)
	case OpRunAction:
		if op.Step == Pending {
			return false, u.recover(ctx)
		}
		return false, u.runAction(ctx, op, ms)
	case OpRunHook:
		return false, u.runHook(ctx, op, r, ms)
	}
	return false, fmt.Errorf("unknown operation %q", op.Kind)
}

func (u *Uniter) leaveScope(ctx context.Context, id int) error {
	err := u.cfg.Caller.Call(ctx, api.AgentLeaveScope, api.AgentScopeParams{Unit: u.cfg.Unit, RelationID: id}, nil)
	if err != nil && !errors.Is(err, api.ErrNotFound) {
		return err
	}
	delete(u.local.Relations, id)
	if u.local.Op.Kind == OpLeave {
		u.local.Op = Operation{}
	}
	return u.save()
}

// runHook runs a hook operation through its steps, persisting the
// operation before each step that a crash must not repeat or skip: Queued
// before a deploying preparation, Pending before the process, Done before
// the local bookkeeping.
func (u *Uniter) runHook(ctx context.Context, op *Operation, r *Remote, ms *api.MachineState) error {
	h := *op.Hook
	if op.Failed && r.RetryVersion > u.local.RetryVersion && r.Resolved != "" {
		u.local.RetryVersion = r.RetryVersion // this `resolved` is consumed
	}
	if op.Step == Done {
		return u.commitHook(ctx, h)
	}
	if (h.Kind == HookInstall || h.Kind == HookUpgradeCharm) && u.local.Op.Hook == nil {
		// Its preparation deploys the charm: recorded first, so an agent
		// killed halfway through runs this hook first when it starts again
		// (Resolve), not another hook on a half-deployed charm directory,
		// as Juju's resolver puts an upgrade in progress first.
		u.local.Op = Operation{Kind: OpRunHook, Step: Queued, Hook: &h}
		if err := u.save(); err != nil {
			return err
		}
	}
	if err := u.prepareHook(ctx, &h, r); err != nil {
		if errors.Is(err, errSkip) {
			u.local.Op = Operation{}
			return u.save()
		}
		return err
	}
	next := Operation{Kind: OpRunHook, Step: Pending, Hook: &h, Failed: op.Failed, Attempts: op.Attempts, NextRetry: op.NextRetry}
	u.local.Op = next
	if err := u.save(); err != nil {
		return err
	}
	release, err := u.cfg.Lock.Acquire(ctx, "machine")
	if err != nil {
		return err
	}
	if h.Kind != HookUpdateStatus {
		u.setAgentStatus(ctx, api.Status{Status: "executing", Message: runningMessage(h)})
	}
	ex, err := u.execute(ctx, &h, nil, ms)
	release()
	if errors.Is(err, errKilled) {
		return u.hookKilled(ctx, next, ex.reboot, err)
	}
	err = u.commitHookChanges(ctx, ex, err)
	if ex.remote != nil && ex.remote.statusSet {
		u.local.StatusSet = true
	}
	if err != nil {
		return u.hookFailed(ctx, &next, err)
	}
	u.logHookRan(ctx, h, ex.res)
	next.Step, next.Failed = Done, false
	u.local.Op = next
	if err := u.save(); err != nil {
		return err
	}
	if err := u.commitHook(ctx, h); err != nil {
		return err
	}
	if ex.reboot != hookctx.NoReboot {
		return u.reboot(ctx, h)
	}
	return nil
}

// runningMessage is the agent status message while hook h runs.
func runningMessage(h HookInfo) string {
	msg := "running " + h.Name() + " hook"
	if h.RemoteUnit != "" {
		msg += " for " + h.RemoteUnit
	}
	return msg
}

// hookKilled records a killed hook (op, Pending) as Queued again: killed,
// not failed (CHARM-CONTRACT §2.5). A hook ended by `juju-reboot --now`
// runs again after the reboot.
func (u *Uniter) hookKilled(ctx context.Context, op Operation, reboot hookctx.RebootRequest, cause error) error {
	op.Step = Queued
	u.local.Op = op
	if reboot == hookctx.RebootNow && ctx.Err() == nil {
		if err := u.save(); err != nil {
			return err
		}
		return u.reboot(ctx, *op.Hook)
	}
	u.log.Warn("hook killed; queued again", "hook", op.Hook.Name(), "err", cause)
	return errors.Join(cause, u.save())
}

// commitHookChanges commits the buffered changes of a hook that exited 0
// and returns why the hook failed, if it did: err (the process could not
// run), a non-zero exit, or a failed commit.
func (u *Uniter) commitHookChanges(ctx context.Context, ex *execResult, err error) error {
	if err == nil && ex.res.code != 0 {
		err = fmt.Errorf("exit status %d", ex.res.code)
	}
	if err == nil && !ex.changes.Empty() {
		if cerr := u.cfg.Caller.Call(ctx, api.AgentCommitHook, wireChanges(u.cfg.Unit, ex.changes, ex.baseState), nil); cerr != nil {
			err = fmt.Errorf("committing requested changes failed: %w", cerr)
		}
	}
	return err
}

// logHookRan logs a hook that succeeded, locally and to the controller.
func (u *Uniter) logHookRan(ctx context.Context, h HookInfo, res result) {
	if res.missing {
		u.log.Debug("skipped missing hook", "hook", h.Name())
		return
	}
	u.log.Info("ran hook", "hook", h.Name(), "handler", res.handler)
	u.logRemote(ctx, "INFO", "juju.worker.uniter.operation", fmt.Sprintf("ran %q hook (via %s)", h.Name(), via(res.handler)))
}

// reboot hands the machine to the agent for the reboot juju-reboot asked
// for and runs nothing more: the agent stops this uniter, and the unit
// carries on after the machine's next boot (start runs again, and a hook
// ended by --now runs from scratch).
func (u *Uniter) reboot(ctx context.Context, h HookInfo) error {
	u.log.Info("rebooting the machine", "hook", h.Name())
	u.logRemote(ctx, "INFO", "juju.worker.uniter", fmt.Sprintf("%q hook asked for a reboot", h.Name()))
	u.setAgentStatus(ctx, api.Status{Status: "rebooting"})
	if err := u.cfg.Reboot(ctx); err != nil {
		return fmt.Errorf("reboot: %w", err)
	}
	<-ctx.Done()
	return nil
}

// via says how a hook ran, in Juju's debug-log words.
func via(handler string) string {
	if handler == "dispatch" {
		return "hook dispatching script: dispatch"
	}
	return "explicit, bespoke hook script"
}

// hookFailed puts the unit in error and schedules the retry.
func (u *Uniter) hookFailed(ctx context.Context, op *Operation, cause error) error {
	op.Failed = true
	op.Attempts++
	delay := u.cfg.RetryDelay << min(op.Attempts-1, 16)
	if delay > u.cfg.RetryMax || delay <= 0 {
		delay = u.cfg.RetryMax
	}
	delay = time.Duration(float64(delay) * (0.97 + 0.06*rand.Float64()))
	op.NextRetry = u.cfg.Now().Add(delay)
	u.local.Op = *op
	u.log.Error("hook failed", "hook", op.Hook.Name(), "err", cause, "retry-in", delay)
	u.logRemote(ctx, "ERROR", "juju.worker.uniter.operation", fmt.Sprintf("hook %q failed: %v", op.Hook.Name(), cause))
	if err := u.save(); err != nil {
		return err
	}
	u.setAgentStatus(ctx, u.idleStatus())
	return nil
}

// prepareHook does what must precede the hook: the charm on disk, scope
// entry, status, and the version the hook brings the unit to.
func (u *Uniter) prepareHook(ctx context.Context, h *HookInfo, r *Remote) error {
	// The charm the unit has must be on disk in full before its hooks run.
	// A deployment a crash interrupted is finished here only when the
	// controller is back on that charm (so it can be downloaded): otherwise
	// the resolver's upgrade deploys the controller's charm.
	if h.Kind != HookInstall && h.Kind != HookUpgradeCharm && (u.local.DeployedSHA == "" || u.local.DeployedSHA == r.CharmSHA) {
		if err := u.deployCharm(ctx, r.CharmSHA); err != nil {
			return err
		}
	}
	switch h.Kind {
	case HookInstall:
		if err := u.deployCharm(ctx, h.Hash); err != nil {
			return err
		}
		if !u.local.StatusSet {
			return u.setWorkloadStatus(ctx, "maintenance", "installing charm software")
		}
	case HookUpgradeCharm:
		if err := u.deployCharm(ctx, h.Hash); err != nil {
			return err
		}
		if h.Hash == u.local.CharmSHA && h.Version == u.local.CharmModified {
			// An upgrade a restart interrupted, and the controller went
			// back to the unit's charm meanwhile: its files are whole
			// again, and there is nothing to upgrade.
			return errSkip
		}
		return nil
	case HookConfigChanged:
		if h.Hash == "" {
			h.Hash = r.ConfigHash
		}
	case HookLeaderElected:
		if _, leader := u.leader.state(); !leader {
			return errSkip
		}
	case HookUpdateStatus:
		u.mu.Lock()
		u.updateDue = false
		u.mu.Unlock()
	case HookRelationCreated:
		return u.enterScope(ctx, h, r)
	case HookStop:
		return u.setWorkloadStatus(ctx, "maintenance", "stopping charm software")
	case HookRemove:
		return u.setWorkloadStatus(ctx, "maintenance", "cleaning up prior to charm deletion")
	}
	return nil
}

// enterScope joins the relation before relation-created runs, so the hook's
// own relation writes can be committed and the other side sees -joined.
func (u *Uniter) enterScope(ctx context.Context, h *HookInfo, r *Remote) error {
	rl := u.local.Relations[h.RelationID]
	if rl == nil {
		rr := r.Relations[h.RelationID]
		rl = &RelationLocal{ID: h.RelationID, Endpoint: h.Endpoint, RemoteApp: h.RemoteApp,
			Peer: rr != nil && rr.Role == "peer", Members: map[string]int{}}
	}
	if !rl.Joined {
		addr := u.address()
		settings := map[string]string{"private-address": addr, "ingress-address": addr, "egress-subnets": addr + "/32"}
		err := u.cfg.Caller.Call(ctx, api.AgentEnterScope, api.AgentScopeParams{Unit: u.cfg.Unit, RelationID: h.RelationID, Settings: settings}, nil)
		if err != nil {
			return fmt.Errorf("enter scope of relation %d: %w", h.RelationID, err)
		}
		rl.Joined = true
	}
	u.local.Relations[h.RelationID] = rl
	return u.save()
}

// commitHook is the local bookkeeping of a hook whose changes are
// committed (or which was skipped by `resolved --no-retry`), with the
// follow-up operations the contract queues (CHARM-CONTRACT §2.2).
func (u *Uniter) commitHook(ctx context.Context, h HookInfo) error {
	l := u.local
	next := Operation{}
	rl := l.Relations[h.RelationID]
	switch h.Kind {
	case HookInstall:
		l.Installed, l.CharmSHA, l.CharmModified = true, h.Hash, h.Version
	case HookStart:
		l.Started = true
		if h.BootID != "" {
			l.BootID = h.BootID
		}
		if !l.StatusSet {
			if err := u.setWorkloadStatus(ctx, "unknown", ""); err != nil {
				return err
			}
		}
	case HookConfigChanged:
		l.ConfigHash = h.Hash
		if !l.Started {
			next = *hookOp(HookInfo{Kind: HookStart})
		}
	case HookUpgradeCharm:
		l.CharmSHA, l.CharmModified = h.Hash, h.Version
		next = *hookOp(HookInfo{Kind: HookConfigChanged})
	case HookLeaderElected:
		l.Leader = true
	case HookLeaderSettings:
		l.LeaderSettingsSeen, l.LeaderSettingsVersion = true, h.Version
	case HookStop:
		l.Stopped = true
		if err := u.setWorkloadStatus(ctx, "maintenance", ""); err != nil {
			return err
		}
	case HookRemove:
		l.Removed = true
		if err := u.setWorkloadStatus(ctx, "terminated", ""); err != nil {
			return err
		}
	case HookRelationCreated:
		if rl != nil {
			rl.Created = true
		}
	case HookRelationJoined:
		if rl != nil {
			rl.Members[h.RemoteUnit] = h.Version
			rl.ChangedPending = h.RemoteUnit
		}
	case HookRelationChanged:
		switch {
		case rl == nil:
		case h.RemoteUnit == "":
			rl.AppVersion = h.Version
		default:
			rl.Members[h.RemoteUnit] = h.Version
			if rl.ChangedPending == h.RemoteUnit {
				rl.ChangedPending = ""
			}
		}
	case HookRelationDeparted:
		if rl != nil {
			delete(rl.Members, h.RemoteUnit)
		}
	case HookRelationBroken:
		if err := u.leaveScope(ctx, h.RelationID); err != nil {
			return err
		}
	}
	l.Op = next
	return u.save()
}

// address is the unit's address on the machine.
func (u *Uniter) address() string {
	if ms, _ := u.cfg.States(); ms != nil && len(ms.Addresses) > 0 {
		return ms.Addresses[0]
	}
	return "127.0.0.1"
}
