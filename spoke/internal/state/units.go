package state

import (
	"slices"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/spoke/internal/state/tables"
)

// UnitByName returns a unit, or nil.
func (r *reader) UnitByName(model, name string) (*api.Unit, error) {
	return first[api.Unit](r, tables.Units, "id", model, name)
}

// ListUnits returns a model's units, by name.
func (r *reader) ListUnits(model string) ([]*api.Unit, error) {
	return list[api.Unit](r, tables.Units, "model", model)
}

// UnitsByApplication returns an application's units, by name.
func (r *reader) UnitsByApplication(model, app string) ([]*api.Unit, error) {
	return list[api.Unit](r, tables.Units, "application", model, app)
}

// UnitsByMachine returns the units on a machine, subordinates included.
func (r *reader) UnitsByMachine(model, machine string) ([]*api.Unit, error) {
	return list[api.Unit](r, tables.Units, "machine", model, machine)
}

// subordinatesOf returns the subordinate units of a principal unit.
func (t *Txn) subordinatesOf(model, principal string) ([]*api.Unit, error) {
	return list[api.Unit](&t.reader, tables.Units, "principal", model, principal)
}

func (t *Txn) unit(model, name string) (*api.Unit, error) {
	u, err := t.UnitByName(model, name)
	if err != nil {
		return nil, err
	}
	if u == nil {
		return nil, api.Errorf(api.CodeNotFound, "unit %q not found", name)
	}
	return u, nil
}

// createUnits creates n units of a (placement[i] places unit i), advancing
// the application's and the model's sequences in the given copies.
func (t *Txn) createUnits(m *api.Model, a *api.Application, n int, placement []string, base string,
	now time.Time, res *AddApplicationResult) error {
	for i := range n {
		p := ""
		if i < len(placement) {
			p = placement[i]
		}
		machine, err := t.placeUnit(m, a, p, base, res)
		if err != nil {
			return err
		}
		u := &api.Unit{
			ModelUUID: m.UUID, Name: unitName(a.Name, a.NextUnit), Application: a.Name,
			MachineID: machine, Life: api.Alive,
			WorkloadStatus: api.Status{Status: "waiting", Message: "waiting for machine", Since: now},
			AgentStatus:    api.Status{Status: "allocating", Since: now},
		}
		a.NextUnit++
		a.Scale++
		if err := t.put(tables.Units, u); err != nil {
			return err
		}
		res.Units = append(res.Units, u.Name)
		if err := t.addSubordinatesFor(u, now); err != nil {
			return err
		}
	}
	return nil
}

// addSubordinatesFor gives a principal unit one unit of every alive
// subordinate application it has a container-scoped relation with.
func (t *Txn) addSubordinatesFor(u *api.Unit, now time.Time) error {
	rels, err := t.RelationsByApplication(u.ModelUUID, u.Application)
	if err != nil {
		return err
	}
	for _, r := range rels {
		if r.Life != api.Alive || !containerScoped(r) {
			continue
		}
		for _, ep := range r.Endpoints {
			if ep.Application == u.Application {
				continue
			}
			if err := t.ensureSubordinateUnit(ep.Application, u, now); err != nil {
				return err
			}
		}
	}
	return nil
}

// ensureSubordinateUnit creates sub's unit next to principal unless it has one.
func (t *Txn) ensureSubordinateUnit(subApp string, principal *api.Unit, now time.Time) error {
	sub, err := t.ApplicationByName(principal.ModelUUID, subApp)
	if err != nil || sub == nil || !sub.Subordinate || sub.Life != api.Alive {
		return err
	}
	subs, err := t.subordinatesOf(principal.ModelUUID, principal.Name)
	if err != nil {
		return err
	}
	for _, s := range subs {
		if s.Application == subApp {
			return nil
		}
	}
	sub = copyApplication(sub)
	u := &api.Unit{
		ModelUUID: principal.ModelUUID, Name: unitName(sub.Name, sub.NextUnit), Application: sub.Name,
		MachineID: principal.MachineID, Principal: principal.Name, Life: api.Alive,
		WorkloadStatus: api.Status{Status: "waiting", Message: "agent initialising", Since: now},
		AgentStatus:    api.Status{Status: "allocating", Since: now},
	}
	sub.NextUnit++
	if err := t.put(tables.Applications, sub); err != nil {
		return err
	}
	return t.put(tables.Units, u)
}

