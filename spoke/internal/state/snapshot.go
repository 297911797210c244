package state

import (
	"io"

	"github.com/droverhq/drover/spoke/internal/state/tables"
)

// WriteSnapshot streams every object of snap to w, as format records
// (package tables says how each table is written).
func WriteSnapshot(snap *Snapshot, w io.Writer) error {
	return tables.WriteSnapshot(snap.txn, w)
}

// Restore replaces the whole store with a snapshot stream, atomically:
// readers see the old contents until the new ones are complete. Blocking
// queries wake up.
func (s *Store) Restore(r io.Reader) error {
	db, err := tables.ReadSnapshot(r)
	if err != nil {
		return err
	}
	s.replace(db)
	return nil
}
