package format

import "github.com/droverhq/drover/api"

// Converters between the api structs the store keeps and their format
// types. Types with the same fields convert with a Go conversion, which the
// compiler rejects as soon as one side gains a field; the others are copied
// field by field, and TestFieldsCovered checks those. Maps and slices are
// shared, not copied: stored objects are immutable and decoded ones new.

// convertSlice converts each element, keeping nil apart from empty (JSON
// writes one as null and the other as []).
func convertSlice[A, B any](in []A, f func(A) B) []B {
	if in == nil {
		return nil
	}
	out := make([]B, len(in))
	for i, v := range in {
		out[i] = f(v)
	}
	return out
}

func toPort(p api.Port) Port             { return Port(p) }
func fromPort(p Port) api.Port           { return api.Port(p) }
func toEndpoint(e api.Endpoint) Endpoint { return Endpoint(e) }
func fromEndpoint(e Endpoint) api.Endpoint {
	return api.Endpoint(e)
}
func toSettingsChange(c api.SettingsChange) SettingsChange   { return SettingsChange(c) }
func fromSettingsChange(c SettingsChange) api.SettingsChange { return api.SettingsChange(c) }

// FromStatus converts a status.
func FromStatus(s api.Status) Status { return Status(s) }

// API converts a status back.
func (s Status) API() api.Status { return api.Status(s) }

// FromPorts converts port ranges.
func FromPorts(ps []api.Port) []Port { return convertSlice(ps, toPort) }

// APIPorts converts port ranges back.
func APIPorts(ps []Port) []api.Port { return convertSlice(ps, fromPort) }

// FromHubTrust converts a hub trust.
func FromHubTrust(t *api.HubTrust) *HubTrust {
	if t == nil {
		return nil
	}
	w := HubTrust(*t)
	return &w
}

// API converts a hub trust back.
func (t *HubTrust) API() *api.HubTrust {
	if t == nil {
		return nil
	}
	a := api.HubTrust(*t)
	return &a
}

// FromHookChanges converts a hook's changes.
func FromHookChanges(c api.AgentHookChanges) HookChanges {
	w := HookChanges{Unit: c.Unit, Relations: convertSlice(c.Relations, toSettingsChange),
		OpenPorts: FromPorts(c.OpenPorts), ClosePorts: FromPorts(c.ClosePorts),
		StateSet: c.StateSet, StateUnset: c.StateUnset}
	if c.LeaderSettings != nil {
		ls := SettingsChange(*c.LeaderSettings)
		w.LeaderSettings = &ls
	}
	return w
}

// API converts a hook's changes back.
func (c HookChanges) API() api.AgentHookChanges {
	a := api.AgentHookChanges{Unit: c.Unit, Relations: convertSlice(c.Relations, fromSettingsChange),
		OpenPorts: APIPorts(c.OpenPorts), ClosePorts: APIPorts(c.ClosePorts),
		StateSet: c.StateSet, StateUnset: c.StateUnset}
	if c.LeaderSettings != nil {
		ls := api.SettingsChange(*c.LeaderSettings)
		a.LeaderSettings = &ls
	}
	return a
}

// FromController converts the controller record.
func FromController(c *api.Controller) *Controller {
	return &Controller{UUID: c.UUID, Name: c.Name, CACert: c.CACert, Cloud: c.Cloud, Region: c.Region, Meta: Meta(c.Meta)}
}

// API converts the controller record back.
func (c *Controller) API() *api.Controller {
	return &api.Controller{UUID: c.UUID, Name: c.Name, CACert: c.CACert, Cloud: c.Cloud, Region: c.Region, Meta: api.Meta(c.Meta)}
}

// FromControllerNode converts a raft member.
func FromControllerNode(n *api.ControllerNode) *ControllerNode {
	return &ControllerNode{ID: n.ID, RaftAddr: n.RaftAddr, APIAddr: n.APIAddr, Voter: n.Voter, Meta: Meta(n.Meta)}
}

// API converts a raft member back.
func (n *ControllerNode) API() *api.ControllerNode {
	return &api.ControllerNode{ID: n.ID, RaftAddr: n.RaftAddr, APIAddr: n.APIAddr, Voter: n.Voter, Meta: api.Meta(n.Meta)}
}

// FromUser converts a user, leaving its password hash out.
func FromUser(u *api.User) *User {
	return &User{Name: u.Name, DisplayName: u.DisplayName, Access: u.Access, CreatedAt: u.CreatedAt,
		Disabled: u.Disabled, Meta: Meta(u.Meta)}
}