// addUnits adds units to a principal application.
func addUnits(t *Txn, req *AddUnitsRequest) (*AddApplicationResult, error) {
	a, err := t.aliveApplication(req.ModelUUID, req.App)
	if err != nil {
		return nil, err
	}
	if a.Subordinate {
		return nil, api.Errorf(api.CodeInvalid, "cannot add units to subordinate application %q", a.Name)
	}
	if req.N < 1 || len(req.Placement) > req.N {
		return nil, api.Errorf(api.CodeInvalid, "%d units with %d placements", req.N, len(req.Placement))
	}
	m, err := t.aliveModel(req.ModelUUID)
	if err != nil {
		return nil, err
	}
	m, a = copyModel(m), copyApplication(a)
	res := &AddApplicationResult{Application: a}
	if err := t.createUnits(m, a, req.N, req.Placement, "", req.Now, res); err != nil {
		return nil, err
	}
	if err := t.put(tables.Models, m); err != nil {
		return nil, err
	}
	return res, t.put(tables.Applications, a)
}

// scaleApplication grows or shrinks a principal application to Scale units.
func scaleApplication(t *Txn, req *ScaleApplicationRequest) (*AddApplicationResult, error) {
	a, err := t.aliveApplication(req.ModelUUID, req.App)
	if err != nil {
		return nil, err
	}
	if a.Subordinate || req.Scale < 0 {
		return nil, api.Errorf(api.CodeInvalid, "cannot scale %q to %d", a.Name, req.Scale)
	}
	units, err := t.UnitsByApplication(a.ModelUUID, a.Name)
	if err != nil {
		return nil, err
	}
	alive := slices.DeleteFunc(slices.Clone(units), func(u *api.Unit) bool { return u.Life != api.Alive })
	slices.SortFunc(alive, func(x, y *api.Unit) int { return unitNumber(x.Name) - unitNumber(y.Name) })
	if req.Scale > len(alive) {
		res, err := addUnits(t, &AddUnitsRequest{ModelUUID: a.ModelUUID, App: a.Name, N: req.Scale - len(alive), Now: req.Now})
		if err != nil {
			return nil, err
		}
		res.Application.Scale = req.Scale
		return res, t.put(tables.Applications, res.Application)
	}
	for _, u := range alive[req.Scale:] {
		if err := t.destroyUnit(u, false); err != nil {
			return nil, err
		}
	}
	a = copyApplication(a)
	a.Scale = req.Scale
	return &AddApplicationResult{Application: a}, t.put(tables.Applications, a)
}

// destroyUnits makes principal units dying, or removes them with Force.
func destroyUnits(t *Txn, req *DestroyUnitsRequest) error {
	if len(req.Units) == 0 {
		return api.Errorf(api.CodeInvalid, "no units given")
	}
	var apps []string
	for _, name := range req.Units {
		u, err := t.unit(req.ModelUUID, name)
		if err != nil {
			return err
		}
		if u.Principal != "" {
			return api.Errorf(api.CodeInvalid, "unit %q is a subordinate: remove its relation instead", name)
		}
		if err := t.destroyUnit(u, req.Force); err != nil {
			return err
		}
		if !slices.Contains(apps, u.Application) {
			apps = append(apps, u.Application)
		}
	}
	for _, name := range apps {
		a, err := t.ApplicationByName(req.ModelUUID, name)
		if err != nil {
			return err
		}
		if a == nil || a.Life != api.Alive {
			continue
		}
		units, err := t.UnitsByApplication(req.ModelUUID, name)
		if err != nil {
			return err
		}
		a = copyApplication(a)
		a.Scale = 0
		for _, u := range units {
			if u.Life == api.Alive {
				a.Scale++
			}
		}
		if err := t.put(tables.Applications, a); err != nil {
			return err
		}
	}
	return nil
}

