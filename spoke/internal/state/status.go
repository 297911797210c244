package state

import (
	"cmp"
	"slices"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/spoke/internal/state/tables"
)

// HistoryLimit bounds the status history kept per (entity, kind).
const HistoryLimit = 100

// StatusHistory returns up to limit (0: all) recorded statuses of an
// entity, newest first.
func (r *reader) StatusHistory(model, entity, kind string, limit int) ([]*api.StatusHistoryEntry, error) {
	all, err := list[api.StatusHistoryEntry](r, tables.StatusHistory, "entity", model, entity, kind)
	if err != nil {
		return nil, err
	}
	slices.Reverse(all)
	if limit > 0 && len(all) > limit {
		all = all[:limit]
	}
	return all, nil
}

func (t *Txn) deleteHistory(model, entity, kind string) error {
	if _, err := t.txn.DeleteAll(tables.StatusHistory, "entity", model, entity, kind); err != nil {
		return internalf("delete status history: %v", err)
	}
	return nil
}

// setStatus sets one status of an entity and records it in its history.
func setStatus(t *Txn, req *SetStatusRequest) error {
	if req.Status.Status == "" {
		return api.Errorf(api.CodeInvalid, "status is required")
	}
	st := copyStatus(req.Status)
	if req.Leader != "" {
		if req.Kind != api.StatusKindApplication {
			return api.Errorf(api.CodeInvalid, "a leader check applies only to application status")
		}
		if err := t.checkLeader(req.ModelUUID, req.Entity, req.Leader, req.Now); err != nil {
			return api.Errorf(api.CodeNotLeader, "this unit is not the leader")
		}
	}
	switch req.Kind {
	case api.StatusKindWorkload, api.StatusKindAgent:
		u, err := t.unit(req.ModelUUID, req.Entity)
		if err != nil {
			return err
		}
		u = copyUnit(u)
		if req.Kind == api.StatusKindWorkload {
			u.WorkloadStatus = st
		} else {
			u.AgentStatus = st
		}
		if err := t.put(tables.Units, u); err != nil {
			return err
		}
	case api.StatusKindApplication:
		a, err := t.application(req.ModelUUID, req.Entity)
		if err != nil {
			return err
		}
		a = copyApplication(a)
		a.Status = st
		if err := t.put(tables.Applications, a); err != nil {
			return err
		}
	case api.StatusKindMachine, api.StatusKindInstance:
		mc, err := t.machine(req.ModelUUID, req.Entity)
		if err != nil {
			return err
		}
		mc = copyMachine(mc)
		if req.Kind == api.StatusKindMachine {
			mc.AgentStatus = st
		} else {
			mc.InstanceStatus = st
		}
		if err := t.put(tables.Machines, mc); err != nil {
			return err
		}
	case api.StatusKindModel:
		if req.Entity != req.ModelUUID {
			return api.Errorf(api.CodeInvalid, "model status entity must be the model UUID")
		}
		m, err := t.model(req.ModelUUID)
		if err != nil {
			return err
		}
		m = copyModel(m)
		m.Status = st
		if err := t.put(tables.Models, m); err != nil {
			return err
		}
	default:
		return api.Errorf(api.CodeInvalid, "unknown status kind %q", req.Kind)
	}
	return t.recordHistory(req.ModelUUID, req.Entity, req.Kind, st)
}

// recordHistory appends an entry (Seq = raft index) and drops the oldest
// beyond HistoryLimit in the same transaction.
func (t *Txn) recordHistory(model, entity, kind string, st api.Status) error {
	e := &api.StatusHistoryEntry{ModelUUID: model, Entity: entity, Kind: kind, Seq: t.index, Status: copyStatus(st)}
	if err := t.put(tables.StatusHistory, e); err != nil {
		return err
	}
	all, err := list[api.StatusHistoryEntry](&t.reader, tables.StatusHistory, "entity", model, entity, kind)
	if err != nil {
		return err
	}
	for len(all) > HistoryLimit {
		if err := t.del(tables.StatusHistory, all[0]); err != nil {
			return err
		}
		all = all[1:]
	}
	return nil
}