// API converts a user back, with passwordHash.
func (u *User) API(passwordHash string) *api.User {
	return &api.User{Name: u.Name, DisplayName: u.DisplayName, Access: u.Access, PasswordHash: passwordHash,
		CreatedAt: u.CreatedAt, Disabled: u.Disabled, Meta: api.Meta(u.Meta)}
}

// FromUserRecord converts a stored user to its snapshot record.
func FromUserRecord(u *api.User) *UserRecord {
	return &UserRecord{User: FromUser(u), PasswordHash: u.PasswordHash}
}

// FromCredential converts a credential.
func FromCredential(c *api.Credential) *Credential {
	return &Credential{Tag: c.Tag, ModelUUID: c.ModelUUID, Hash: c.Hash, Meta: Meta(c.Meta)}
}

// API converts a credential back.
func (c *Credential) API() *api.Credential {
	return &api.Credential{Tag: c.Tag, ModelUUID: c.ModelUUID, Hash: c.Hash, Meta: api.Meta(c.Meta)}
}

// FromModel converts a model. Model.Index is a hub's listing detail,
// never stored.
func FromModel(m *api.Model) *Model {
	return &Model{UUID: m.UUID, Name: m.Name, Owner: m.Owner, Life: Life(m.Life), Config: m.Config,
		Status: Status(m.Status), CreatedAt: m.CreatedAt, NextMachine: m.NextMachine,
		NextRelation: m.NextRelation, NextTask: m.NextTask, Constraints: m.Constraints,
		Migration: fromModelMigration(m.Migration), ImportedBy: m.ImportedBy, Meta: Meta(m.Meta)}
}

// API converts a model back.
func (m *Model) API() *api.Model {
	return &api.Model{UUID: m.UUID, Name: m.Name, Owner: m.Owner, Life: api.Life(m.Life), Config: m.Config,
		Status: api.Status(m.Status), CreatedAt: m.CreatedAt, NextMachine: m.NextMachine,
		NextRelation: m.NextRelation, NextTask: m.NextTask, Constraints: m.Constraints,
		Migration: m.Migration.api(), ImportedBy: m.ImportedBy, Meta: api.Meta(m.Meta)}
}

func fromModelMigration(m *api.ModelMigration) *ModelMigration {
	if m == nil {
		return nil
	}
	f := &ModelMigration{ID: m.ID, Role: m.Role, Since: m.Since, Phase: m.Phase,
		Target: (*TargetController)(m.Target)}
	if m.Minions != nil {
		f.Minions = make(map[string]MinionReport, len(m.Minions))
		for k, v := range m.Minions {
			f.Minions[k] = MinionReport(v)
		}
	}
	return f
}

func (m *ModelMigration) api() *api.ModelMigration {
	if m == nil {
		return nil
	}
	a := &api.ModelMigration{ID: m.ID, Role: m.Role, Since: m.Since, Phase: m.Phase,
		Target: (*api.TargetController)(m.Target)}
	if m.Minions != nil {
		a.Minions = make(map[string]api.MinionReport, len(m.Minions))
		for k, v := range m.Minions {
			a.Minions[k] = api.MinionReport(v)
		}
	}
	return a
}

// FromCharm converts a charm.
func FromCharm(c *api.Charm) *Charm {
	return &Charm{SHA256: c.SHA256, Name: c.Name, Size: c.Size, Subordinate: c.Subordinate,
		Endpoints: convertSlice(c.Endpoints, toEndpoint), MetadataYAML: c.MetadataYAML,
		ConfigYAML: c.ConfigYAML, ActionsYAML: c.ActionsYAML, Meta: Meta(c.Meta)}
}

// API converts a charm back.
func (c *Charm) API() *api.Charm {
	return &api.Charm{SHA256: c.SHA256, Name: c.Name, Size: c.Size, Subordinate: c.Subordinate,
		Endpoints: convertSlice(c.Endpoints, fromEndpoint), MetadataYAML: c.MetadataYAML,
		ConfigYAML: c.ConfigYAML, ActionsYAML: c.ActionsYAML, Meta: api.Meta(c.Meta)}
}

// FromApplication converts an application.
func FromApplication(a *api.Application) *Application {
	return &Application{ModelUUID: a.ModelUUID, Name: a.Name, CharmSHA256: a.CharmSHA256,
		CharmName: a.CharmName, CharmRevision: a.CharmRevision, ForceCharmUpgrade: a.ForceCharmUpgrade,
		Subordinate: a.Subordinate, Endpoints: convertSlice(a.Endpoints, toEndpoint), Config: a.Config,
		Constraints: a.Constraints, Exposed: a.Exposed, Trust: a.Trust, Base: a.Base, Channel: a.Channel,
		Storage: a.Storage, CharmModifiedVersion: a.CharmModifiedVersion, Scale: a.Scale, Life: Life(a.Life),
		Status: Status(a.Status), WorkloadVersion: a.WorkloadVersion, NextUnit: a.NextUnit, Meta: Meta(a.Meta)}
}

