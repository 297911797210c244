package state

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/spoke/internal/state/tables"
)

// RelationByID returns a relation, or nil.
func (r *reader) RelationByID(model string, id int) (*api.Relation, error) {
	return first[api.Relation](r, tables.Relations, "id", model, id)
}

// RelationByKey returns the relation with key "app:ep app2:ep2", or nil.
func (r *reader) RelationByKey(model, key string) (*api.Relation, error) {
	return first[api.Relation](r, tables.Relations, "key", model, key)
}

// ListRelations returns a model's relations, by ID.
func (r *reader) ListRelations(model string) ([]*api.Relation, error) {
	return list[api.Relation](r, tables.Relations, "model", model)
}

// RelationsByApplication returns the relations an application is in.
func (r *reader) RelationsByApplication(model, app string) ([]*api.Relation, error) {
	return list[api.Relation](r, tables.Relations, "application", model, app)
}

func (t *Txn) relation(model string, id int) (*api.Relation, error) {
	rel, err := t.RelationByID(model, id)
	if err != nil {
		return nil, err
	}
	if rel == nil {
		return nil, api.Errorf(api.CodeNotFound, "relation %d not found", id)
	}
	return rel, nil
}

func containerScoped(r *api.Relation) bool {
	for _, ep := range r.Endpoints {
		if ep.Scope == "container" {
			return true
		}
	}
	return false
}

func relationKey(eps []api.RelationEndpoint) string {
	parts := make([]string, len(eps))
	for i, ep := range eps {
		parts[i] = ep.Application + ":" + ep.Name
	}
	slices.Sort(parts)
	return strings.Join(parts, " ")
}

func isImplicit(ep api.Endpoint) bool {
	return ep.Name == jujuInfo.Name && ep.Interface == jujuInfo.Interface && ep.Role == api.RoleProvider
}

func counterpart(a, b string) bool {
	return (a == api.RoleProvider && b == api.RoleRequirer) || (a == api.RoleRequirer && b == api.RoleProvider)
}

// inferEndpoints resolves two "app[:endpoint]" specs the way Juju does:
// every provider/requirer pair with the same interface is a candidate; if
// there are several, implicit juju-info pairs are dropped; if still several
// the error lists them.
func (t *Txn) inferEndpoints(model string, specs [2]string) ([]api.RelationEndpoint, []*api.Application, error) {
	var apps []*api.Application
	var names []string
	for _, spec := range specs {
		app, ep, _ := strings.Cut(spec, ":")
		a, err := t.application(model, app)
		if err != nil {
			return nil, nil, err
		}
		apps = append(apps, a)
		names = append(names, ep)
	}
	if apps[0].Name == apps[1].Name {
		return nil, nil, api.Errorf(api.CodeInvalid, "cannot relate application %q to itself", apps[0].Name)
	}
	var cands [][]api.RelationEndpoint
	for _, e0 := range apps[0].Endpoints {
		if names[0] != "" && e0.Name != names[0] {
			continue
		}
		for _, e1 := range apps[1].Endpoints {
			if names[1] != "" && e1.Name != names[1] {
				continue
			}
			if e0.Interface == e1.Interface && counterpart(e0.Role, e1.Role) {
				cands = append(cands, []api.RelationEndpoint{
					{Application: apps[0].Name, Endpoint: e0}, {Application: apps[1].Name, Endpoint: e1}})
			}
		}
	}
	switch len(cands) {
	case 0:
		return nil, nil, api.Errorf(api.CodeInvalid, "no relations found between %q and %q", specs[0], specs[1])
	case 1:
		return cands[0], apps, nil
	}
	var explicit [][]api.RelationEndpoint
	for _, c := range cands {
		if !isImplicit(c[0].Endpoint) && !isImplicit(c[1].Endpoint) {
			explicit = append(explicit, c)
		}
	}
	if len(explicit) == 1 {
		return explicit[0], apps, nil
	}
	keys := make([]string, len(cands))
	for i, c := range cands {
		keys[i] = fmt.Sprintf("%q", relationKey(c))
	}
	slices.Sort(keys)
	return nil, nil, api.Errorf(api.CodeInvalid, "ambiguous relation: %q could refer to %s",
		specs[0]+" "+specs[1], strings.Join(keys, "; "))
}

