// Package status builds a model's full status from one store snapshot,
// shaped like `juju status --format json`, and the ETag that lets a
// client revalidate its copy. It is pure: no clock (the caller passes
// Now in Context), no network, no HTTP; it reads only what
// state.StatusRevision covers.
package status

import (
	"cmp"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/spoke/internal/state"
)

// Context is what a status needs beyond the store: who answers, and
// the time (leases are judged against Now; nothing reads a clock here).
type Context struct {
	ControllerName string
	Cloud          string // "localhost" when empty
	Region         string
	Version        string
	Now            time.Time
}

// Juju's time formats for status output.
const (
	sinceFormat     = "02 Jan 2006 15:04:05Z07:00"
	timestampFormat = "15:04:05Z07:00"
)

// workloadSeverity ranks workload statuses as Juju does when it derives an
// application's status from its units: the most significant one wins.
var workloadSeverity = map[string]int{
	"error":       100,
	"blocked":     90,
	"maintenance": 80,
	"waiting":     70,
	"active":      60,
	"terminated":  50,
	"unknown":     40,
}

// Build assembles a model's status from one snapshot, shaped like
// `juju status --format json`. It reads the model, its machines, units,
// applications, relations, relation scopes and leases, and the controller
// record (Context): what state.StatusRevision covers, so a status
// ETag (tag.go) stays true. Read anything else here and the
// revision must cover it too.
func Build(snap *state.Snapshot, modelUUID string, ctl Context) (*api.FullStatus, error) {
	st, _, err := build(snap, modelUUID, ctl)
	return st, err
}

// build is Build, and also the time until which the status
// stays what it is if nothing is written: the earliest expiry of a lease
// it shows held, or ctl.Now when a lease's holder outlived its expiry
// (a claim may extend it without a new status revision: see
// state.StatusRevision). Zero when no lease has a holder.
func build(snap *state.Snapshot, modelUUID string, ctl Context) (*api.FullStatus, time.Time, error) {
	m, err := snap.ModelByUUID(modelUUID)
	if err != nil {
		return nil, time.Time{}, err
	}
	if m == nil {
		return nil, time.Time{}, api.Errorf(api.CodeNotFound, "model %q not found", modelUUID)
	}
	idx, err := snap.LatestIndex()
	if err != nil {
		return nil, time.Time{}, err
	}
	machines, err := snap.ListMachines(modelUUID)
	if err != nil {
		return nil, time.Time{}, err
	}
	units, err := snap.ListUnits(modelUUID)
	if err != nil {
		return nil, time.Time{}, err
	}
	apps, err := snap.ListApplications(modelUUID)
	if err != nil {
		return nil, time.Time{}, err
	}
	rels, err := snap.ListRelations(modelUUID)
	if err != nil {
		return nil, time.Time{}, err
	}
	b := &statusBuilder{snap: snap, model: modelUUID, ctl: ctl,
		machines: make(map[string]*api.Machine, len(machines))}
	for _, mc := range machines {
		b.machines[mc.ID] = mc
	}
	out := &api.FullStatus{
		Model:        b.modelStatus(m),
		Machines:     make(map[string]api.MachineStatus, len(machines)),
		Applications: make(map[string]api.ApplicationStatus, len(apps)),
		Controller:   api.ControllerStatus{Name: ctl.ControllerName, Timestamp: formatTimestamp(ctl.Now)},
		Index:        idx,
	}
	for _, mc := range machines {
		out.Machines[mc.ID] = machineStatus(mc)
	}
	byApp := make(map[string][]*api.Unit)
	for _, u := range units {
		byApp[u.Application] = append(byApp[u.Application], u)
	}
	subsOf := make(map[string][]*api.Unit)
	for _, u := range units {
		if u.Principal != "" {
			subsOf[u.Principal] = append(subsOf[u.Principal], u)
		}
	}
	for _, a := range apps {
		as, err := b.applicationStatus(a, byApp[a.Name], subsOf, rels)
		if err != nil {
			return nil, time.Time{}, err
		}
		out.Applications[a.Name] = as
	}
	for _, r := range rels {
		rs, err := b.relationStatus(r)
		if err != nil {
			return nil, time.Time{}, err
		}
		out.Relations = append(out.Relations, rs)
	}
	slices.SortFunc(out.Relations, func(x, y api.RelationStatus) int { return cmp.Compare(x.ID, y.ID) })
	return out, b.until, nil
}

type statusBuilder struct {
	snap     *state.Snapshot
	model    string
	ctl      Context
	machines map[string]*api.Machine
	until    time.Time // build's
}

