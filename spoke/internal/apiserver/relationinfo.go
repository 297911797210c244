package apiserver

import (
	"maps"
	"net/http"
	"sort"
	"strings"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/spoke/internal/hubtrust"
	"github.com/droverhq/drover/spoke/internal/lookup"
	"github.com/droverhq/drover/spoke/internal/reply"
	"github.com/droverhq/drover/spoke/internal/state"
)

// unitRelationInfo answers show-unit's relation-info: each relation of the
// unit with the bags its hooks see. Relation data may hold credentials (a
// database password handed to its client), so, unlike Juju, which shows it
// to model readers, it needs write access: a writer can read it anyway, by
// refreshing an application to a charm that prints it.
func (s *unitEndpoint) unitRelationInfo(w http.ResponseWriter, r *http.Request) {
	if c := callerOf(r.Context()); c.Access != hubtrust.AccessWrite && c.Access != hubtrust.AccessAdmin && c.Access != hubtrust.AccessSuperuser {
		reply.WriteError(w, r, api.Errorf(api.CodeForbidden, "relation data needs write access to the model (%s access given)", c.Access))
		return
	}
	s.unitRead(w, r, func(snap *state.Snapshot, model, unit string) (any, error) { return relationInfo(snap, model, unit) })
}

func relationInfo(snap *state.Snapshot, model, name string) ([]api.UnitRelationInfo, error) {
	u, err := lookup.Unit(snap, model, name)
	if err != nil {
		return nil, err
	}
	rels, err := snap.RelationsByApplication(model, u.Application)
	if err != nil {
		return nil, err
	}
	bag := func(id int, owner string, app bool) (map[string]string, error) {
		b, err := snap.RelationDataBag(model, id, owner, app)
		if err != nil || b == nil {
			return map[string]string{}, err
		}
		return maps.Clone(b.Settings), nil
	}
	out := []api.UnitRelationInfo{}
	for _, rel := range rels {
		info := api.UnitRelationInfo{RelationID: rel.ID, RelatedUnits: map[string]api.UnitRelationData{}}
		other := u.Application
		for _, ep := range rel.Endpoints {
			if ep.Application == u.Application && info.Endpoint == "" {
				info.Endpoint = ep.Name
			} else {
				info.RelatedEndpoint, other = ep.Name, ep.Application
			}
		}
		if info.RelatedEndpoint == "" { // a peer relation
			info.RelatedEndpoint = info.Endpoint
		}
		if info.ApplicationData, err = bag(rel.ID, other, true); err != nil {
			return nil, err
		}
		members, err := snap.ScopeMembers(model, rel.ID)
		if err != nil {
			return nil, err
		}
		container := false
		for _, ep := range rel.Endpoints {
			container = container || ep.Scope == "container"
		}
		for _, m := range members {
			if container && m.Unit != u.Name {
				// A subordinate's relation with its principals: only the
				// units in the same container are related, as its hooks see.
				mu, err := lookup.Unit(snap, model, m.Unit)
				if err != nil || containerOf(mu) != containerOf(u) {
					continue
				}
			}
			data, err := bag(rel.ID, m.Unit, false)
			if err != nil {
				return nil, err
			}
			switch {
			case m.Unit == u.Name:
				info.LocalUnit = api.UnitRelationData{InScope: true, Data: data}
			case unitAppOf(m.Unit) == other:
				info.RelatedUnits[m.Unit] = api.UnitRelationData{InScope: true, Data: data}
			}
		}
		if !info.LocalUnit.InScope {
			if info.LocalUnit.Data, err = bag(rel.ID, u.Name, false); err != nil {
				return nil, err
			}
		}
		out = append(out, info)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].RelationID < out[j].RelationID })
	return out, nil
}

// containerOf names the container a unit runs in: its principal's name, or
// its own for a principal.
func containerOf(u *api.Unit) string {
	if u.Principal != "" {
		return u.Principal
	}
	return u.Name
}

// unitAppOf is the application of a unit name ("web" for "web/3").
func unitAppOf(unit string) string {
	app, _, _ := strings.Cut(unit, "/")
	return app
}
