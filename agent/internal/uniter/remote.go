package uniter

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/droverhq/drover/agent/internal/hookctx"
	"github.com/droverhq/drover/api"
)

// hookRemote is hookctx.Remote over the agent's controller connection, for
// one hook run.
type hookRemote struct {
	u         *Uniter
	taskID    string
	endpoints map[string]bool // endpoints and extra bindings of the charm
	address   string
	statusSet bool // set-status was called (immediate writes survive failure)
}

var _ hookctx.Remote = (*hookRemote)(nil)

func (h *hookRemote) call(ctx context.Context, method string, params, out any) error {
	err := h.u.cfg.Caller.Call(ctx, method, params, out)
	var e *api.Error
	if errors.As(err, &e) {
		switch e.Code {
		case api.CodeNotLeader:
			return fmt.Errorf("%w: %s", hookctx.ErrNotLeader, e.Message)
		case api.CodeNotFound:
			if e.Message == "relation not found" {
				return hookctx.ErrRelationNotFound
			}
			return fmt.Errorf("%w: %s", hookctx.ErrNotFound, e.Message)
		}
	}
	return err
}

func (h *hookRemote) ReadSettings(ctx context.Context, relationID int, name string, app bool) (map[string]string, error) {
	out := map[string]string{}
	err := h.call(ctx, api.AgentReadSettings, api.AgentReadParams{Unit: h.u.cfg.Unit, RelationID: relationID, Owner: name, App: app}, &out)
	return out, err
}

func (h *hookRemote) IsLeader(ctx context.Context) (bool, error) { return h.u.leader.isLeader(ctx) }

func (h *hookRemote) UnitStatus(ctx context.Context) (api.Status, error) {
	var res api.AgentStatusResult
	err := h.call(ctx, api.AgentStatusGet, api.AgentUnitParams{Unit: h.u.cfg.Unit}, &res)
	return res.Unit, err
}

func (h *hookRemote) SetUnitStatus(ctx context.Context, st api.Status) error {
	h.statusSet = true
	return h.call(ctx, api.AgentSetStatus, api.AgentStatusParams{Unit: h.u.cfg.Unit, Kind: api.StatusKindWorkload, Status: st}, nil)
}

func (h *hookRemote) ApplicationStatus(ctx context.Context) (hookctx.ApplicationStatus, error) {
	var res api.AgentStatusResult
	if err := h.call(ctx, api.AgentStatusGet, api.AgentUnitParams{Unit: h.u.cfg.Unit, Application: true}, &res); err != nil {
		return hookctx.ApplicationStatus{}, err
	}
	out := hookctx.ApplicationStatus{Units: res.Units}
	if res.Application != nil {
		out.Application = *res.Application
	}
	return out, nil
}

func (h *hookRemote) SetApplicationStatus(ctx context.Context, st api.Status) error {
	return h.call(ctx, api.AgentSetStatus, api.AgentStatusParams{Unit: h.u.cfg.Unit, Kind: api.StatusKindApplication, Status: st}, nil)
}

func (h *hookRemote) SetWorkloadVersion(ctx context.Context, version string) error {
	return h.call(ctx, api.AgentSetWorkloadVersion, api.AgentUnitParams{Unit: h.u.cfg.Unit, Version: version}, nil)
}

func (h *hookRemote) LeaderSettings(ctx context.Context) (map[string]string, error) {
	out := map[string]string{}
	err := h.call(ctx, api.AgentLeaderSettings, api.AgentUnitParams{Unit: h.u.cfg.Unit}, &out)
	return out, err
}

// SetLeaderSettings is immediate: a commit of leader settings alone.
func (h *hookRemote) SetLeaderSettings(ctx context.Context, settings map[string]string) error {
	ch := splitSettings(-1, false, settings)
	return h.call(ctx, api.AgentCommitHook, api.AgentHookChanges{Unit: h.u.cfg.Unit, LeaderSettings: &ch}, nil)
}

// NetworkInfo answers for the local substrate: every binding is on the
// machine's address.
func (h *hookRemote) NetworkInfo(ctx context.Context, binding string, relationID int) (hookctx.NetworkInfo, error) {
	if binding != "" && !h.endpoints[binding] {
		return hookctx.NetworkInfo{}, fmt.Errorf("%w: binding %q", hookctx.ErrNotFound, binding)
	}
	return hookctx.NetworkInfo{
		BindAddresses: []hookctx.Interface{{InterfaceName: "lo", MACAddress: "",
			Addresses: []hookctx.Address{{Hostname: "", Value: h.address, CIDR: h.address + "/32"}}}},
		EgressSubnets:    []string{h.address + "/32"},
		IngressAddresses: []string{h.address},
	}, nil
}

func (h *hookRemote) GoalState(ctx context.Context) (hookctx.GoalState, error) {
	var gs api.GoalState
	if err := h.call(ctx, api.AgentGoalState, api.AgentUnitParams{Unit: h.u.cfg.Unit}, &gs); err != nil {
		return hookctx.GoalState{}, err
	}
	conv := func(in map[string]api.GoalStatus) map[string]hookctx.GoalStatus {
		out := make(map[string]hookctx.GoalStatus, len(in))
		for k, v := range in {
			since, _ := time.Parse("2006-01-02 15:04:05Z", v.Since)
			out[k] = hookctx.GoalStatus{Status: v.Status, Since: since}
		}
		return out
	}
	out := hookctx.GoalState{Units: conv(gs.Units), Relations: map[string]map[string]hookctx.GoalStatus{}}
	for ep, m := range gs.Relations {
		out.Relations[ep] = conv(m)
	}
	return out, nil
}

func (h *hookRemote) LogAction(ctx context.Context, message string) error {
	if h.taskID == "" {
		return hookctx.ErrNotInAction
	}
	return h.call(ctx, api.AgentLogTask, api.AgentTaskParams{Unit: h.u.cfg.Unit, ID: h.taskID, Message: message}, nil)
}

// splitSettings turns a net change (empty value: delete) into a wire change.
func splitSettings(relationID int, app bool, kv map[string]string) api.SettingsChange {
	ch := api.SettingsChange{RelationID: relationID, App: app}
	for k, v := range kv {
		if v == "" {
			ch.Unset = append(ch.Unset, k)
			continue
		}
		if ch.Set == nil {
			ch.Set = map[string]string{}
		}
		ch.Set[k] = v
	}
	return ch
}

// wireChanges converts a hook's flushed changes; base is the charm state
// the hook started from.
func wireChanges(unit string, c hookctx.Changes, base map[string]string) api.AgentHookChanges {
	out := api.AgentHookChanges{Unit: unit, OpenPorts: c.OpenPorts, ClosePorts: c.ClosePorts}
	for _, r := range c.Relations {
		if len(r.Unit) > 0 {
			out.Relations = append(out.Relations, splitSettings(r.ID, false, r.Unit))
		}
		if len(r.App) > 0 {
			out.Relations = append(out.Relations, splitSettings(r.ID, true, r.App))
		}
	}
	if c.StateChanged {
		out.StateSet = c.State
		for k := range base {
			if _, ok := c.State[k]; !ok {
				out.StateUnset = append(out.StateUnset, k)
			}
		}
	}
	return out
}
