package state

import (
	"maps"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/spoke/internal/state/tables"
)

// jujuInfo is the implicit provider endpoint every charm has.
var jujuInfo = api.Endpoint{Name: "juju-info", Role: api.RoleProvider, Interface: "juju-info", Scope: "global"}

// CharmBySHA returns a charm, or nil.
func (r *reader) CharmBySHA(sha string) (*api.Charm, error) {
	return first[api.Charm](r, tables.Charms, "id", sha)
}

// ListCharms returns every charm, by SHA256.
func (r *reader) ListCharms() ([]*api.Charm, error) {
	return list[api.Charm](r, tables.Charms, "id")
}

// ApplicationByName returns an application, or nil.
func (r *reader) ApplicationByName(model, name string) (*api.Application, error) {
	return first[api.Application](r, tables.Applications, "id", model, name)
}

// ListApplications returns a model's applications, by name.
func (r *reader) ListApplications(model string) ([]*api.Application, error) {
	return list[api.Application](r, tables.Applications, "model", model)
}

func (t *Txn) application(model, name string) (*api.Application, error) {
	a, err := t.ApplicationByName(model, name)
	if err != nil {
		return nil, err
	}
	if a == nil {
		return nil, api.Errorf(api.CodeNotFound, "application %q not found", name)
	}
	return a, nil
}

func (t *Txn) aliveApplication(model, name string) (*api.Application, error) {
	a, err := t.application(model, name)
	if err != nil {
		return nil, err
	}
	if a.Life != api.Alive {
		return nil, api.Errorf(api.CodeConflict, "application %q is %s", name, a.Life)
	}
	return a, nil
}

func (t *Txn) charm(sha string) (*api.Charm, error) {
	c, err := t.CharmBySHA(sha)
	if err != nil {
		return nil, err
	}
	if c == nil {
		return nil, api.Errorf(api.CodeNotFound, "charm %q not found", sha)
	}
	return c, nil
}

// charmEndpoints is the charm's endpoints plus the implicit juju-info.
func charmEndpoints(c *api.Charm) []api.Endpoint {
	eps := make([]api.Endpoint, 0, len(c.Endpoints)+1)
	implicit := true
	for _, ep := range c.Endpoints {
		if ep.Scope == "" {
			ep.Scope = "global"
		}
		eps = append(eps, ep)
		if ep.Name == jujuInfo.Name {
			implicit = false
		}
	}
	if implicit {
		eps = append(eps, jujuInfo)
	}
	return eps
}

// addCharm stores charm metadata; adding the same SHA256 again is a no-op.
func addCharm(t *Txn, req *AddCharmRequest) (*api.Charm, error) {
	c := req.Charm
	if len(c.SHA256) != 64 || c.Name == "" {
		return nil, api.Errorf(api.CodeInvalid, "charm needs a sha256 and a name")
	}
	for _, ep := range c.Endpoints {
		if ep.Name == "" || ep.Interface == "" {
			return nil, api.Errorf(api.CodeInvalid, "charm %q: endpoint needs a name and an interface", c.Name)
		}
		switch ep.Role {
		case api.RoleProvider, api.RoleRequirer, api.RolePeer:
		default:
			return nil, api.Errorf(api.CodeInvalid, "charm %q: endpoint %q has role %q", c.Name, ep.Name, ep.Role)
		}
	}
	if cur, err := t.CharmBySHA(c.SHA256); err != nil || cur != nil {
		return cur, err
	}
	c.Meta = api.Meta{}
	cc := copyCharm(&c)
	return cc, t.put(tables.Charms, cc)
}

