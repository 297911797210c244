package state

import (
	"maps"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/spoke/internal/state/tables"
)

// MaxBagSize bounds one relation data bag (keys plus values), as Juju does.
const MaxBagSize = 16 << 20

// ScopeMembers returns the units in a relation's scope, by unit name.
func (r *reader) ScopeMembers(model string, relID int) ([]*api.RelationScope, error) {
	return list[api.RelationScope](r, tables.RelationScopes, "relation", model, relID)
}

// RelationDataBag returns a unit's (app false) or an application's bag, or
// nil if it does not exist. A unit's bag is created when it enters scope
// (Version 0 if empty); an application's bag when the leader first writes
// it, so a missing app bag means change version 0.
func (r *reader) RelationDataBag(model string, relID int, owner string, app bool) (*api.RelationData, error) {
	return first[api.RelationData](r, tables.RelationData, "id", model, relID, app, owner)
}

// enterScope puts an alive unit of one of the relation's applications into
// its scope, creating the unit's bag if missing. Entering twice is a no-op.
func enterScope(t *Txn, req *EnterScopeRequest) error {
	rel, err := t.relation(req.ModelUUID, req.RelationID)
	if err != nil {
		return err
	}
	if rel.Life != api.Alive {
		return api.Errorf(api.CodeConflict, "relation %q is %s", rel.Key, rel.Life)
	}
	u, err := t.unit(req.ModelUUID, req.Unit)
	if err != nil {
		return err
	}
	if u.Life != api.Alive {
		return api.Errorf(api.CodeConflict, "unit %q is %s", u.Name, u.Life)
	}
	in := false
	for _, ep := range rel.Endpoints {
		in = in || ep.Application == u.Application
	}
	if !in {
		return api.Errorf(api.CodeInvalid, "unit %q is not part of relation %q", u.Name, rel.Key)
	}
	if u.Principal != "" && containerScoped(rel) {
		principalIn := false
		for _, ep := range rel.Endpoints {
			principalIn = principalIn || ep.Application == unitApp(u.Principal)
		}
		if !principalIn {
			return api.Errorf(api.CodeInvalid, "unit %q: relation %q is not with its principal", u.Name, rel.Key)
		}
	}
	if s, err := first[api.RelationScope](&t.reader, tables.RelationScopes, "id", rel.ModelUUID, rel.ID, u.Name); err != nil {
		return err
	} else if s == nil {
		s = &api.RelationScope{ModelUUID: rel.ModelUUID, RelationID: rel.ID, Unit: u.Name}
		if err := t.put(tables.RelationScopes, s); err != nil {
			return err
		}
	}
	_, err = t.writeBag(rel, u.Name, false, req.Settings, nil)
	return err
}

// leaveScope takes a unit out of a relation's scope; a dying relation left
// empty is removed.
func leaveScope(t *Txn, req *LeaveScopeRequest) error {
	s, err := first[api.RelationScope](&t.reader, tables.RelationScopes, "id", req.ModelUUID, req.RelationID, req.Unit)
	if err != nil {
		return err
	}
	if s == nil {
		return api.Errorf(api.CodeNotFound, "unit %q is not in relation %d", req.Unit, req.RelationID)
	}
	return t.dropScope(s)
}

func (t *Txn) dropScope(s *api.RelationScope) error {
	if err := t.del(tables.RelationScopes, s); err != nil {
		return err
	}
	rel, err := t.relation(s.ModelUUID, s.RelationID)
	if err != nil {
		return err
	}
	return t.maybeRemoveRelation(rel)
}

// setRelationData writes the writer's unit bag, or with App its
// application's bag, which needs the unit to hold the unexpired lease.
func setRelationData(t *Txn, req *SetRelationDataRequest) (*api.RelationData, error) {
	rel, err := t.relation(req.ModelUUID, req.RelationID)
	if err != nil {
		return nil, err
	}
	u, err := t.unit(req.ModelUUID, req.Unit)
	if err != nil {
		return nil, err
	}
	if s, err := first[api.RelationScope](&t.reader, tables.RelationScopes, "id", rel.ModelUUID, rel.ID, u.Name); err != nil {
		return nil, err
	} else if s == nil {
		return nil, api.Errorf(api.CodeConflict, "unit %q is not in the scope of relation %d", u.Name, rel.ID)
	}
	if err := checkSetUnset(req.Set, req.Unset); err != nil {
		return nil, err
	}
	owner := u.Name
	if req.App {
		owner = u.Application
		l, err := t.LeaseByApp(u.ModelUUID, u.Application)
		if err != nil {
			return nil, err
		}
		if l == nil || l.Holder != u.Name || !req.Now.Before(l.Expiry) {
			return nil, api.Errorf(api.CodeNotLeader, "cannot write relation settings: unit %q is not the leader of %q", u.Name, u.Application)
		}
	}
	return t.writeBag(rel, owner, req.App, req.Set, req.Unset)
}

// writeBag applies set (an empty value deletes, as relation-set does) and
// unset to a bag, creating it if missing; Version moves only on an
// effective change.
func (t *Txn) writeBag(rel *api.Relation, owner string, app bool, set map[string]string, unset []string) (*api.RelationData, error) {
	cur, err := t.RelationDataBag(rel.ModelUUID, rel.ID, owner, app)
	if err != nil {
		return nil, err
	}
	bag := &api.RelationData{ModelUUID: rel.ModelUUID, RelationID: rel.ID, Owner: owner, App: app,
		Settings: map[string]string{}}
	if cur != nil {
		bag = copyRelationData(cur)
	}
	before := maps.Clone(bag.Settings)
	for k, v := range set {
		if v == "" {
			delete(bag.Settings, k)
		} else {
			bag.Settings[k] = v
		}
	}
	for _, k := range unset {
		delete(bag.Settings, k)
	}
	size := 0
	for k, v := range bag.Settings {
		size += len(k) + len(v)
	}
	if size > MaxBagSize {
		return nil, api.Errorf(api.CodeTooLarge, "relation data bag of %q is %d bytes, over %d", owner, size, MaxBagSize)
	}
	changed := !maps.Equal(before, bag.Settings)
	if cur != nil && !changed {
		return cur, nil
	}
	if changed {
		bag.Version++
	}
	return bag, t.put(tables.RelationData, bag)
}
