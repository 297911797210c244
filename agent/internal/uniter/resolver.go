package uniter

import (
	"slices"
	"sort"
	"time"

	"github.com/droverhq/drover/api"
)

// Remote is the resolver's view of the world outside the unit: the
// controller's state for the unit plus the agent's own leadership claim and
// timers.
type Remote struct {
	Unit     string
	Life     api.Life
	CharmSHA string
	// ForceUpgrade: the charm was changed with --force-units, so a unit in
	// error deploys it without waiting to be resolved.
	ForceUpgrade bool
	// CharmModified is the application's charm-modified-version: it moves
	// when the charm's resources change, and the unit upgrades for it as
	// for a new charm.
	CharmModified int
	ConfigHash    string
	// LeaderKnown is false until the first claim was answered.
	LeaderKnown           bool
	Leader                bool
	LeaderSettingsVersion int
	Relations             map[int]*api.RelationRemoteState
	Tasks                 []api.TaskRef
	Resolved              string
	RetryVersion          int
	AutoRetry             bool
	UpdateStatusDue       bool
	// BootID is the machine's current boot ("" when unknown).
	BootID string
	Now    time.Time
}

// Decision is what the resolver wants next: an operation to run, a forced
// charm deployment, or nothing until the remote state changes or (if set)
// until Wake.
type Decision struct {
	Op *Operation
	// ForceDeploy is the charm to put on disk while the unit stays in error
	// (a forced upgrade). It is not an Operation because it must not take
	// l.Op's place: the failed hook stays there, failed, and its retry runs
	// the new charm's code (CHARM-CONTRACT §2.3, §2.5).
	ForceDeploy string
	Wake        time.Time
}

func hookOp(h HookInfo) *Operation {
	return &Operation{Kind: OpRunHook, Step: Queued, Hook: &h}
}

// Resolve decides the next operation from the local and remote state. It
// is pure: the same inputs give the same answer (CHARM-CONTRACT §2.2).
func Resolve(l *Local, r *Remote) Decision {
	// A committed operation whose local bookkeeping is pending finishes
	// first, whatever else changed.
	if l.Op.Step == Done || (l.Op.Kind != OpNone && l.Op.Kind != OpRunHook && l.Op.Step != "") {
		op := l.Op
		return Decision{Op: &op}
	}
	if l.Removed {
		return Decision{Op: &Operation{Kind: OpUnitDead, Step: Queued}}
	}
	inError := l.Op.Kind == OpRunHook && l.Op.Step == Pending
	// A hook the contract queued (start after the first config-changed,
	// config-changed after upgrade-charm) runs before anything else: running
	// another hook first would replace it in l.Op and lose it.
	queued := l.Op.Kind == OpRunHook && l.Op.Step == Queued
	if queued && (l.Op.Hook.Kind == HookUpgradeCharm || (l.Op.Hook.Kind == HookInstall && !l.Installed)) && r.Life == api.Alive {
		// A deployment a restart interrupted (runHook records it first):
		// it goes on before actions and every other hook, so nothing runs
		// on a half-deployed charm directory; to the charm the controller
		// wants now, should it have changed meanwhile.
		op := l.Op
		if r.CharmSHA != "" && (op.Hook.Hash != r.CharmSHA || op.Hook.Version != r.CharmModified) {
			h := *op.Hook
			h.Hash, h.Version = r.CharmSHA, r.CharmModified
			op.Hook = &h
		}
		return Decision{Op: &op}
	}
	if rebooted(l, r) && !inError && !queued && r.Life == api.Alive {
		// Reboot detection comes first (CHARM-CONTRACT §2.2): a started
		// unit runs start again, so its workload comes back up.
		return Decision{Op: hookOp(HookInfo{Kind: HookStart, BootID: r.BootID})}
	}
	if l.Installed && !inError && !queued && r.Life == api.Alive {
		if op := resolveCreated(l, r); op != nil {
			return Decision{Op: op}
		}
		if op := resolveLeadership(l, r); op != nil {
			return Decision{Op: op}
		}
	}
	if l.Installed {
		for _, t := range r.Tasks {
			if !l.taskDone(t.ID) {
				return Decision{Op: &Operation{Kind: OpRunAction, Step: Queued, TaskID: t.ID}}
			}
		}
	}
	switch {
	case l.Op.Kind == OpRunHook && l.Op.Step == Queued:
		op := l.Op
		return Decision{Op: &op}
	case inError:
		return resolveError(l, r)
	}
	return resolveIdle(l, r)
}

