package agentgw

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/spoke/internal/state"
)

// Model config keys the agents read, with Juju's defaults.
const (
	cfgUpdateStatusInterval = "update-status-hook-interval"
	cfgAutoRetry            = "automatically-retry-hooks"
	defaultUpdateStatus     = 5 * time.Minute
)

// relInterest is one relation an agent connection's state depends on.
type relInterest struct {
	id        int
	remoteApp string // the own app for peers
}

// interest is what a connection's last state was built from: the hub pokes
// the connection only for events touching it (see the package comment).
type interest struct {
	machine    string
	units      []string
	apps       []string
	leaderApps []string // apps one of our units led at the last build
	rels       []relInterest
}

// buildMachineState assembles the whole remote state of one machine from a
// snapshot of version v, and the interest it depends on. Parts shared with
// other machines come from memo (which may be nil) and must not be
// modified.
func (g *Gateway) buildMachineState(snap *state.Snapshot, v storeVersion, memo *buildMemo, model, machine string, now time.Time) (*api.MachineState, interest, error) {
	in := interest{machine: machine}
	mp, err := memo.model(snap, v, model)
	if err != nil {
		return nil, in, err
	}
	ms := &api.MachineState{ModelUUID: mp.m.UUID, ModelName: mp.m.Name, Machine: machine, Life: api.Dead,
		UpdateStatusInterval: mp.interval, AutoRetry: mp.autoRetry, ControllerAddresses: mp.controllers,
		Units: map[string]*api.UnitRemoteState{}, Migration: agentMigration(mp.m)}
	mc, err := snap.MachineByID(model, machine)
	if err != nil || mc == nil {
		return ms, in, err // gone: dead, no units
	}
	ms.Life, ms.Addresses = mc.Life, mc.Addresses
	units, err := snap.UnitsByMachine(model, machine)
	if err != nil {
		return nil, in, err
	}
	for _, u := range units {
		urs, err := g.buildUnitState(snap, v, memo, u, now, &in)
		if err != nil {
			return nil, in, err
		}
		ms.Units[u.Name] = urs
	}
	if ms.Tasks, err = activeTasks(snap, model, api.MachineReceiver(machine)); err != nil {
		return nil, in, err
	}
	return ms, in, nil
}

// agentMigration is what the agents of a model migrating away see of its
// migration (the minion protocol): nil unless the model is a migration's
// source. A quiesced model whose phase is not set yet is in
// api.MigrationQuiesce.
func agentMigration(m *api.Model) *api.AgentMigration {
	mig := m.Migration
	if mig == nil || mig.Role != api.MigrationSource {
		return nil
	}
	phase := mig.Phase
	if phase == "" {
		phase = api.MigrationQuiesce
	}
	return &api.AgentMigration{ID: mig.ID, Phase: phase, Target: mig.Target}
}

// activeTasks are receiver's pending and running tasks, oldest first.
func activeTasks(snap *state.Snapshot, model, receiver string) ([]api.TaskRef, error) {
	tasks, err := snap.ListTasks(model, state.TaskFilter{Receiver: receiver})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(tasks, func(x, y *api.Task) int {
		return cmp.Or(x.Enqueued.Compare(y.Enqueued), cmp.Compare(atoi(x.ID), atoi(y.ID)))
	})
	var out []api.TaskRef
	for _, t := range tasks {
		if t.Status == api.TaskPending || t.Status == api.TaskRunning {
			out = append(out, api.TaskRef{ID: t.ID, Action: t.Action, Params: t.Params,
				Parallel: t.Parallel, ExecutionGroup: t.ExecutionGroup, Status: t.Status})
		}
	}
	return out, nil
}

func (g *Gateway) buildUnitState(snap *state.Snapshot, v storeVersion, memo *buildMemo, u *api.Unit, now time.Time, in *interest) (*api.UnitRemoteState, error) {
	in.units = append(in.units, u.Name)
	if !slices.Contains(in.apps, u.Application) {
		in.apps = append(in.apps, u.Application)
	}
	ap, err := memo.app(g, snap, v, u.ModelUUID, u.Application)
	if err != nil {
		return nil, err
	}
	a := ap.a
	urs := &api.UnitRemoteState{Unit: u.Name, Application: u.Application, Principal: u.Principal, Life: u.Life,
		Resolved: u.Resolved, RetryVersion: u.RetryVersion, CharmSHA256: a.CharmSHA256, CharmRevision: a.CharmRevision, ForceCharmUpgrade: a.ForceCharmUpgrade, Trust: a.Trust,
		OpenPorts: u.OpenPorts, WorkloadStatus: u.WorkloadStatus, Config: ap.config,
		LeaderSettingsVersion: ap.leaderVersion, Relations: map[int]*api.RelationRemoteState{},
		CharmModifiedVersion: a.CharmModifiedVersion}
	res, err := snap.ResourcesByApplication(u.ModelUUID, u.Application)
	if err != nil {
		return nil, err
	}
	for _, r := range res {
		if urs.Resources == nil {
			urs.Resources = map[string]api.AgentResource{}
		}
		urs.Resources[r.Name] = api.AgentResource{Path: r.Path, Revision: r.Revision, SHA256: r.SHA256, Size: r.Size}
	}
	if l := ap.lease; l != nil && l.Holder == u.Name && l.Expiry.After(now) {
		urs.Leader, urs.LeaseExpiry = true, l.Expiry
		in.leaderApps = append(in.leaderApps, a.Name)
	}
	if urs.Tasks, err = activeTasks(snap, u.ModelUUID, u.Name); err != nil {
		return nil, err
	}
	for _, r := range ap.rels {
		rrs, err := buildRelationState(snap, v, memo, u, r)
		if err != nil {
			return nil, err
		}
		if rrs != nil {
			urs.Relations[r.ID] = rrs
			in.rels = append(in.rels, relInterest{id: r.ID, remoteApp: rrs.RemoteApp})
		}
	}
	return urs, nil
}

