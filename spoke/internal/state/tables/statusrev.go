package tables

import (
	"github.com/hashicorp/go-memdb"

	"github.com/droverhq/drover/api"
)

// A model's status revision is the last raft index that changed anything
// the model's status is built from: the model itself, its applications,
// units, machines, relations, relation scopes and leases, and the
// controller record (its name, cloud and region). Two snapshots of one
// store generation with the same revision give the same status, but for
// what time changes (a leader's lease running out, the status's
// timestamp), so the API can answer "not modified" without building it
// (apiserver's status ETag).
//
// The revisions live in a derived table that snapshots leave out: a
// restored store has none, and a model without one falls back to the
// last index of every status table, which is never lower than its true
// revision. Nothing can be stale that way, only revalidated for nothing.

// StatusRevision is one model's status revision.
type StatusRevision struct {
	ModelUUID string
	Index     uint64
}

// StatusTables are the tables a model's status is built from, less the
// controller record, which is global.
var StatusTables = []string{Models, Applications, Units, Machines,
	Relations, RelationScopes, Leases}

// statusModel returns the model a change to a status table belongs to.
// A lease only extended (same holder, term and start) changes no status
// by itself: the status shows a leader until the expiry it read, and says
// so in its ETag, so a renewal every 30 s does not revalidate every
// poller's copy.
func statusModel(c memdb.Change) (string, bool) {
	obj := c.After
	if c.Deleted() {
		obj = c.Before
	}
	switch o := obj.(type) {
	case *api.Model:
		return o.UUID, true
	case *api.Application:
		return o.ModelUUID, true
	case *api.Unit:
		return o.ModelUUID, true
	case *api.Machine:
		return o.ModelUUID, true
	case *api.Relation:
		return o.ModelUUID, true
	case *api.RelationScope:
		return o.ModelUUID, true
	case *api.Lease:
		if b, ok := c.Before.(*api.Lease); ok && c.Updated() && b.Holder == o.Holder &&
			b.Term == o.Term && b.Start.Equal(o.Start) {
			return "", false
		}
		return o.ModelUUID, true
	}
	return "", false
}

// BumpStatusRevisions sets the status revision of every model the
// transaction's changes touch to index, and drops a removed model's.
func BumpStatusRevisions(txn *memdb.Txn, changes memdb.Changes, index uint64) error {
	var models map[string]bool // model: removed
	for _, c := range changes {
		m, ok := statusModel(c)
		if !ok {
			continue
		}
		if models == nil {
			models = map[string]bool{}
		}
		_, isModel := c.Before.(*api.Model)
		models[m] = models[m] || isModel && c.Deleted()
	}
	for m, removed := range models {
		var err error
		if removed {
			_, err = txn.DeleteAll(StatusRevisions, "id", m)
		} else {
			err = txn.Insert(StatusRevisions, &StatusRevision{ModelUUID: m, Index: index})
		}
		if err != nil {
			return internalf("status revision: %v", err)
		}
	}
	return nil
}