// rebooted reports whether the machine booted again since the started unit
// last saw it. The first boot a unit sees, and a boot seen before its own
// start, are recorded without a hook (Uniter.Run).
func rebooted(l *Local, r *Remote) bool {
	return r.BootID != "" && l.BootID != "" && l.BootID != r.BootID && l.Installed && l.Started && !l.Stopped
}

// resolveError decides on a failed hook: a forced charm upgrade, a
// `resolved` request, or an automatic retry once its backoff has passed.
// Nothing else runs.
func resolveError(l *Local, r *Remote) Decision {
	// The only exception to "nothing runs in error" (CHARM-CONTRACT §2.5),
	// as Juju's nextOpHookError has it: the new charm's files go in place
	// first, whatever resolved or the backoff say, so the retry they lead
	// to runs the fixed code. DeployedSHA, not CharmSHA: the failed hook may
	// be an upgrade-charm whose charm is on disk but not yet committed.
	if r.ForceUpgrade && r.CharmSHA != "" && l.DeployedSHA != r.CharmSHA {
		return Decision{ForceDeploy: r.CharmSHA}
	}
	op := l.Op
	if r.RetryVersion > l.RetryVersion && r.Resolved != "" {
		if r.Resolved == "no-retry" {
			op.Step = Done // skip: bookkeeping only, its changes are lost
		}
		op.Attempts = 0
		return Decision{Op: &op}
	}
	if !r.AutoRetry {
		return Decision{}
	}
	if r.Now.Before(op.NextRetry) {
		return Decision{Wake: op.NextRetry}
	}
	return Decision{Op: &op}
}

// resolveCreated runs relation-created for relations that exist but the
// unit has not yet seen, in relation id order.
func resolveCreated(l *Local, r *Remote) *Operation {
	for _, id := range sortedIDs(r.Relations) {
		rr := r.Relations[id]
		if rr.Life != api.Alive {
			continue
		}
		if rl := l.Relations[id]; rl != nil && rl.Created {
			continue
		}
		return hookOp(HookInfo{Kind: HookRelationCreated, RelationID: id, Endpoint: rr.Endpoint, RemoteApp: rr.RemoteApp})
	}
	return nil
}

// resolveLeadership accepts or resigns leadership and runs
// leader-settings-changed on non-leaders.
func resolveLeadership(l *Local, r *Remote) *Operation {
	if !r.LeaderKnown {
		return nil
	}
	switch {
	case r.Leader && !l.Leader:
		return hookOp(HookInfo{Kind: HookLeaderElected})
	case !r.Leader && l.Leader:
		return &Operation{Kind: OpResign, Step: Queued}
	case !r.Leader && (!l.LeaderSettingsSeen || l.LeaderSettingsVersion != r.LeaderSettingsVersion):
		return hookOp(HookInfo{Kind: HookLeaderSettings, Version: r.LeaderSettingsVersion})
	}
	return nil
}

func resolveIdle(l *Local, r *Remote) Decision {
	if r.Life != api.Alive {
		return resolveDying(l, r)
	}
	switch {
	case !l.Installed:
		return Decision{Op: hookOp(HookInfo{Kind: HookInstall, Hash: r.CharmSHA, Version: r.CharmModified})}
	case r.CharmSHA != "" && (l.CharmSHA != r.CharmSHA || l.CharmModified != r.CharmModified):
		return Decision{Op: hookOp(HookInfo{Kind: HookUpgradeCharm, Hash: r.CharmSHA, Version: r.CharmModified})}
	case l.ConfigHash != r.ConfigHash:
		return Decision{Op: hookOp(HookInfo{Kind: HookConfigChanged, Hash: r.ConfigHash})}
	}
	if op := resolveRelations(l, r, false); op != nil {
		return Decision{Op: op}
	}
	if r.UpdateStatusDue && l.Started {
		return Decision{Op: hookOp(HookInfo{Kind: HookUpdateStatus})}
	}
	return Decision{}
}