// addApplication deploys a charm with its units, machines and peer relations.
func addApplication(t *Txn, req *AddApplicationRequest) (*AddApplicationResult, error) {
	m, err := t.aliveModel(req.ModelUUID)
	if err != nil {
		return nil, err
	}
	if err := validName("application", req.Name); err != nil {
		return nil, err
	}
	if a, err := t.ApplicationByName(m.UUID, req.Name); err != nil {
		return nil, err
	} else if a != nil {
		return nil, api.Errorf(api.CodeAlreadyExists, "application %q already exists", req.Name)
	}
	ch, err := t.charm(req.CharmSHA256)
	if err != nil {
		return nil, err
	}
	if req.NumUnits < 0 || len(req.Placement) > req.NumUnits {
		return nil, api.Errorf(api.CodeInvalid, "%d units with %d placements", req.NumUnits, len(req.Placement))
	}
	if ch.Subordinate && req.NumUnits > 0 {
		return nil, api.Errorf(api.CodeInvalid, "subordinate application %q is deployed without units", req.Name)
	}
	m = copyModel(m)
	a := &api.Application{
		ModelUUID: m.UUID, Name: req.Name, CharmSHA256: ch.SHA256, CharmName: ch.Name,
		Subordinate: ch.Subordinate, Endpoints: charmEndpoints(ch),
		Config: copyAnyMap(req.Config), Constraints: req.Constraints, Trust: req.Trust, Life: api.Alive,
		Base: req.OriginBase, Channel: req.Channel, Storage: maps.Clone(req.Storage),
		Status: api.Status{Status: "unknown", Since: req.Now},
	}
	if a.Config == nil {
		a.Config = map[string]any{}
	}
	res := &AddApplicationResult{Application: a}
	if err := t.addPeerRelations(m, a, res); err != nil {
		return nil, err
	}
	if err := t.createUnits(m, a, req.NumUnits, req.Placement, req.Base, req.Now, res); err != nil {
		return nil, err
	}
	if _, err := t.attachResources(a, req.Resources, req.Now); err != nil {
		return nil, err
	}
	if err := t.put(tables.Models, m); err != nil {
		return nil, err
	}
	return res, t.put(tables.Applications, a)
}

// addPeerRelations creates a relation for each peer endpoint of a that
// has none yet.
func (t *Txn) addPeerRelations(m *api.Model, a *api.Application, res *AddApplicationResult) error {
	for _, ep := range a.Endpoints {
		if ep.Role != api.RolePeer {
			continue
		}
		key := a.Name + ":" + ep.Name
		if r, err := t.RelationByKey(m.UUID, key); err != nil {
			return err
		} else if r != nil {
			continue
		}
		r := &api.Relation{ModelUUID: m.UUID, ID: m.NextRelation, Key: key, Life: api.Alive,
			Endpoints: []api.RelationEndpoint{{Application: a.Name, Endpoint: ep}}}
		m.NextRelation++
		if err := t.put(tables.Relations, r); err != nil {
			return err
		}
		if res != nil {
			res.Relations = append(res.Relations, r.ID)
		}
	}
	return nil
}

// setApplicationConfig sets and unsets application config.
func setApplicationConfig(t *Txn, req *SetApplicationConfigRequest) (*api.Application, error) {
	a, err := t.aliveApplication(req.ModelUUID, req.App)
	if err != nil {
		return nil, err
	}
	if err := checkSetUnset(req.Set, req.Unset); err != nil {
		return nil, err
	}
	a = copyApplication(a)
	a.Config = applyConfig(a.Config, req.Set, req.Unset)
	return a, t.put(tables.Applications, a)
}

// setCharm upgrades an application to another charm.
func setCharm(t *Txn, req *SetCharmRequest) (*api.Application, error) {
	a, err := t.aliveApplication(req.ModelUUID, req.App)
	if err != nil {
		return nil, err
	}
	ch, err := t.charm(req.CharmSHA256)
	if err != nil {
		return nil, err
	}
	if err := checkSetUnset(req.Set, req.Unset); err != nil {
		return nil, err
	}
	if ch.Subordinate != a.Subordinate {
		return nil, api.Errorf(api.CodeInvalid, "cannot refresh %q to charm %q: a subordinate cannot become a principal, nor a principal a subordinate", a.Name, ch.Name)
	}
	eps := charmEndpoints(ch)
	rels, err := t.RelationsByApplication(a.ModelUUID, a.Name)
	if err != nil {
		return nil, err
	}
	for _, r := range rels {
		for _, rep := range r.Endpoints {
			if rep.Application == a.Name && !hasEndpoint(eps, rep.Endpoint) {
				hint := "remove the relation first"
				if rep.Role == api.RolePeer {
					hint = "a peer relation stays while the application lives: the new charm must keep the endpoint"
				}
				return nil, api.Errorf(api.CodeConflict,
					"cannot refresh %q to charm %q: it has no endpoint %q, which relation %q uses (%s)", a.Name, ch.Name, rep.Name, r.Key, hint)
			}
		}
	}
	m, err := t.model(a.ModelUUID)
	if err != nil {
		return nil, err
	}
	m = copyModel(m)
	a = copyApplication(a)
	a.CharmSHA256, a.CharmName, a.Endpoints = ch.SHA256, ch.Name, eps
	a.CharmRevision++
	a.ForceCharmUpgrade = req.ForceUnits
	if len(req.Set) > 0 || len(req.Unset) > 0 {
		a.Config = applyConfig(a.Config, req.Set, req.Unset)
	}
	if err := t.addPeerRelations(m, a, nil); err != nil {
		return nil, err
	}
	if err := t.put(tables.Models, m); err != nil {
		return nil, err
	}
	return a, t.put(tables.Applications, a)
}

