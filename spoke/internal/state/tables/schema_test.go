package tables

import (
	"slices"
	"testing"

	"github.com/hashicorp/go-memdb"
)

// TestSchemaTablesHaveRecords checks that every table ships whole: each
// table of the schema is either snapshotted (a record, a place in All) or
// derived, and the schema builds.
func TestSchemaTablesHaveRecords(t *testing.T) {
	s := Schema()
	if _, err := memdb.NewMemDB(s); err != nil {
		t.Fatal(err)
	}
	for name := range s.Tables {
		_, snapshotted := snapshotTables[name]
		derived := slices.Contains(Derived, name)
		if snapshotted == derived {
			t.Errorf("table %s: snapshot record %v, derived %v; want exactly one", name, snapshotted, derived)
		}
		if snapshotted != slices.Contains(All, name) {
			t.Errorf("table %s: snapshot record %v, but in All %v", name, snapshotted, !snapshotted)
		}
	}
	if len(All)+len(Derived) != len(s.Tables) {
		t.Errorf("All lists %d tables and Derived %d, the schema has %d", len(All), len(Derived), len(s.Tables))
	}
}
