package state

import (
	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/spoke/internal/state/tables"
)

// LeaseByApp returns an application's lease, or nil. A lease whose Holder
// is empty is vacant: it keeps its Term so that terms never repeat.
func (r *reader) LeaseByApp(model, app string) (*api.Lease, error) {
	return first[api.Lease](r, tables.Leases, "id", model, app)
}

// claimLease grants or extends leadership of an application.
func claimLease(t *Txn, req *ClaimLeaseRequest) (*api.Lease, error) {
	a, err := t.application(req.ModelUUID, req.App)
	if err != nil {
		return nil, err
	}
	u, err := t.unit(req.ModelUUID, req.Unit)
	if err != nil {
		return nil, err
	}
	if u.Application != a.Name {
		return nil, api.Errorf(api.CodeInvalid, "unit %q is not a unit of %q", u.Name, a.Name)
	}
	if u.Life == api.Dead {
		return nil, api.Errorf(api.CodeConflict, "unit %q is dead", u.Name)
	}
	if req.Duration <= 0 {
		return nil, api.Errorf(api.CodeInvalid, "lease duration must be positive")
	}
	cur, err := t.LeaseByApp(a.ModelUUID, a.Name)
	if err != nil {
		return nil, err
	}
	l := &api.Lease{ModelUUID: a.ModelUUID, Application: a.Name}
	if cur != nil {
		held := cur.Holder != "" && req.Now.Before(cur.Expiry)
		if held && cur.Holder != u.Name {
			return nil, api.Errorf(api.CodeConflict, "leadership of %q held by %s", a.Name, cur.Holder)
		}
		l = copyLease(cur)
		if held {
			l.Expiry = req.Now.Add(req.Duration)
			return l, t.put(tables.Leases, l)
		}
	}
	if l.Holder != u.Name {
		l.Term++
	}
	l.Holder, l.Start, l.Expiry = u.Name, req.Now, req.Now.Add(req.Duration)
	return l, t.put(tables.Leases, l)
}

func copyLease(l *api.Lease) *api.Lease {
	c := *l
	return &c
}

// revokeLease vacates Holder's lease early.
func revokeLease(t *Txn, req *RevokeLeaseRequest) error {
	l, err := t.LeaseByApp(req.ModelUUID, req.App)
	if err != nil {
		return err
	}
	if l == nil || l.Holder == "" {
		return api.Errorf(api.CodeNotFound, "application %q has no leader", req.App)
	}
	if l.Holder != req.Holder {
		return api.Errorf(api.CodeConflict, "leadership of %q held by %s", req.App, l.Holder)
	}
	return t.vacate(l)
}

func (t *Txn) vacate(l *api.Lease) error {
	l = copyLease(l)
	l.Holder = ""
	return t.put(tables.Leases, l)
}

// expireLeases vacates every lease expired at Now and returns their
// "model/app" keys.
func expireLeases(t *Txn, req *ExpireLeasesRequest) ([]string, error) {
	all, err := list[api.Lease](&t.reader, tables.Leases, "id")
	if err != nil {
		return nil, err
	}
	var out []string
	for _, l := range all {
		if l.Holder == "" || req.Now.Before(l.Expiry) {
			continue
		}
		// A migrating model's leases do not expire: its leaders stay
		// leaders until the migration ends (migration.go).
		if m, err := first[api.Model](&t.reader, tables.Models, "id", l.ModelUUID); err != nil {
			return nil, err
		} else if m != nil && m.Migration != nil {
			continue
		}
		if err := t.vacate(l); err != nil {
			return nil, err
		}
		out = append(out, l.ModelUUID+"/"+l.Application)
	}
	return out, nil
}
