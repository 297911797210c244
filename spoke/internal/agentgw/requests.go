package agentgw

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/spoke/internal/peer"
	"github.com/droverhq/drover/spoke/internal/state"
)

// Lease durations an agent may claim: Juju's 1 min by default, bounded.
const (
	defaultLeaseDuration = time.Minute
	maxLeaseDuration     = 5 * time.Minute
)

// agentMethod serves one agent method: it returns the result and the raft
// index the answer reflects (the write's index, or the snapshot's).
type agentMethod = func(*Gateway, context.Context, *agentConn, json.RawMessage) (any, uint64, error)

// agentMethods is the one table of agent methods.
var agentMethods = map[string]agentMethod{
	api.AgentSetStatus:          (*Gateway).agentSetStatus,
	api.AgentSetWorkloadVersion: (*Gateway).agentSetWorkloadVersion,
	api.AgentClaimLeader:        (*Gateway).agentClaimLeader,
	api.AgentEnterScope:         (*Gateway).agentEnterScope,
	api.AgentLeaveScope:         (*Gateway).agentLeaveScope,
	api.AgentCommitHook:         (*Gateway).agentCommitHook,
	api.AgentReadSettings:       (*Gateway).agentReadSettings,
	api.AgentStartTask:          (*Gateway).agentStartTask,
	api.AgentLogTask:            (*Gateway).agentLogTask,
	api.AgentFinishTask:         (*Gateway).agentFinishTask,
	api.AgentUnitDead:           (*Gateway).agentUnitDead,
	api.AgentGoalState:          (*Gateway).agentGoalState,
	api.AgentStatusGet:          (*Gateway).agentStatusGet,
	api.AgentLog:                (*Gateway).agentLog,
	api.AgentCharmState:         (*Gateway).agentCharmState,
	api.AgentLeaderSettings:     (*Gateway).agentLeaderSettings,
	api.AgentMigrationReport:    (*Gateway).agentMigrationReport,
}

func (g *Gateway) handleAgentRequest(ctx context.Context, c *agentConn, req *agentRequestIn) (any, uint64, error) {
	h, ok := agentMethods[req.Method]
	if !ok {
		return nil, 0, api.Errorf(api.CodeBadRequest, "unknown agent method %q", req.Method)
	}
	return h(g, ctx, c, req.Params)
}

// params decodes a request's params strictly.
func params(raw json.RawMessage, v any) error {
	if len(raw) == 0 {
		return api.Errorf(api.CodeBadRequest, "agent request without params")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return api.Errorf(api.CodeBadRequest, "malformed agent request params: %v", err)
	}
	return nil
}

// ownUnit returns a unit on the agent's machine (principal or subordinate);
// any other unit is forbidden, whether it exists or not.
func (c *agentConn) ownUnit(snap *state.Snapshot, name string) (*api.Unit, error) {
	u, err := snap.UnitByName(c.model, name)
	if err != nil {
		return nil, err
	}
	if u == nil || u.MachineID != c.machine {
		return nil, api.Errorf(api.CodeForbidden, "unit %q is not on machine %s", name, c.machine)
	}
	return u, nil
}

// unitParams decodes params naming a unit and checks the unit is ours.
func (g *Gateway) unitParams(c *agentConn, raw json.RawMessage, v any, unit func() string) (*state.Snapshot, *api.Unit, error) {
	if err := params(raw, v); err != nil {
		return nil, nil, err
	}
	snap := g.b.Store().Snapshot()
	u, err := c.ownUnit(snap, unit())
	return snap, u, err
}

func (g *Gateway) proposeAgent(ctx context.Context, t state.MessageType, req, out any) (uint64, error) {
	val, idx, err := g.b.Propose(ctx, t, req)
	if err != nil || out == nil || val == nil {
		return idx, err
	}
	return idx, peer.AssignValue(val, out)
}

func (g *Gateway) agentSetStatus(ctx context.Context, c *agentConn, raw json.RawMessage) (any, uint64, error) {
	var p api.AgentStatusParams
	_, u, err := g.unitParams(c, raw, &p, func() string { return p.Unit })
	if err != nil {
		return nil, 0, err
	}
	now := g.now()
	if p.Status.Since.IsZero() {
		p.Status.Since = now
	}
	req := &state.SetStatusRequest{ModelUUID: c.model, Kind: p.Kind, Entity: u.Name, Status: p.Status}
	switch p.Kind {
	case api.StatusKindWorkload, api.StatusKindAgent:
	case api.StatusKindApplication:
		req.Entity, req.Leader, req.Now = u.Application, u.Name, now
	default:
		return nil, 0, api.Errorf(api.CodeInvalid, "an agent cannot set %q status", p.Kind)
	}
	idx, err := g.proposeAgent(ctx, state.SetStatusType, req, nil)
	if err == nil && p.Kind == api.StatusKindAgent && p.Status.Status != "error" && u.Resolved != "" {
		// The agent has left the error state: the resolved request is
		// consumed, so the next failure can be resolved again.
		idx, err = g.proposeAgent(ctx, state.ClearResolvedType,
			&state.ClearResolvedRequest{ModelUUID: c.model, Unit: u.Name}, nil)
	}
	return nil, idx, err
}