// API converts an application back.
func (a *Application) API() *api.Application {
	return &api.Application{ModelUUID: a.ModelUUID, Name: a.Name, CharmSHA256: a.CharmSHA256,
		CharmName: a.CharmName, CharmRevision: a.CharmRevision, ForceCharmUpgrade: a.ForceCharmUpgrade,
		Subordinate: a.Subordinate, Endpoints: convertSlice(a.Endpoints, fromEndpoint), Config: a.Config,
		Constraints: a.Constraints, Exposed: a.Exposed, Trust: a.Trust, Base: a.Base, Channel: a.Channel,
		Storage: a.Storage, CharmModifiedVersion: a.CharmModifiedVersion, Scale: a.Scale, Life: api.Life(a.Life),
		Status: api.Status(a.Status), WorkloadVersion: a.WorkloadVersion, NextUnit: a.NextUnit, Meta: api.Meta(a.Meta)}
}

// FromUnit converts a unit.
func FromUnit(u *api.Unit) *Unit {
	return &Unit{ModelUUID: u.ModelUUID, Name: u.Name, Application: u.Application, MachineID: u.MachineID,
		Principal: u.Principal, Life: Life(u.Life), WorkloadStatus: Status(u.WorkloadStatus),
		AgentStatus: Status(u.AgentStatus), WorkloadVersion: u.WorkloadVersion, OpenPorts: FromPorts(u.OpenPorts),
		Resolved: u.Resolved, RetryVersion: u.RetryVersion, Meta: Meta(u.Meta)}
}

// API converts a unit back.
func (u *Unit) API() *api.Unit {
	return &api.Unit{ModelUUID: u.ModelUUID, Name: u.Name, Application: u.Application, MachineID: u.MachineID,
		Principal: u.Principal, Life: api.Life(u.Life), WorkloadStatus: api.Status(u.WorkloadStatus),
		AgentStatus: api.Status(u.AgentStatus), WorkloadVersion: u.WorkloadVersion, OpenPorts: APIPorts(u.OpenPorts),
		Resolved: u.Resolved, RetryVersion: u.RetryVersion, Meta: api.Meta(u.Meta)}
}

// FromMachine converts a machine.
func FromMachine(m *api.Machine) *Machine {
	return &Machine{ModelUUID: m.ModelUUID, ID: m.ID, ProviderID: m.ProviderID, Addresses: m.Addresses,
		Base: m.Base, Constraints: m.Constraints, Area: m.Area, Life: Life(m.Life), AgentStatus: Status(m.AgentStatus),
		InstanceStatus: Status(m.InstanceStatus), Meta: Meta(m.Meta)}
}

// API converts a machine back.
func (m *Machine) API() *api.Machine {
	return &api.Machine{ModelUUID: m.ModelUUID, ID: m.ID, ProviderID: m.ProviderID, Addresses: m.Addresses,
		Base: m.Base, Constraints: m.Constraints, Area: m.Area, Life: api.Life(m.Life), AgentStatus: api.Status(m.AgentStatus),
		InstanceStatus: api.Status(m.InstanceStatus), Meta: api.Meta(m.Meta)}
}

func toRelationEndpoint(e api.RelationEndpoint) RelationEndpoint {
	return RelationEndpoint{Application: e.Application, Endpoint: Endpoint(e.Endpoint)}
}

func fromRelationEndpoint(e RelationEndpoint) api.RelationEndpoint {
	return api.RelationEndpoint{Application: e.Application, Endpoint: api.Endpoint(e.Endpoint)}
}

// FromRelation converts a relation.
func FromRelation(r *api.Relation) *Relation {
	return &Relation{ModelUUID: r.ModelUUID, ID: r.ID, Key: r.Key,
		Endpoints: convertSlice(r.Endpoints, toRelationEndpoint), Life: Life(r.Life), Meta: Meta(r.Meta)}
}

// API converts a relation back.
func (r *Relation) API() *api.Relation {
	return &api.Relation{ModelUUID: r.ModelUUID, ID: r.ID, Key: r.Key,
		Endpoints: convertSlice(r.Endpoints, fromRelationEndpoint), Life: api.Life(r.Life), Meta: api.Meta(r.Meta)}
}

