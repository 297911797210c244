package agentgw

import (
	"context"
	"encoding/json"
	"maps"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/spoke/internal/lookup"
	"github.com/droverhq/drover/spoke/internal/state"
)

// goalSinceFormat is goal-state's "since" layout.
const goalSinceFormat = "2006-01-02 15:04:05Z"

// agentReadSettings is relation-get: a unit bag or an application bag of a
// relation the reader's application takes part in. Bags of departed units
// stay readable while the relation lives.
func (g *Gateway) agentReadSettings(ctx context.Context, c *agentConn, raw json.RawMessage) (any, uint64, error) {
	var p api.AgentReadParams
	snap, u, err := g.unitParams(c, raw, &p, func() string { return p.Unit })
	if err != nil {
		return nil, 0, err
	}
	idx, _ := snap.LatestIndex()
	rel, err := snap.RelationByID(c.model, p.RelationID)
	if err != nil {
		return nil, idx, err
	}
	if rel == nil || !inRelation(rel, u.Application) {
		return nil, idx, api.Errorf(api.CodeNotFound, "relation not found")
	}
	ownerApp := p.Owner
	if !p.App {
		ownerApp = unitAppOf(p.Owner)
	}
	if !inRelation(rel, ownerApp) {
		return nil, idx, api.Errorf(api.CodeNotFound, "%q is not in relation %d", p.Owner, rel.ID)
	}
	if p.App && ownerApp == u.Application && len(rel.Endpoints) > 1 {
		if l, err := snap.LeaseByApp(c.model, u.Application); err != nil {
			return nil, idx, err
		} else if l == nil || l.Holder != u.Name || !g.now().Before(l.Expiry) {
			return nil, idx, api.Errorf(api.CodeNotLeader,
				"cannot read relation settings: %s is not the leader of %s", u.Name, u.Application)
		}
	}
	bag, err := snap.RelationDataBag(c.model, rel.ID, p.Owner, p.App)
	if err != nil {
		return nil, idx, err
	}
	out := map[string]string{}
	if bag != nil {
		maps.Copy(out, bag.Settings)
	}
	return out, idx, nil
}

func inRelation(rel *api.Relation, app string) bool {
	for _, ep := range rel.Endpoints {
		if ep.Application == app {
			return true
		}
	}
	return false
}

// ownTask checks the task is addressed to one of the agent's units, or
// (p.Machine) to the agent's machine itself.
func (g *Gateway) ownTask(c *agentConn, raw json.RawMessage, p *api.AgentTaskParams) error {
	if err := params(raw, p); err != nil {
		return err
	}
	if p.Machine != "" {
		return g.ownMachineTask(c, p)
	}
	snap, u, err := g.unitParams(c, raw, p, func() string { return p.Unit })
	if err != nil {
		return err
	}
	t, err := lookup.Task(snap, c.model, p.ID)
	if err != nil {
		return err
	}
	if t.Receiver != u.Name {
		return api.Errorf(api.CodeForbidden, "task %s is not for unit %s", p.ID, u.Name)
	}
	return nil
}

// ownMachineTask checks a task reported for a machine is the agent's own
// machine's.
func (g *Gateway) ownMachineTask(c *agentConn, p *api.AgentTaskParams) error {
	if p.Unit != "" {
		return api.Errorf(api.CodeBadRequest, "a task report names a unit or a machine, not both")
	}
	if p.Machine != c.machine {
		return api.Errorf(api.CodeForbidden, "machine %s is not this agent's (machine %s)", p.Machine, c.machine)
	}
	t, err := lookup.Task(g.b.Store().Snapshot(), c.model, p.ID)
	if err != nil {
		return err
	}
	if t.Receiver != api.MachineReceiver(c.machine) {
		return api.Errorf(api.CodeForbidden, "task %s is not for machine %s", p.ID, c.machine)
	}
	return nil
}

func (g *Gateway) agentStartTask(ctx context.Context, c *agentConn, raw json.RawMessage) (any, uint64, error) {
	var p api.AgentTaskParams
	if err := g.ownTask(c, raw, &p); err != nil {
		return nil, 0, err
	}
	idx, err := g.proposeAgent(ctx, state.StartTaskType, &state.StartTaskRequest{ModelUUID: c.model, ID: p.ID, Now: g.now()}, nil)
	return nil, idx, err
}

