package state

import (
	"maps"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/spoke/internal/state/tables"
)

// Charm state limits, as Juju's defaults: a key is at most 256 bytes, a
// value at most 64 KiB, and a unit's whole state at most 2 MiB.
const (
	MaxStateKeySize   = 256
	MaxStateValueSize = 64 << 10
	MaxStateSize      = 2 << 20
)

// UnitStateByName returns a unit's charm state, or nil if never written.
func (r *reader) UnitStateByName(model, unit string) (*tables.UnitCharmState, error) {
	return first[tables.UnitCharmState](r, tables.UnitState, "id", model, unit)
}

// LeaderSettingsByApp returns an application's leader settings, or nil if
// never written (version 0).
func (r *reader) LeaderSettingsByApp(model, app string) (*tables.AppLeaderSettings, error) {
	return first[tables.AppLeaderSettings](r, tables.LeaderSettings, "id", model, app)
}

// InScope reports whether unit is in relation relID's scope.
func (r *reader) InScope(model string, relID int, unit string) (bool, error) {
	s, err := first[api.RelationScope](r, tables.RelationScopes, "id", model, relID, unit)
	return s != nil, err
}

// checkLeader fails unless unit holds app's lease, unexpired at now.
func (t *Txn) checkLeader(model, app, unit string, now time.Time) error {
	l, err := t.LeaseByApp(model, app)
	if err != nil {
		return err
	}
	if l == nil || l.Holder != unit || !now.Before(l.Expiry) {
		return api.Errorf(api.CodeNotLeader, "unit %q is not the leader of %q", unit, app)
	}
	return nil
}

// commitHookChanges applies one hook's buffered writes in one transaction:
// any failure (a non-leader's app bag or leader settings, a relation the
// unit is not in, a limit) aborts all of them.
func commitHookChanges(t *Txn, req *CommitHookChangesRequest) error {
	c := &req.Changes
	u, err := t.unit(req.ModelUUID, c.Unit)
	if err != nil {
		return err
	}
	if u.Life == api.Dead {
		return api.Errorf(api.CodeConflict, "unit %q is dead", u.Name)
	}
	for _, rc := range c.Relations {
		if _, err := setRelationData(t, &SetRelationDataRequest{ModelUUID: u.ModelUUID, RelationID: rc.RelationID,
			Unit: u.Name, App: rc.App, Set: rc.Set, Unset: rc.Unset, Now: req.Now}); err != nil {
			return err
		}
	}
	if len(c.OpenPorts) > 0 || len(c.ClosePorts) > 0 {
		if _, err := setUnitPorts(t, &SetUnitPortsRequest{ModelUUID: u.ModelUUID, Unit: u.Name,
			Open: c.OpenPorts, Close: c.ClosePorts}); err != nil {
			return err
		}
	}
	if len(c.StateSet) > 0 || len(c.StateUnset) > 0 {
		if err := t.writeUnitState(u, c.StateSet, c.StateUnset); err != nil {
			return err
		}
	}
	if ls := c.LeaderSettings; ls != nil {
		if err := t.checkLeader(u.ModelUUID, u.Application, u.Name, req.Now); err != nil {
			return api.Errorf(api.CodeNotLeader, "cannot write leader settings: unit %q is not the leader of %q", u.Name, u.Application)
		}
		if err := t.writeLeaderSettings(u.ModelUUID, u.Application, ls.Set, ls.Unset); err != nil {
			return err
		}
	}
	return nil
}

func (t *Txn) writeUnitState(u *api.Unit, set map[string]string, unset []string) error {
	if err := checkSetUnset(set, unset); err != nil {
		return err
	}
	cur, err := t.UnitStateByName(u.ModelUUID, u.Name)
	if err != nil {
		return err
	}
	st := &tables.UnitCharmState{ModelUUID: u.ModelUUID, Unit: u.Name, State: map[string]string{}}
	if cur != nil {
		c := *cur
		c.State = maps.Clone(cur.State)
		st = &c
	}
	for k, v := range set {
		if len(k) > MaxStateKeySize {
			return api.Errorf(api.CodeTooLarge, "charm state key %.20q... is over %d bytes", k, MaxStateKeySize)
		}
		if len(v) > MaxStateValueSize {
			return api.Errorf(api.CodeTooLarge, "charm state value of %q is over %d bytes", k, MaxStateValueSize)
		}
		st.State[k] = v
	}
	for _, k := range unset {
		delete(st.State, k)
	}
	size := 0
	for k, v := range st.State {
		size += len(k) + len(v)
	}
	if size > MaxStateSize {
		return api.Errorf(api.CodeTooLarge, "charm state of %q is %d bytes, over %d", u.Name, size, MaxStateSize)
	}
	if cur != nil && maps.Equal(cur.State, st.State) {
		return nil
	}
	return t.put(tables.UnitState, st)
}

func (t *Txn) writeLeaderSettings(model, app string, set map[string]string, unset []string) error {
	if err := checkSetUnset(set, unset); err != nil {
		return err
	}
	cur, err := t.LeaderSettingsByApp(model, app)
	if err != nil {
		return err
	}
	ls := &tables.AppLeaderSettings{ModelUUID: model, Application: app, Settings: map[string]string{}}
	if cur != nil {
		c := *cur
		c.Settings = maps.Clone(cur.Settings)
		ls = &c
	}
	for k, v := range set {
		if v == "" {
			delete(ls.Settings, k) // leader-set k= deletes, as in Juju
		} else {
			ls.Settings[k] = v
		}
	}
	for _, k := range unset {
		delete(ls.Settings, k)
	}
	if cur != nil && maps.Equal(cur.Settings, ls.Settings) {
		return nil
	}
	ls.Version++
	return t.put(tables.LeaderSettings, ls)
}