// addRelation integrates two applications.
func addRelation(t *Txn, req *AddRelationRequest) (*api.Relation, error) {
	m, err := t.aliveModel(req.ModelUUID)
	if err != nil {
		return nil, err
	}
	eps, apps, err := t.inferEndpoints(m.UUID, req.Endpoints)
	if err != nil {
		return nil, err
	}
	for _, a := range apps {
		if a.Life != api.Alive {
			return nil, api.Errorf(api.CodeConflict, "application %q is %s", a.Name, a.Life)
		}
	}
	container := eps[0].Scope == "container" || eps[1].Scope == "container"
	if container {
		if !apps[0].Subordinate && !apps[1].Subordinate {
			return nil, api.Errorf(api.CodeInvalid,
				"cannot relate %q: container-scoped relations need a subordinate application", relationKey(eps))
		}
		eps[0].Scope, eps[1].Scope = "container", "container"
	}
	slices.SortFunc(eps, func(x, y api.RelationEndpoint) int {
		return strings.Compare(x.Application+":"+x.Name, y.Application+":"+y.Name)
	})
	key := relationKey(eps)
	if cur, err := t.RelationByKey(m.UUID, key); err != nil {
		return nil, err
	} else if cur != nil {
		return nil, api.Errorf(api.CodeAlreadyExists, "relation %q already exists", key)
	}
	m = copyModel(m)
	rel := &api.Relation{ModelUUID: m.UUID, ID: m.NextRelation, Key: key, Endpoints: eps, Life: api.Alive}
	m.NextRelation++
	if err := t.put(tables.Models, m); err != nil {
		return nil, err
	}
	if err := t.put(tables.Relations, rel); err != nil {
		return nil, err
	}
	if container {
		for i, a := range apps {
			if a.Subordinate {
				continue
			}
			if err := t.addSubordinateUnits(a, apps[1-i].Name, req.Now); err != nil {
				return nil, err
			}
		}
	}
	return rel, nil
}

// addSubordinateUnits gives every alive unit of principal a unit of sub.
func (t *Txn) addSubordinateUnits(principal *api.Application, sub string, now time.Time) error {
	units, err := t.UnitsByApplication(principal.ModelUUID, principal.Name)
	if err != nil {
		return err
	}
	for _, u := range units {
		if u.Life != api.Alive {
			continue
		}
		if err := t.ensureSubordinateUnit(sub, u, now); err != nil {
			return err
		}
	}
	return nil
}

// destroyRelation makes a relation dying; it goes once its scope is empty.
func destroyRelation(t *Txn, req *DestroyRelationRequest) error {
	if _, err := t.model(req.ModelUUID); err != nil {
		return err
	}
	var rel *api.Relation
	var err error
	if req.Endpoints[0] != "" {
		var eps []api.RelationEndpoint
		if eps, _, err = t.inferEndpoints(req.ModelUUID, req.Endpoints); err != nil {
			return err
		}
		key := relationKey(eps)
		if rel, err = t.RelationByKey(req.ModelUUID, key); err == nil && rel == nil {
			err = api.Errorf(api.CodeNotFound, "relation %q not found", key)
		}
	} else {
		rel, err = t.relation(req.ModelUUID, req.ID)
	}
	if err != nil {
		return err
	}
	if len(rel.Endpoints) == 1 {
		return api.Errorf(api.CodeInvalid, "cannot remove peer relation %q", rel.Key)
	}
	return t.destroyRel(rel)
}

func (t *Txn) destroyRel(rel *api.Relation) error {
	if rel.Life == api.Alive {
		rel = copyRelation(rel)
		rel.Life = api.Dying
		if err := t.put(tables.Relations, rel); err != nil {
			return err
		}
	}
	return t.maybeRemoveRelation(rel)
}

// maybeRemoveRelation removes a dying relation with an empty scope, with
// its data bags, then any dying application that was waiting for it.
func (t *Txn) maybeRemoveRelation(rel *api.Relation) error {
	if rel.Life == api.Alive {
		return nil
	}
	if s, err := t.txn.First(tables.RelationScopes, "relation", rel.ModelUUID, rel.ID); err != nil {
		return internalf("scope lookup: %v", err)
	} else if s != nil {
		return nil
	}
	if _, err := t.txn.DeleteAll(tables.RelationData, "relation", rel.ModelUUID, rel.ID); err != nil {
		return internalf("delete bags: %v", err)
	}
	if err := t.del(tables.Relations, rel); err != nil {
		return err
	}
	for _, ep := range rel.Endpoints {
		if err := t.maybeRemoveApplication(rel.ModelUUID, ep.Application); err != nil {
			return err
		}
	}
	return nil
}