func (g *Gateway) agentLogTask(ctx context.Context, c *agentConn, raw json.RawMessage) (any, uint64, error) {
	var p api.AgentTaskParams
	if err := g.ownTask(c, raw, &p); err != nil {
		return nil, 0, err
	}
	idx, err := g.proposeAgent(ctx, state.AppendTaskLogType, &state.AppendTaskLogRequest{ModelUUID: c.model,
		ID: p.ID, Time: g.now(), Message: p.Message}, nil)
	return nil, idx, err
}

func (g *Gateway) agentFinishTask(ctx context.Context, c *agentConn, raw json.RawMessage) (any, uint64, error) {
	var p api.AgentTaskParams
	if err := g.ownTask(c, raw, &p); err != nil {
		return nil, 0, err
	}
	idx, err := g.proposeAgent(ctx, state.FinishTaskType, &state.FinishTaskRequest{ModelUUID: c.model, ID: p.ID,
		Status: p.Status, Message: p.Message, Results: p.Results, Now: g.now()}, nil)
	return nil, idx, err
}

// agentUnitDead ends a dying unit whose teardown is done: it must have left
// every scope; then it is marked dead and removed.
func (g *Gateway) agentUnitDead(ctx context.Context, c *agentConn, raw json.RawMessage) (any, uint64, error) {
	var p api.AgentUnitParams
	_, u, err := g.unitParams(c, raw, &p, func() string { return p.Unit })
	if err != nil {
		return nil, 0, err
	}
	if u.Life == api.Alive {
		return nil, 0, api.Errorf(api.CodeConflict, "unit %q is alive", u.Name)
	}
	if _, err := g.proposeAgent(ctx, state.EnsureUnitDeadType, &state.EnsureUnitDeadRequest{ModelUUID: c.model, Unit: u.Name}, nil); err != nil {
		return nil, 0, err
	}
	idx, err := g.proposeAgent(ctx, state.RemoveUnitType, &state.RemoveUnitRequest{ModelUUID: c.model, Unit: u.Name}, nil)
	return nil, idx, err
}

// agentGoalState answers goal-state: the application's units and, per
// endpoint, the remote applications and their units.
func (g *Gateway) agentGoalState(ctx context.Context, c *agentConn, raw json.RawMessage) (any, uint64, error) {
	var p api.AgentUnitParams
	snap, u, err := g.unitParams(c, raw, &p, func() string { return p.Unit })
	if err != nil {
		return nil, 0, err
	}
	idx, _ := snap.LatestIndex()
	gs := &api.GoalState{Units: map[string]api.GoalStatus{}, Relations: map[string]map[string]api.GoalStatus{}}
	if gs.Units, err = goalUnits(snap, c.model, u.Application, ""); err != nil {
		return nil, idx, err
	}
	rels, err := snap.RelationsByApplication(c.model, u.Application)
	if err != nil {
		return nil, idx, err
	}
	for _, r := range rels {
		var local, remote string
		for _, ep := range r.Endpoints {
			if ep.Application == u.Application && local == "" {
				local = ep.Name
			} else {
				remote = ep.Application
			}
		}
		entries, err := goalUnits(snap, c.model, remote, u.Name)
		if err != nil {
			return nil, idx, err
		}
		if remote == "" { // peers: the other units of the application
			if entries, err = goalUnits(snap, c.model, u.Application, u.Name); err != nil {
				return nil, idx, err
			}
		} else if a, err := snap.ApplicationByName(c.model, remote); err != nil {
			return nil, idx, err
		} else if a != nil {
			st := "joined"
			if r.Life != api.Alive {
				st = string(r.Life)
			}
			entries[remote] = api.GoalStatus{Status: st, Since: a.Status.Since.UTC().Format(goalSinceFormat)}
		}
		if gs.Relations[local] == nil {
			gs.Relations[local] = map[string]api.GoalStatus{}
		}
		maps.Copy(gs.Relations[local], entries)
	}
	return gs, idx, nil
}

