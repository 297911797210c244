package state

import (
	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/spoke/internal/state/stream"
	"github.com/droverhq/drover/spoke/internal/state/tables"
)

// SetMigrationForTest changes a model's migration mark on this replica
// alone, outside raft, at its current index, as a new store generation
// (what a restore makes), and resets events so every watcher rebuilds
// from the store: tests' stand-in for the hub's phase changes. Production code
// never calls it.
func SetMigrationForTest(s *Store, events *stream.Broker, model string, set func(*api.ModelMigration)) error {
	index, err := s.Snapshot().LatestIndex()
	if err != nil {
		return err
	}
	_, _, err = s.Update(index, func(tx *Txn) (any, error) {
		m, err := tx.model(model)
		if err != nil {
			return nil, err
		}
		if m.Migration == nil {
			return nil, api.Errorf(api.CodeConflict, "model %q is not migrating", m.Name)
		}
		next, mig := *m, *m.Migration
		set(&mig)
		next.Migration = &mig
		return nil, tx.put(tables.Models, &next)
	})
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.gen++
	s.mu.Unlock()
	events.Reset(index)
	return nil
}