// destroyUnit makes u and its subordinates dying, or removes them at once.
func (t *Txn) destroyUnit(u *api.Unit, force bool) error {
	if force {
		return t.forceRemoveUnit(u)
	}
	if u.Life == api.Alive {
		u = copyUnit(u)
		u.Life = api.Dying
		if err := t.put(tables.Units, u); err != nil {
			return err
		}
	}
	subs, err := t.subordinatesOf(u.ModelUUID, u.Name)
	if err != nil {
		return err
	}
	for _, s := range subs {
		if err := t.destroyUnit(s, false); err != nil {
			return err
		}
	}
	return nil
}

// forceRemoveUnit removes a unit at once: its subordinates, its scopes (a
// dying relation left empty goes too), its data bags and its lease.
func (t *Txn) forceRemoveUnit(u *api.Unit) error {
	subs, err := t.subordinatesOf(u.ModelUUID, u.Name)
	if err != nil {
		return err
	}
	for _, s := range subs {
		if err := t.forceRemoveUnit(s); err != nil {
			return err
		}
	}
	scopes, err := list[api.RelationScope](&t.reader, tables.RelationScopes, "unit", u.ModelUUID, u.Name)
	if err != nil {
		return err
	}
	for _, s := range scopes {
		if err := t.dropScope(s); err != nil {
			return err
		}
	}
	return t.deleteUnit(u)
}

// ensureUnitDead marks a unit dead once it has left every scope and its
// subordinates are gone.
func ensureUnitDead(t *Txn, req *EnsureUnitDeadRequest) error {
	u, err := t.unit(req.ModelUUID, req.Unit)
	if err != nil {
		return err
	}
	if u.Life == api.Dead {
		return nil
	}
	if s, err := t.txn.First(tables.RelationScopes, "unit", u.ModelUUID, u.Name); err != nil {
		return internalf("scope lookup: %v", err)
	} else if s != nil {
		return api.Errorf(api.CodeConflict, "unit %q is still in relation %d", u.Name, s.(*api.RelationScope).RelationID)
	}
	if subs, err := t.subordinatesOf(u.ModelUUID, u.Name); err != nil {
		return err
	} else if len(subs) > 0 {
		return api.Errorf(api.CodeConflict, "unit %q still has subordinate %q", u.Name, subs[0].Name)
	}
	u = copyUnit(u)
	u.Life = api.Dead
	return t.put(tables.Units, u)
}

// removeUnit deletes a dead unit.
func removeUnit(t *Txn, req *RemoveUnitRequest) error {
	u, err := t.unit(req.ModelUUID, req.Unit)
	if err != nil {
		return err
	}
	if u.Life != api.Dead {
		return api.Errorf(api.CodeConflict, "unit %q is %s, not dead", u.Name, u.Life)
	}
	return t.deleteUnit(u)
}

// deleteUnit deletes a unit with its bags, lease, history, credential and
// charm state, then removes its application if that was waiting for it.
func (t *Txn) deleteUnit(u *api.Unit) error {
	if _, err := t.txn.DeleteAll(tables.RelationData, "owner", u.ModelUUID, u.Name); err != nil {
		return internalf("delete bags: %v", err)
	}
	if l, err := t.LeaseByApp(u.ModelUUID, u.Application); err != nil {
		return err
	} else if l != nil && l.Holder == u.Name {
		if err := t.del(tables.Leases, l); err != nil {
			return err
		}
	}
	for _, kind := range []string{api.StatusKindWorkload, api.StatusKindAgent} {
		if err := t.deleteHistory(u.ModelUUID, u.Name, kind); err != nil {
			return err
		}
	}
	if err := t.deleteCredential(unitTag(u.Name)); err != nil {
		return err
	}
	if _, err := t.txn.DeleteAll(tables.UnitState, "id", u.ModelUUID, u.Name); err != nil {
		return internalf("delete unit state: %v", err)
	}
	if err := t.del(tables.Units, u); err != nil {
		return err
	}
	if err := t.maybeRemoveApplication(u.ModelUUID, u.Application); err != nil {
		return err
	}
	// As in Juju, a machine its last unit left is released.
	if u.MachineID != "" {
		mc, err := t.MachineByID(u.ModelUUID, u.MachineID)
		if err != nil {
			return err
		}
		if err := t.retireMachine(mc); err != nil {
			return err
		}
	}
	return t.settleDyingModel(u.ModelUUID)
}