// resolveDying tears a dying unit down: every relation departed and broken
// (and its scope left), then stop, remove, and the unit-dead report.
func resolveDying(l *Local, r *Remote) Decision {
	if op := resolveRelations(l, r, true); op != nil {
		return Decision{Op: op}
	}
	switch {
	case l.Started && !l.Stopped:
		return Decision{Op: hookOp(HookInfo{Kind: HookStop})}
	case l.Installed && !l.Removed:
		return Decision{Op: hookOp(HookInfo{Kind: HookRemove})}
	}
	return Decision{Op: &Operation{Kind: OpUnitDead, Step: Queued}}
}

// resolveRelations returns the next relation hook (or scope departure),
// scanning relations in id order. dying treats every relation as going
// away: all members depart, then it breaks.
func resolveRelations(l *Local, r *Remote, dying bool) *Operation {
	ids := sortedIDs(r.Relations)
	for id := range l.Relations {
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	sort.Ints(ids)
	for _, id := range ids {
		rl, rr := l.Relations[id], r.Relations[id]
		if rl == nil {
			continue // not created yet: relation-created comes first
		}
		if op := nextRelationHook(l, rl, rr, r.Unit, dying); op != nil {
			return op
		}
	}
	return nil
}

func nextRelationHook(l *Local, rl *RelationLocal, rr *api.RelationRemoteState, unit string, dying bool) *Operation {
	info := HookInfo{RelationID: rl.ID, Endpoint: rl.Endpoint, RemoteApp: rl.RemoteApp}
	if !rl.Created {
		if rl.Joined && (dying || rr == nil || rr.Life != api.Alive) {
			return &Operation{Kind: OpLeave, Step: Queued, RelationID: rl.ID}
		}
		return nil
	}
	if rl.ChangedPending != "" {
		info.Kind, info.RemoteUnit = HookRelationChanged, rl.ChangedPending
		info.Version = memberVersion(rr, rl.ChangedPending, rl.Members[rl.ChangedPending])
		return hookOp(info)
	}
	// A relation going away (the unit or the relation dying, or the
	// relation gone) departs every member, then breaks (CHARM-CONTRACT
	// §2.3): its members are treated as empty.
	going := dying || rr == nil || rr.Life != api.Alive
	var remote map[string]int
	if !going {
		remote = rr.Members
	}
	for _, u := range slices.Sorted(keys(rl.Members)) {
		if _, ok := remote[u]; !ok {
			info.Kind, info.RemoteUnit, info.DepartingUnit = HookRelationDeparted, u, u
			if dying {
				info.DepartingUnit = unit
			}
			return hookOp(info)
		}
	}
	if going {
		if rl.Peer {
			return &Operation{Kind: OpLeave, Step: Queued, RelationID: rl.ID}
		}
		info.Kind = HookRelationBroken
		return hookOp(info)
	}
	for _, u := range slices.Sorted(keys(remote)) {
		if _, ok := rl.Members[u]; !ok {
			info.Kind, info.RemoteUnit, info.Version = HookRelationJoined, u, remote[u]
			return hookOp(info)
		}
	}
	for _, u := range slices.Sorted(keys(remote)) {
		if v := remote[u]; v != rl.Members[u] {
			info.Kind, info.RemoteUnit, info.Version = HookRelationChanged, u, v
			return hookOp(info)
		}
	}
	if rr.AppVersion > 0 && rr.AppVersion != rl.AppVersion {
		info.Kind, info.Version = HookRelationChanged, rr.AppVersion
		return hookOp(info)
	}
	return nil
}

func memberVersion(rr *api.RelationRemoteState, u string, def int) int {
	if rr != nil {
		if v, ok := rr.Members[u]; ok {
			return v
		}
	}
	return def
}

func sortedIDs(m map[int]*api.RelationRemoteState) []int {
	ids := make([]int, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	return ids
}

func keys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}