// FromRelationScope converts a scope membership.
func FromRelationScope(s *api.RelationScope) *RelationScope {
	return &RelationScope{ModelUUID: s.ModelUUID, RelationID: s.RelationID, Unit: s.Unit, Meta: Meta(s.Meta)}
}

// API converts a scope membership back.
func (s *RelationScope) API() *api.RelationScope {
	return &api.RelationScope{ModelUUID: s.ModelUUID, RelationID: s.RelationID, Unit: s.Unit, Meta: api.Meta(s.Meta)}
}

// FromRelationData converts a data bag.
func FromRelationData(d *api.RelationData) *RelationData {
	return &RelationData{ModelUUID: d.ModelUUID, RelationID: d.RelationID, Owner: d.Owner, App: d.App,
		Settings: d.Settings, Version: d.Version, Meta: Meta(d.Meta)}
}

// API converts a data bag back.
func (d *RelationData) API() *api.RelationData {
	return &api.RelationData{ModelUUID: d.ModelUUID, RelationID: d.RelationID, Owner: d.Owner, App: d.App,
		Settings: d.Settings, Version: d.Version, Meta: api.Meta(d.Meta)}
}

// FromLease converts a lease.
func FromLease(l *api.Lease) *Lease {
	return &Lease{ModelUUID: l.ModelUUID, Application: l.Application, Holder: l.Holder, Start: l.Start,
		Expiry: l.Expiry, Term: l.Term, Meta: Meta(l.Meta)}
}

// API converts a lease back.
func (l *Lease) API() *api.Lease {
	return &api.Lease{ModelUUID: l.ModelUUID, Application: l.Application, Holder: l.Holder, Start: l.Start,
		Expiry: l.Expiry, Term: l.Term, Meta: api.Meta(l.Meta)}
}

// FromTask converts a task.
func FromTask(t *api.Task) *Task {
	return &Task{ModelUUID: t.ModelUUID, ID: t.ID, Receiver: t.Receiver, Action: t.Action, Params: t.Params,
		Parallel: t.Parallel, ExecutionGroup: t.ExecutionGroup, Operation: t.Operation, Status: t.Status, Message: t.Message,
		Results: t.Results, Log: convertSlice(t.Log, func(l api.TaskLog) TaskLog { return TaskLog(l) }),
		Enqueued: t.Enqueued, Started: t.Started, Completed: t.Completed, Meta: Meta(t.Meta)}
}

// API converts a task back.
func (t *Task) API() *api.Task {
	return &api.Task{ModelUUID: t.ModelUUID, ID: t.ID, Receiver: t.Receiver, Action: t.Action, Params: t.Params,
		Parallel: t.Parallel, ExecutionGroup: t.ExecutionGroup, Operation: t.Operation, Status: t.Status, Message: t.Message,
		Results: t.Results, Log: convertSlice(t.Log, func(l TaskLog) api.TaskLog { return api.TaskLog(l) }),
		Enqueued: t.Enqueued, Started: t.Started, Completed: t.Completed, Meta: api.Meta(t.Meta)}
}

// FromStatusHistoryEntry converts a status history entry.
func FromStatusHistoryEntry(e *api.StatusHistoryEntry) *StatusHistoryEntry {
	return &StatusHistoryEntry{ModelUUID: e.ModelUUID, Entity: e.Entity, Kind: e.Kind, Seq: e.Seq, Status: Status(e.Status)}
}

// API converts a status history entry back.
func (e *StatusHistoryEntry) API() *api.StatusHistoryEntry {
	return &api.StatusHistoryEntry{ModelUUID: e.ModelUUID, Entity: e.Entity, Kind: e.Kind, Seq: e.Seq, Status: api.Status(e.Status)}
}

// FromResource converts a resource.
func FromResource(r *api.Resource) *Resource {
	return &Resource{ModelUUID: r.ModelUUID, Application: r.Application, Name: r.Name, Type: r.Type, Path: r.Path,
		Revision: r.Revision, SHA256: r.SHA256, Size: r.Size, Origin: r.Origin, Uploaded: r.Uploaded, Meta: Meta(r.Meta)}
}

// API converts a resource back.
func (r *Resource) API() *api.Resource {
	return &api.Resource{ModelUUID: r.ModelUUID, Application: r.Application, Name: r.Name, Type: r.Type, Path: r.Path,
		Revision: r.Revision, SHA256: r.SHA256, Size: r.Size, Origin: r.Origin, Uploaded: r.Uploaded, Meta: api.Meta(r.Meta)}
}
