package hub

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/droverhq/drover/hub/internal/store"
)

func TestAppendModelMatchesMarshal(t *testing.T) {
	// appendModel spells out every field of store.Model; a new one must be
	// added there and to store.ModelRow too (and counted here).
	if n := reflect.TypeFor[store.Model]().NumField(); n != 17 {
		t.Fatalf("store.Model has %d fields, appendModel knows 17: update it", n)
	}
	at := time.Date(2026, 11, 21, 23, 59, 1, 123456000, time.UTC)
	rows := []store.ModelRow{
		{},
		{UUID: uuid.New(), Name: []byte("prod"), Org: []byte("acme"), Owner: uuid.New(), HasOwner: true,
			OwnerName: []byte("alice@example.com"), Controller: []byte("east"), Cloud: []byte("lxd"), Region: []byte("r1"),
			ControllerUUID: uuid.New(), Life: []byte("alive"), Status: []byte("available"), ApplicationCount: 3,
			UnitCount: -1, MachineCount: 1 << 30, EventIndex: 1<<63 - 1, CreatedAt: at, UpdatedAt: at.Add(time.Hour)},
		{Name: []byte("q\"<&>\\\n\u2028✓\x00"), Status: []byte("\x7f"), CreatedAt: at.Truncate(time.Second)},
	}
	for _, r := range rows {
		m := store.Model{UUID: uuid.UUID(r.UUID).String(), Name: string(r.Name), Org: string(r.Org),
			OwnerName: string(r.OwnerName), Controller: string(r.Controller), Cloud: string(r.Cloud), Region: string(r.Region),
			ControllerUUID: uuid.UUID(r.ControllerUUID).String(), Life: string(r.Life), Status: string(r.Status),
			ApplicationCount: int(r.ApplicationCount), UnitCount: int(r.UnitCount), MachineCount: int(r.MachineCount),
			EventIndex: uint64(r.EventIndex), CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
		if r.HasOwner {
			m.Owner = uuid.UUID(r.Owner).String()
		}
		want, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendModel(nil, &r); string(got) != string(want) {
			t.Errorf("appendModel:\n got %s\nwant %s", got, want)
		}
	}
}

// BenchmarkAppendModel: the listing writes one per visible model (10,000 in
// hubbench's 100% listing).
func BenchmarkAppendModel(b *testing.B) {
	m := &store.ModelRow{UUID: [16]byte{1, 2, 3}, ControllerUUID: [16]byte{4, 5}, Owner: [16]byte{7}, HasOwner: true,
		Name: []byte("m-03-0042"), Org: []byte("bench"), OwnerName: []byte("owner@example.com"), Controller: []byte("syn-03"),
		Cloud: []byte("synthetic"), Region: []byte("r3"), Life: []byte("alive"), Status: []byte("available"),
		ApplicationCount: 3, UnitCount: 9, MachineCount: 9, EventIndex: 12345,
		CreatedAt: time.Date(2026, 11, 22, 6, 1, 2, 123456000, time.Local), UpdatedAt: time.Date(2026, 11, 22, 6, 1, 3, 999000, time.Local)}
	buf := make([]byte, 0, 1<<20)
	b.ReportAllocs()
	for b.Loop() {
		buf = appendModel(buf[:0], m)
	}
	b.SetBytes(int64(len(buf)))
}