// setUnitPorts opens and closes port ranges of a unit.
func setUnitPorts(t *Txn, req *SetUnitPortsRequest) (*api.Unit, error) {
	u, err := t.unit(req.ModelUUID, req.Unit)
	if err != nil {
		return nil, err
	}
	if u.Life == api.Dead {
		return nil, api.Errorf(api.CodeConflict, "unit %q is dead", u.Name)
	}
	for _, p := range append(slices.Clone(req.Open), req.Close...) {
		if err := validPort(p); err != nil {
			return nil, err
		}
	}
	ports := copyPorts(u.OpenPorts)
	ports = slices.DeleteFunc(ports, func(p api.Port) bool {
		return slices.ContainsFunc(req.Close, func(c api.Port) bool { return samePort(p, c) })
	})
	for _, p := range req.Open {
		if !slices.ContainsFunc(ports, func(q api.Port) bool { return samePort(p, q) }) {
			p.Endpoints = slices.Clone(p.Endpoints)
			slices.Sort(p.Endpoints)
			ports = append(ports, p)
		}
	}
	if u.MachineID != "" && len(req.Open) > 0 {
		others, err := t.UnitsByMachine(u.ModelUUID, u.MachineID)
		if err != nil {
			return nil, err
		}
		for _, o := range others {
			if o.Name == u.Name {
				continue
			}
			for _, p := range req.Open {
				for _, q := range o.OpenPorts {
					if p.Protocol == q.Protocol && p.From <= q.To && q.From <= p.To {
						return nil, api.Errorf(api.CodeConflict, "port range %s %d-%d conflicts with %d-%d of unit %q",
							p.Protocol, p.From, p.To, q.From, q.To, o.Name)
					}
				}
			}
		}
	}
	slices.SortFunc(ports, func(a, b api.Port) int {
		return cmp.Or(cmp.Compare(a.Protocol, b.Protocol), cmp.Compare(a.From, b.From), cmp.Compare(a.To, b.To),
			slices.Compare(a.Endpoints, b.Endpoints))
	})
	if len(ports) == 0 {
		ports = nil
	}
	u = copyUnit(u)
	u.OpenPorts = ports
	return u, t.put(tables.Units, u)
}

func validPort(p api.Port) error {
	switch p.Protocol {
	case "icmp":
		if p.From == 0 && p.To == 0 {
			return nil
		}
	case "tcp", "udp":
		if 1 <= p.From && p.From <= p.To && p.To <= 65535 {
			return nil
		}
	}
	return api.Errorf(api.CodeInvalid, "invalid port range %s %d-%d", p.Protocol, p.From, p.To)
}

func samePort(a, b api.Port) bool {
	ea, eb := slices.Clone(a.Endpoints), slices.Clone(b.Endpoints)
	slices.Sort(ea)
	slices.Sort(eb)
	return a.Protocol == b.Protocol && a.From == b.From && a.To == b.To && slices.Equal(ea, eb)
}

// setWorkloadVersion records a unit's workload version, and its application's.
func setWorkloadVersion(t *Txn, req *SetWorkloadVersionRequest) (*api.Unit, error) {
	u, err := t.unit(req.ModelUUID, req.Unit)
	if err != nil {
		return nil, err
	}
	a, err := t.application(u.ModelUUID, u.Application)
	if err != nil {
		return nil, err
	}
	u, a = copyUnit(u), copyApplication(a)
	u.WorkloadVersion, a.WorkloadVersion = req.Version, req.Version
	if err := t.put(tables.Applications, a); err != nil {
		return nil, err
	}
	return u, t.put(tables.Units, u)
}

// setResolved asks a unit in error to retry or skip its failed hook.
func setResolved(t *Txn, req *SetResolvedRequest) (*api.Unit, error) {
	if req.Mode != "retry" && req.Mode != "no-retry" {
		return nil, api.Errorf(api.CodeInvalid, "resolved mode must be retry or no-retry, not %q", req.Mode)
	}
	u, err := t.unit(req.ModelUUID, req.Unit)
	if err != nil {
		return nil, err
	}
	if u.AgentStatus.Status != "error" {
		return nil, api.Errorf(api.CodeConflict, "unit %q is not in an error state", u.Name)
	}
	if u.Resolved != "" {
		return nil, api.Errorf(api.CodeConflict, "unit %q is already marked resolved (%s)", u.Name, u.Resolved)
	}
	u = copyUnit(u)
	u.Resolved = req.Mode
	u.RetryVersion++
	return u, t.put(tables.Units, u)
}

// clearResolved clears a pending resolved request.
func clearResolved(t *Txn, req *ClearResolvedRequest) (*api.Unit, error) {
	u, err := t.unit(req.ModelUUID, req.Unit)
	if err != nil {
		return nil, err
	}
	if u.Resolved == "" {
		return u, nil
	}
	u = copyUnit(u)
	u.Resolved = ""
	return u, t.put(tables.Units, u)
}

// StatusRevision returns model's status revision: the last raft index
// that changed anything its status is built from (package tables,
// statusrev.go, says how revisions are kept). A model without a recorded
// revision, as after a restore, gets the latest index of every status
// table, never lower than its true revision.
func (r *reader) StatusRevision(model string) (uint64, error) {
	ctl, err := r.Index(tables.Controller)
	if err != nil {
		return 0, err
	}
	rev, err := first[tables.StatusRevision](r, tables.StatusRevisions, "id", model)
	if err != nil {
		return 0, err
	}
	if rev != nil {
		return max(ctl, rev.Index), nil
	}
	for _, t := range tables.StatusTables {
		i, err := r.Index(t)
		if err != nil {
			return 0, err
		}
		ctl = max(ctl, i)
	}
	return ctl, nil
}