func (g *Gateway) agentSetWorkloadVersion(ctx context.Context, c *agentConn, raw json.RawMessage) (any, uint64, error) {
	var p api.AgentUnitParams
	_, u, err := g.unitParams(c, raw, &p, func() string { return p.Unit })
	if err != nil {
		return nil, 0, err
	}
	idx, err := g.proposeAgent(ctx, state.SetWorkloadVersionType,
		&state.SetWorkloadVersionRequest{ModelUUID: c.model, Unit: u.Name, Version: p.Version}, nil)
	return nil, idx, err
}

// agentClaimLeader claims or extends the lease. Another holder is not an
// error: the answer is Leader false with the holder.
func (g *Gateway) agentClaimLeader(ctx context.Context, c *agentConn, raw json.RawMessage) (any, uint64, error) {
	var p api.AgentLeaderParams
	_, u, err := g.unitParams(c, raw, &p, func() string { return p.Unit })
	if err != nil {
		return nil, 0, err
	}
	d := p.Duration
	if d <= 0 {
		d = defaultLeaseDuration
	}
	d = min(d, maxLeaseDuration)
	var l api.Lease
	idx, err := g.proposeAgent(ctx, state.ClaimLeaseType, &state.ClaimLeaseRequest{ModelUUID: c.model,
		App: u.Application, Unit: u.Name, Now: g.now(), Duration: d}, &l)
	if errors.Is(err, api.ErrConflict) {
		res := &api.AgentLeaderResult{}
		if cur, lerr := g.b.Store().Snapshot().LeaseByApp(c.model, u.Application); lerr == nil && cur != nil {
			res.Holder, res.Expiry = cur.Holder, cur.Expiry
		}
		return res, idx, nil
	}
	if err != nil {
		return nil, idx, err
	}
	return &api.AgentLeaderResult{Leader: true, Holder: l.Holder, Expiry: l.Expiry}, idx, nil
}

func (g *Gateway) agentEnterScope(ctx context.Context, c *agentConn, raw json.RawMessage) (any, uint64, error) {
	var p api.AgentScopeParams
	_, u, err := g.unitParams(c, raw, &p, func() string { return p.Unit })
	if err != nil {
		return nil, 0, err
	}
	idx, err := g.proposeAgent(ctx, state.EnterScopeType, &state.EnterScopeRequest{ModelUUID: c.model,
		RelationID: p.RelationID, Unit: u.Name, Settings: p.Settings}, nil)
	return nil, idx, relationNotFound(err)
}

func (g *Gateway) agentLeaveScope(ctx context.Context, c *agentConn, raw json.RawMessage) (any, uint64, error) {
	var p api.AgentScopeParams
	_, u, err := g.unitParams(c, raw, &p, func() string { return p.Unit })
	if err != nil {
		return nil, 0, err
	}
	idx, err := g.proposeAgent(ctx, state.LeaveScopeType, &state.LeaveScopeRequest{ModelUUID: c.model,
		RelationID: p.RelationID, Unit: u.Name}, nil)
	return nil, idx, err
}

func (g *Gateway) agentCommitHook(ctx context.Context, c *agentConn, raw json.RawMessage) (any, uint64, error) {
	var p api.AgentHookChanges
	_, u, err := g.unitParams(c, raw, &p, func() string { return p.Unit })
	if err != nil {
		return nil, 0, err
	}
	p.Unit = u.Name
	idx, err := g.proposeAgent(ctx, state.CommitHookChangesType,
		&state.CommitHookChangesRequest{ModelUUID: c.model, Changes: p, Now: g.now()}, nil)
	return nil, idx, relationNotFound(err)
}

// relationNotFound rewrites the store's "relation N not found" as the
// exact phrase the hook tools (and ops) match on.
func relationNotFound(err error) error {
	var e *api.Error
	if errors.As(err, &e) && e.Code == api.CodeNotFound && bytes.HasPrefix([]byte(e.Message), []byte("relation ")) {
		return api.Errorf(api.CodeNotFound, "relation not found")
	}
	return err
}

// agentMigrationReport stores the agent's report on its model's migration
// (the minion protocol) under the tag the connection authenticated as,
// timed by this node.
func (g *Gateway) agentMigrationReport(ctx context.Context, c *agentConn, raw json.RawMessage) (any, uint64, error) {
	var p api.MinionReport
	if err := params(raw, &p); err != nil {
		return nil, 0, err
	}
	p.Time = g.now()
	idx, err := g.proposeAgent(ctx, state.ReportMinionType,
		&state.ReportMinionRequest{ModelUUID: c.model, Tag: c.tag(), Report: p}, nil)
	return nil, idx, err
}