// goalUnits lists an application's units but skip, with their workload
// status or "dying"; dead units are left out.
func goalUnits(snap *state.Snapshot, model, app, skip string) (map[string]api.GoalStatus, error) {
	out := map[string]api.GoalStatus{}
	units, err := snap.UnitsByApplication(model, app)
	if err != nil {
		return nil, err
	}
	for _, o := range units {
		if o.Name == skip || o.Life == api.Dead {
			continue
		}
		st := o.WorkloadStatus.Status
		if o.Life == api.Dying {
			st = "dying"
		}
		out[o.Name] = api.GoalStatus{Status: st, Since: o.WorkloadStatus.Since.UTC().Format(goalSinceFormat)}
	}
	return out, nil
}

// agentStatusGet is status-get; the application form is the leader's only.
func (g *Gateway) agentStatusGet(ctx context.Context, c *agentConn, raw json.RawMessage) (any, uint64, error) {
	var p api.AgentUnitParams
	snap, u, err := g.unitParams(c, raw, &p, func() string { return p.Unit })
	if err != nil {
		return nil, 0, err
	}
	idx, _ := snap.LatestIndex()
	res := &api.AgentStatusResult{Unit: u.WorkloadStatus}
	if !p.Application {
		return res, idx, nil
	}
	if err := g.isLeader(snap, u, g.now()); err != nil {
		return nil, idx, err
	}
	a, err := lookup.Application(snap, c.model, u.Application)
	if err != nil {
		return nil, idx, err
	}
	st := a.Status
	res.Application, res.Units = &st, map[string]api.Status{}
	units, err := snap.UnitsByApplication(c.model, a.Name)
	if err != nil {
		return nil, idx, err
	}
	for _, o := range units {
		res.Units[o.Name] = o.WorkloadStatus
	}
	return res, idx, nil
}

func (g *Gateway) isLeader(snap *state.Snapshot, u *api.Unit, now time.Time) error {
	l, err := snap.LeaseByApp(u.ModelUUID, u.Application)
	if err != nil {
		return err
	}
	if l == nil || l.Holder != u.Name || !now.Before(l.Expiry) {
		return api.Errorf(api.CodeNotLeader, "this unit is not the leader")
	}
	return nil
}

// agentLog records a log line in this node's debug-log buffer.
func (g *Gateway) agentLog(ctx context.Context, c *agentConn, raw json.RawMessage) (any, uint64, error) {
	var p api.AgentLogParams
	if err := params(raw, &p); err != nil {
		return nil, 0, err
	}
	entity := "machine-" + c.machine
	if p.Unit != "" {
		u, err := c.ownUnit(g.b.Store().Snapshot(), p.Unit)
		if err != nil {
			return nil, 0, err
		}
		entity = unitTagOf(u.Name)
	}
	if p.Time.IsZero() {
		p.Time = g.now()
	}
	g.cfg.AppendLog(c.model, api.LogRecord{Entity: entity, Time: p.Time, Level: p.Level, Module: p.Module, Message: p.Message})
	return nil, 0, nil
}

func (g *Gateway) agentCharmState(ctx context.Context, c *agentConn, raw json.RawMessage) (any, uint64, error) {
	return g.agentUnitMap(c, raw, func(snap *state.Snapshot, u *api.Unit) (map[string]string, error) {
		st, err := snap.UnitStateByName(c.model, u.Name)
		if err != nil || st == nil {
			return nil, err
		}
		return st.State, nil
	})
}

func (g *Gateway) agentLeaderSettings(ctx context.Context, c *agentConn, raw json.RawMessage) (any, uint64, error) {
	return g.agentUnitMap(c, raw, func(snap *state.Snapshot, u *api.Unit) (map[string]string, error) {
		ls, err := snap.LeaderSettingsByApp(c.model, u.Application)
		if err != nil || ls == nil {
			return nil, err
		}
		return ls.Settings, nil
	})
}

// agentUnitMap answers a read of one of a unit's string maps (charm state,
// leader settings) with a copy, empty when nothing was ever written.
func (g *Gateway) agentUnitMap(c *agentConn, raw json.RawMessage, get func(*state.Snapshot, *api.Unit) (map[string]string, error)) (any, uint64, error) {
	var p api.AgentUnitParams
	snap, u, err := g.unitParams(c, raw, &p, func() string { return p.Unit })
	if err != nil {
		return nil, 0, err
	}
	idx, _ := snap.LatestIndex()
	m, err := get(snap, u)
	if err != nil {
		return nil, idx, err
	}
	out := map[string]string{}
	maps.Copy(out, m)
	return out, idx, nil
}
