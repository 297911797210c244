// Package tables is the layout of the spoke's model store: the go-memdb
// schema (every table, its indexes and the names the store looks rows up
// by), the rows package state declares itself (beside the api objects),
// each table's snapshot record, and the derived status revisions.
//
// Invariants:
//
//   - Every table ships whole: its schema, a snapshot record in
//     snapshotTables and a place in All (the fixed order of snapshots),
//     unless it is listed in Derived (rebuilt from writes, never
//     snapshotted). TestSchemaTablesHaveRecords checks it.
//   - A snapshot is the format records (package format) of every row, the
//     tables in All order and each table in primary-key order, so the same
//     store always writes the same bytes.
//   - Numbers in untyped maps read back from a snapshot are json.Number.
package tables

import "github.com/droverhq/drover/api"

func internalf(format string, args ...any) *api.Error {
	return api.Errorf(api.CodeInternal, "state: "+format, args...)
}