// lease reads an application's lease and notes how long what the status
// shows of it stays true (build).
func (b *statusBuilder) lease(app string) (*api.Lease, error) {
	l, err := b.snap.LeaseByApp(b.model, app)
	if err != nil || l == nil || l.Holder == "" {
		return l, err
	}
	t := b.ctl.Now
	if t.Before(l.Expiry) {
		t = l.Expiry
	}
	if b.until.IsZero() || t.Before(b.until) {
		b.until = t
	}
	return l, nil
}

func (b *statusBuilder) modelStatus(m *api.Model) api.ModelStatus {
	cloud := b.ctl.Cloud
	if cloud == "" {
		cloud = "localhost"
	}
	st := detail(m.Status)
	if st.Current == "" {
		st.Current = "available"
	}
	ms := api.ModelStatus{
		Name: m.Name, UUID: m.UUID, Type: "iaas", Controller: b.ctl.ControllerName,
		Cloud: cloud, Region: b.ctl.Region, Version: b.ctl.Version, Status: st,
	}
	if m.Life != api.Alive {
		ms.Life = m.Life
	}
	return ms
}

func machineStatus(mc *api.Machine) api.MachineStatus {
	ms := api.MachineStatus{
		JujuStatus:    detail(mc.AgentStatus),
		MachineStatus: detail(mc.InstanceStatus),
		InstanceID:    mc.ProviderID,
		Constraints:   mc.Constraints,
	}
	if ms.InstanceID == "" {
		ms.InstanceID = "pending"
	}
	if mc.Life != api.Alive {
		ms.JujuStatus.Life = string(mc.Life)
	}
	if len(mc.Addresses) > 0 {
		ms.DNSName = mc.Addresses[0]
	}
	for _, a := range mc.Addresses {
		if net.ParseIP(a) != nil {
			ms.IPAddresses = append(ms.IPAddresses, a)
		}
	}
	if mc.Base != "" {
		name, channel, _ := strings.Cut(mc.Base, "@")
		ms.Base = &api.BaseStatus{Name: name, Channel: channel}
	}
	return ms
}

// applicationBase is the base of the first of units (by name) whose
// machine's base is known: Juju shows an application's base, and a
// Drover application runs on the bases of its machines.
func (b *statusBuilder) applicationBase(units []*api.Unit) *api.BaseStatus {
	sorted := slices.Clone(units)
	slices.SortFunc(sorted, func(x, y *api.Unit) int { return strings.Compare(x.Name, y.Name) })
	for _, u := range sorted {
		if mc := b.machines[u.MachineID]; mc != nil && mc.Base != "" {
			return machineStatus(mc).Base
		}
	}
	return nil
}

func (b *statusBuilder) applicationStatus(a *api.Application, units []*api.Unit,
	subsOf map[string][]*api.Unit, rels []*api.Relation) (api.ApplicationStatus, error) {
	as := api.ApplicationStatus{
		Charm: a.CharmName, CharmOrigin: "local", CharmName: a.CharmName, CharmRev: a.CharmRevision,
		CharmSHA256: a.CharmSHA256, Exposed: a.Exposed, Version: a.WorkloadVersion,
		ApplicationStat:  b.appStatusDetail(a, units),
		Relations:        map[string][]api.RelatedApplication{},
		EndpointBindings: map[string]string{"": "alpha"},
	}
	if a.Life != api.Alive {
		as.Life = string(a.Life)
	}
	for _, ep := range a.Endpoints {
		as.EndpointBindings[ep.Name] = "alpha"
	}
	for _, r := range rels {
		for _, ep := range r.Endpoints {
			if ep.Application != a.Name {
				continue
			}
			for _, other := range r.Endpoints {
				if other.Application == a.Name && len(r.Endpoints) > 1 {
					continue
				}
				ra := api.RelatedApplication{RelatedApplication: other.Application, Interface: ep.Interface, Scope: cmp.Or(ep.Scope, "global")}
				if !slices.Contains(as.Relations[ep.Name], ra) {
					as.Relations[ep.Name] = append(as.Relations[ep.Name], ra)
				}
				if a.Subordinate && ep.Scope == "container" && other.Application != a.Name {
					as.SubordinateTo = appendUnique(as.SubordinateTo, other.Application)
				}
			}
		}
	}
	for k := range as.Relations {
		slices.SortFunc(as.Relations[k], func(x, y api.RelatedApplication) int {
			return strings.Compare(x.RelatedApplication, y.RelatedApplication)
		})
	}
	as.Base = b.applicationBase(units)
	slices.Sort(as.SubordinateTo)
	if len(as.Relations) == 0 {
		as.Relations = nil
	}
	lease, err := b.lease(a.Name)
	if err != nil {
		return as, err
	}
	for _, u := range units {
		if as.Version == "" {
			as.Version = u.WorkloadVersion
		}
		if u.Principal != "" {
			continue // nested under its principal instead
		}
		us, err := b.unitStatus(u, lease, subsOf)
		if err != nil {
			return as, err
		}
		if as.Units == nil {
			as.Units = map[string]api.UnitStatus{}
		}
		as.Units[u.Name] = us
	}
	return as, nil
}