// buildRelationState is relation r as unit u sees it. Members are found
// from the remote application's units (not by scanning the scope), so a
// web unit related to a one-unit kv costs one lookup however many web
// units share the relation, and a non-container relation is looked up once
// per application and store version (buildMemo). Container-scoped
// relations only show units on u's machine.
func buildRelationState(snap *state.Snapshot, v storeVersion, memo *buildMemo, u *api.Unit, r *api.Relation) (*api.RelationRemoteState, error) {
	var local, remote *api.RelationEndpoint
	for i := range r.Endpoints {
		if r.Endpoints[i].Application == u.Application && local == nil {
			local = &r.Endpoints[i]
		} else {
			remote = &r.Endpoints[i]
		}
	}
	if local == nil {
		return nil, nil
	}
	if remote == nil { // peers
		remote = local
	}
	container := local.Scope == "container" || remote.Scope == "container"
	if container && u.Principal == "" && remote.Application != u.Application {
		// A principal sees a container relation only through its own subordinate.
		if !hasSubordinateOf(snap, u, remote.Application) {
			return nil, nil
		}
	}
	var rrs *api.RelationRemoteState
	if container {
		rrs = &api.RelationRemoteState{ID: r.ID, Endpoint: local.Name, Interface: local.Interface, Role: local.Role,
			Scope: "container", RemoteApp: remote.Application, Life: r.Life, Members: map[string]int{}}
		others, err := snap.UnitsByApplication(u.ModelUUID, remote.Application)
		if err != nil {
			return nil, err
		}
		for _, o := range others {
			if o.Name == u.Name || o.MachineID != u.MachineID {
				continue
			}
			if err := addMember(snap, u.ModelUUID, r.ID, o.Name, rrs.Members); err != nil {
				return nil, err
			}
		}
		if bag, err := snap.RelationDataBag(u.ModelUUID, r.ID, remote.Application, true); err != nil {
			return nil, err
		} else if bag != nil {
			rrs.AppVersion = bag.Version
		}
	} else {
		shared, err := memo.relation(snap, v, u.ModelUUID, r, local, remote)
		if err != nil {
			return nil, err
		}
		c := *shared
		rrs = &c
		if _, self := shared.Members[u.Name]; self { // peers: all but u
			rrs.Members = make(map[string]int, len(shared.Members)-1)
			for k, n := range shared.Members {
				if k != u.Name {
					rrs.Members[k] = n
				}
			}
		}
	}
	var err error
	if rrs.Joined, err = snap.InScope(u.ModelUUID, r.ID, u.Name); err != nil {
		return nil, err
	}
	return rrs, nil
}

func hasSubordinateOf(snap *state.Snapshot, principal *api.Unit, app string) bool {
	units, err := snap.UnitsByMachine(principal.ModelUUID, principal.MachineID)
	if err != nil {
		return false
	}
	for _, o := range units {
		if o.Application == app && o.Principal == principal.Name {
			return true
		}
	}
	return false
}

// effectiveConfig is the charm's defaults overlaid with the user's values.
func (g *Gateway) effectiveConfig(snap *state.Snapshot, a *api.Application) (map[string]any, error) {
	out := map[string]any{}
	if ch, err := snap.CharmBySHA(a.CharmSHA256); err != nil {
		return nil, err
	} else if ch != nil {
		defaults, err := g.cfg.CharmDefaults(ch)
		if err != nil {
			return nil, err
		}
		for k, v := range defaults {
			out[k] = v
		}
	}
	for k, v := range a.Config {
		out[k] = v
	}
	return out, nil
}

func configDuration(v any, def time.Duration) time.Duration {
	switch x := v.(type) {
	case string:
		if d, err := time.ParseDuration(x); err == nil && d > 0 {
			return d
		}
	case interface{ Int64() (int64, error) }: // json.Number: seconds
		if n, err := x.Int64(); err == nil && n > 0 {
			return time.Duration(n) * time.Second
		}
	}
	return def
}

func configBool(v any, def bool) bool {
	switch x := v.(type) {
	case bool:
		return x
	case string:
		if b, err := strconv.ParseBool(x); err == nil {
			return b
		}
	}
	return def
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// unitAppOf is the application of "app/N".
func unitAppOf(unit string) string {
	app, _, _ := strings.Cut(unit, "/")
	return app
}