func hasEndpoint(eps []api.Endpoint, want api.Endpoint) bool {
	for _, ep := range eps {
		if ep.Name == want.Name && ep.Role == want.Role && ep.Interface == want.Interface {
			return true
		}
	}
	return false
}

// setTrust trusts an application, or no longer (its units run
// config-changed).
func setTrust(t *Txn, req *SetTrustRequest) (*api.Application, error) {
	a, err := t.aliveApplication(req.ModelUUID, req.App)
	if err != nil {
		return nil, err
	}
	a = copyApplication(a)
	a.Trust = req.Trust
	return a, t.put(tables.Applications, a)
}

// setExposed exposes or unexposes an application.
func setExposed(t *Txn, req *SetExposedRequest) (*api.Application, error) {
	a, err := t.aliveApplication(req.ModelUUID, req.App)
	if err != nil {
		return nil, err
	}
	a = copyApplication(a)
	a.Exposed = req.Exposed
	return a, t.put(tables.Applications, a)
}

// setConstraints sets an application's constraints.
func setConstraints(t *Txn, req *SetConstraintsRequest) (*api.Application, error) {
	a, err := t.aliveApplication(req.ModelUUID, req.App)
	if err != nil {
		return nil, err
	}
	a = copyApplication(a)
	a.Constraints = req.Constraints
	return a, t.put(tables.Applications, a)
}

// destroyApplication makes an application, its units and its relations dying.
func destroyApplication(t *Txn, req *DestroyApplicationRequest) error {
	a, err := t.application(req.ModelUUID, req.App)
	if err != nil {
		return err
	}
	return t.destroyApp(a, req.Force)
}

func (t *Txn) destroyApp(a *api.Application, force bool) error {
	if a.Life == api.Alive {
		a = copyApplication(a)
		a.Life = api.Dying
		if err := t.put(tables.Applications, a); err != nil {
			return err
		}
	}
	units, err := t.UnitsByApplication(a.ModelUUID, a.Name)
	if err != nil {
		return err
	}
	for _, u := range units {
		if err := t.destroyUnit(u, force); err != nil {
			return err
		}
	}
	rels, err := t.RelationsByApplication(a.ModelUUID, a.Name)
	if err != nil {
		return err
	}
	for _, r := range rels {
		if err := t.destroyRel(r); err != nil {
			return err
		}
	}
	return t.maybeRemoveApplication(a.ModelUUID, a.Name)
}

// maybeRemoveApplication removes a dying application once it has no units
// and no relations, together with its lease and status history.
func (t *Txn) maybeRemoveApplication(model, name string) error {
	a, err := t.ApplicationByName(model, name)
	if err != nil || a == nil || a.Life == api.Alive {
		return err
	}
	for _, tbl := range []string{tables.Units, tables.Relations} {
		if obj, err := t.txn.First(tbl, "application", model, name); err != nil {
			return internalf("%s lookup: %v", tbl, err)
		} else if obj != nil {
			return nil
		}
	}
	if l, err := t.LeaseByApp(model, name); err != nil {
		return err
	} else if l != nil {
		if err := t.del(tables.Leases, l); err != nil {
			return err
		}
	}
	if err := t.deleteHistory(model, name, api.StatusKindApplication); err != nil {
		return err
	}
	if _, err := t.txn.DeleteAll(tables.LeaderSettings, "id", model, name); err != nil {
		return internalf("delete leader settings: %v", err)
	}
	if _, err := t.txn.DeleteAll(tables.Resources, "application", model, name); err != nil {
		return internalf("delete resources: %v", err)
	}
	if err := t.del(tables.Applications, a); err != nil {
		return err
	}
	return t.settleDyingModel(model)
}

func applyConfig(cfg, set map[string]any, unset []string) map[string]any {
	if cfg == nil {
		cfg = map[string]any{}
	}
	for k, v := range set {
		cfg[k] = copyAny(v)
	}
	for _, k := range unset {
		delete(cfg, k)
	}
	return cfg
}