// appStatusDetail is the application's own status, or, while none was set
// (still "unknown"), the most significant workload status of its units.
func (b *statusBuilder) appStatusDetail(a *api.Application, units []*api.Unit) api.StatusDetail {
	if a.Status.Status != "" && a.Status.Status != "unknown" {
		return detail(a.Status)
	}
	st := a.Status
	if st.Status == "" {
		st.Status = "unknown"
	}
	for _, u := range units {
		if w := unitWorkload(u); workloadSeverity[w.Status] > workloadSeverity[st.Status] {
			st = w
		}
	}
	return detail(st)
}

// unitWorkload is a unit's workload status as status shows it: a unit
// whose agent is in error (a failed hook) shows the agent's error as its
// workload status, as Juju does (its agent then shows idle).
func unitWorkload(u *api.Unit) api.Status {
	if u.AgentStatus.Status == "error" {
		return u.AgentStatus
	}
	return u.WorkloadStatus
}

func (b *statusBuilder) unitStatus(u *api.Unit, lease *api.Lease, subsOf map[string][]*api.Unit) (api.UnitStatus, error) {
	agent := u.AgentStatus
	if agent.Status == "error" { // shown as the workload's (unitWorkload)
		agent = api.Status{Status: "idle", Since: agent.Since}
	}
	us := api.UnitStatus{
		WorkloadStatus: detail(unitWorkload(u)),
		JujuStatus:     detail(agent),
		Machine:        u.MachineID,
		Leader:         lease != nil && lease.Holder == u.Name && b.ctl.Now.Before(lease.Expiry),
		OpenPorts:      formatPorts(u.OpenPorts),
	}
	if u.Life != api.Alive {
		us.JujuStatus.Life = string(u.Life)
	}
	if mc := b.machines[u.MachineID]; mc != nil && len(mc.Addresses) > 0 {
		us.PublicAddress = mc.Addresses[0]
	}
	for _, s := range subsOf[u.Name] {
		subLease, err := b.lease(s.Application)
		if err != nil {
			return us, err
		}
		ss, err := b.unitStatus(s, subLease, subsOf)
		if err != nil {
			return us, err
		}
		if us.Subordinates == nil {
			us.Subordinates = map[string]api.UnitStatus{}
		}
		us.Subordinates[s.Name] = ss
	}
	return us, nil
}

func (b *statusBuilder) relationStatus(r *api.Relation) (api.RelationStatus, error) {
	rs := api.RelationStatus{ID: r.ID, Type: "regular", Status: "joined"}
	for _, ep := range r.Endpoints {
		name := ep.Application + ":" + ep.Name
		rs.Interface = ep.Interface
		switch ep.Role {
		case api.RoleProvider:
			rs.Provider = name
		case api.RoleRequirer:
			rs.Requirer = name
		case api.RolePeer:
			rs.Provider, rs.Requirer, rs.Type = name, name, "peer"
		}
		if ep.Scope == "container" {
			rs.Type = "subordinate"
		}
	}
	members, err := b.snap.ScopeMembers(b.model, r.ID)
	if err != nil {
		return rs, err
	}
	switch {
	case r.Life != api.Alive:
		rs.Status = "broken"
	case len(members) == 0:
		rs.Status = "joining"
	}
	return rs, nil
}

// detail converts a stored status to the way `juju status` prints it.
func detail(s api.Status) api.StatusDetail {
	return api.StatusDetail{Current: s.Status, Message: s.Message, Since: formatSince(s.Since)}
}

func formatSince(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(sinceFormat)
}

func formatTimestamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(timestampFormat)
}

// formatPorts renders port ranges as Juju does ("80/tcp", "1000-2000/udp",
// "icmp"), once each, in a stable order.
func formatPorts(ports []api.Port) []string {
	ps := slices.Clone(ports)
	slices.SortFunc(ps, func(x, y api.Port) int {
		return cmp.Or(cmp.Compare(x.Protocol, y.Protocol), cmp.Compare(x.From, y.From), cmp.Compare(x.To, y.To))
	})
	var out []string
	for _, p := range ps {
		var s string
		switch {
		case p.Protocol == "icmp":
			s = "icmp"
		case p.To == 0 || p.To == p.From:
			s = fmt.Sprintf("%d/%s", p.From, p.Protocol)
		default:
			s = fmt.Sprintf("%d-%d/%s", p.From, p.To, p.Protocol)
		}
		out = appendUnique(out, s)
	}
	return out
}

func appendUnique(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}
