package state

import (
	"maps"
	"slices"

	"github.com/droverhq/drover/api"
)

// Stored objects are immutable: every write copies first. These helpers copy
// the maps and slices an object owns, so a copy shares nothing mutable.

func copyAny(v any) any {
	switch x := v.(type) {
	case map[string]any:
		return copyAnyMap(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = copyAny(e)
		}
		return out
	}
	return v
}

func copyAnyMap(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = copyAny(v)
	}
	return out
}

func copyStatus(s api.Status) api.Status {
	s.Data = copyAnyMap(s.Data)
	return s
}

func copyModel(m *api.Model) *api.Model {
	c := *m
	c.Config = copyAnyMap(m.Config)
	c.Status = copyStatus(m.Status)
	return &c
}

func copyCharm(ch *api.Charm) *api.Charm {
	c := *ch
	c.Endpoints = slices.Clone(ch.Endpoints)
	return &c
}

func copyApplication(a *api.Application) *api.Application {
	c := *a
	c.Endpoints = slices.Clone(a.Endpoints)
	c.Config = copyAnyMap(a.Config)
	c.Storage = maps.Clone(a.Storage)
	c.Status = copyStatus(a.Status)
	return &c
}

func copyPorts(ps []api.Port) []api.Port {
	if ps == nil {
		return nil
	}
	out := make([]api.Port, len(ps))
	for i, p := range ps {
		p.Endpoints = slices.Clone(p.Endpoints)
		out[i] = p
	}
	return out
}

func copyUnit(u *api.Unit) *api.Unit {
	c := *u
	c.WorkloadStatus = copyStatus(u.WorkloadStatus)
	c.AgentStatus = copyStatus(u.AgentStatus)
	c.OpenPorts = copyPorts(u.OpenPorts)
	return &c
}

func copyMachine(m *api.Machine) *api.Machine {
	c := *m
	c.Addresses = slices.Clone(m.Addresses)
	c.AgentStatus = copyStatus(m.AgentStatus)
	c.InstanceStatus = copyStatus(m.InstanceStatus)
	return &c
}

func copyRelation(r *api.Relation) *api.Relation {
	c := *r
	c.Endpoints = slices.Clone(r.Endpoints)
	return &c
}

func copyRelationData(d *api.RelationData) *api.RelationData {
	c := *d
	c.Settings = maps.Clone(d.Settings)
	return &c
}

func copyTask(t *api.Task) *api.Task {
	c := *t
	c.Params = copyAnyMap(t.Params)
	c.Results = copyAnyMap(t.Results)
	c.Log = slices.Clone(t.Log)
	return &c
}
