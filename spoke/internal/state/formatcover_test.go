package state

import (
	"reflect"
	"slices"
	"testing"

	"github.com/droverhq/drover/spoke/internal/state/format"
	"github.com/droverhq/drover/spoke/internal/state/tables"
)

// TestFormatCoversStateTypes fails when a request that carries api structs,
// or a record type of this package, gains a field its format struct lacks:
// the converter would drop it from the log or from snapshots. (format's
// TestFieldsCovered does the same for the api structs.)
func TestFormatCoversStateTypes(t *testing.T) {
	pairs := [][2]reflect.Type{
		{reflect.TypeFor[UpsertControllerNodeRequest](), reflect.TypeFor[format.UpsertControllerNodeRequest]()},
		{reflect.TypeFor[UpsertUserRequest](), reflect.TypeFor[format.UpsertUserRequest]()},
		{reflect.TypeFor[SetCredentialRequest](), reflect.TypeFor[format.SetCredentialRequest]()},
		{reflect.TypeFor[AddCharmRequest](), reflect.TypeFor[format.AddCharmRequest]()},
		{reflect.TypeFor[SetHubTrustRequest](), reflect.TypeFor[format.SetHubTrustRequest]()},
		{reflect.TypeFor[SetStatusRequest](), reflect.TypeFor[format.SetStatusRequest]()},
		{reflect.TypeFor[SetUnitPortsRequest](), reflect.TypeFor[format.SetUnitPortsRequest]()},
		{reflect.TypeFor[CommitHookChangesRequest](), reflect.TypeFor[format.CommitHookChangesRequest]()},
		{reflect.TypeFor[ReportMinionRequest](), reflect.TypeFor[format.ReportMinionRequest]()},
		{reflect.TypeFor[tables.IndexEntry](), reflect.TypeFor[format.IndexEntry]()},
		{reflect.TypeFor[tables.UnitCharmState](), reflect.TypeFor[format.UnitState]()},
		{reflect.TypeFor[tables.AppLeaderSettings](), reflect.TypeFor[format.LeaderSettings]()},
		{reflect.TypeFor[tables.ModelConfigEntry](), reflect.TypeFor[format.ModelConfigEntry]()},
		{reflect.TypeFor[tables.HubTrustRecord](), reflect.TypeFor[format.HubTrustRecord]()},
		{reflect.TypeFor[tables.HubToken](), reflect.TypeFor[format.HubToken]()},
		{reflect.TypeFor[tables.JoinToken](), reflect.TypeFor[format.JoinToken]()},
		{reflect.TypeFor[tables.Tombstone](), reflect.TypeFor[format.Tombstone]()},
		{reflect.TypeFor[SetMigrationPhaseRequest](), reflect.TypeFor[format.SetMigrationPhaseRequest]()},
	}
	names := func(t reflect.Type) []string {
		var out []string
		for f := range t.Fields() {
			out = append(out, f.Name)
		}
		return out
	}
	for _, p := range pairs {
		if got, want := names(p[1]), names(p[0]); !slices.Equal(got, want) {
			t.Errorf("format.%s has fields %v, %v has %v", p[1].Name(), got, p[0], want)
		}
	}
}

// TestReplicatedFormatHasNoAPITypes: what Encode marshals for every
// command, and what a snapshot writes for every table, is built from
// format types only.
func TestReplicatedFormatHasNoAPITypes(t *testing.T) {
	for _, typ := range registeredTypes() {
		c := commands[typ]
		req := reflect.New(c.request).Interface()
		if path := apiTypeIn(reflect.TypeOf(c.encode(req)), map[reflect.Type]bool{}); path != "" {
			t.Errorf("%v encodes an api type: %s", typ, path)
		}
	}
	h := newHarness(t)
	fillAll(h) // leaves a row in every table: TestSnapshotRoundTrip
	for _, name := range tables.All {
		obj, err := h.snap().txn.First(name, "id")
		if err != nil || obj == nil {
			t.Fatalf("table %s: %v %v", name, obj, err)
		}
		_, rec, ok := tables.Record(name, obj)
		if !ok {
			t.Fatalf("table %s has no snapshot record", name)
		}
		if path := apiTypeIn(reflect.TypeOf(rec), map[reflect.Type]bool{}); path != "" {
			t.Errorf("table %s writes an api type: %s", name, path)
		}
	}
}

// apiTypeIn returns the first api type reachable from t, or "".
func apiTypeIn(t reflect.Type, seen map[reflect.Type]bool) string {
	if seen[t] {
		return ""
	}
	seen[t] = true
	if t.PkgPath() == "github.com/droverhq/drover/api" {
		return t.String()
	}
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
		return apiTypeIn(t.Elem(), seen)
	case reflect.Struct:
		for f := range t.Fields() {
			if p := apiTypeIn(f.Type, seen); p != "" {
				return t.Name() + "." + f.Name + ": " + p
			}
		}
	}
	return ""
}
