package hub

import (
	"encoding/json"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/droverhq/drover/hub/internal/store"
)

func TestAppendModelMatchesMarshal(t *testing.T) {
	// appendModel spells out every field of store.Model; a new one must be
	// added there and to store.ModelRow or store.Place too (and counted here).
	if n := reflect.TypeFor[store.Model]().NumField(); n != 18 {
		t.Fatalf("store.Model has %d fields, appendModel knows 18: update it", n)
	}
	at := time.Date(2026, 11, 21, 23, 59, 1, 123456000, time.UTC)
	rows := []struct {
		store.ModelRow
		store.Place
	}{
		{},
		{store.ModelRow{UUID: uuid.New(), Name: []byte("prod"), Org: []byte("acme"), Owner: uuid.New(), HasOwner: true,
			OwnerName: []byte("alice@example.com"), ControllerUUID: uuid.New(), Life: []byte("alive"), Status: []byte("available"),
			ApplicationCount: 3, UnitCount: -1, MachineCount: 1 << 30, EventIndex: 1<<63 - 1, CreatedAt: at, UpdatedAt: at.Add(time.Hour)},
			store.Place{Name: []byte("east"), Cloud: []byte("lxd"), Region: []byte("r1")}},
		{store.ModelRow{Name: []byte("lost"), CreatedAt: at},
			store.Place{Name: []byte("west"), Cloud: []byte("lxd"), Region: []byte("r2"), Status: []byte("disconnected")}},
		{store.ModelRow{Name: []byte("fine"), CreatedAt: at},
			store.Place{Name: []byte("west"), Status: []byte("connected")}},
		{store.ModelRow{Name: []byte("q\"<&>\\\n\u2028✓\x00"), Status: []byte("\x7f"), CreatedAt: at.Truncate(time.Second)},
			store.Place{Region: []byte("<r>")}},
	}
	for _, r := range rows {
		m := store.Model{UUID: uuid.UUID(r.UUID).String(), Name: string(r.ModelRow.Name), Org: string(r.Org),
			OwnerName: string(r.OwnerName), Controller: string(r.Place.Name), Cloud: string(r.Cloud), Region: string(r.Region),
			Status:         string(r.ModelRow.Status),
			ControllerUUID: uuid.UUID(r.ControllerUUID).String(), Life: string(r.Life),
			ApplicationCount: int(r.ApplicationCount), UnitCount: int(r.UnitCount), MachineCount: int(r.MachineCount),
			EventIndex: uint64(r.EventIndex), CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
		if r.HasOwner {
			m.Owner = uuid.UUID(r.Owner).String()
		}
		if string(r.Place.Status) == "disconnected" { // only a lost controller is said
			m.ControllerStatus = "disconnected"
		}
		want, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendModel(nil, &r.ModelRow, r.Place); string(got) != string(want) {
			t.Errorf("appendModel:\n got %s\nwant %s", got, want)
		}
		// As a listing writes it, the place between the two kept parts.
		lw := listWriter{places: placeJSON{places: map[[16]byte]store.Place{r.ControllerUUID: r.Place}, json: map[[16]byte][]byte{}}}
		if err := lw.add(newListedModel(&r.ModelRow)); err != nil {
			t.Fatal(err)
		}
		if got := string(lw.b[len(`{"models":[`):]); got != string(want) {
			t.Errorf("listed:\n got %s\nwant %s", got, want)
		}
	}
}

// BenchmarkAppendModel: the listing writes one per visible model (10,000 in
// hubbench's 100% listing).
func BenchmarkAppendModel(b *testing.B) {
	m := &store.ModelRow{UUID: [16]byte{1, 2, 3}, ControllerUUID: [16]byte{4, 5}, Owner: [16]byte{7}, HasOwner: true,
		Name: []byte("m-03-0042"), Org: []byte("bench"), OwnerName: []byte("owner@example.com"), Life: []byte("alive"), Status: []byte("available"),
		ApplicationCount: 3, UnitCount: 9, MachineCount: 9, EventIndex: 12345,
		CreatedAt: time.Date(2026, 11, 22, 6, 1, 2, 123456000, time.Local), UpdatedAt: time.Date(2026, 11, 22, 6, 1, 3, 999000, time.Local)}
	p := store.Place{Name: []byte("syn-03"), Cloud: []byte("synthetic"), Region: []byte("r3")}
	buf := make([]byte, 0, 1<<20)
	b.ReportAllocs()
	for b.Loop() {
		buf = appendModel(buf[:0], m, p)
	}
	b.SetBytes(int64(len(buf)))
}

// TestModelJSONCacheBound: the cache keeps at most limit bytes, counts
// what it holds exactly when entries are replaced and evicted, answers
// only for the version it holds, and keeps nothing larger than its limit.
func TestModelJSONCacheBound(t *testing.T) {
	row := func(i int, version int64) (*store.ModelRow, store.ModelKey) {
		m := &store.ModelRow{UUID: [16]byte{byte(i)}, Name: []byte("model"), Version: version}
		return m, store.ModelKey{UUID: m.UUID, Version: version}
	}
	one := len(newListedModel(&store.ModelRow{Name: []byte("model")}).json) + listedOverhead
	c := newModelJSONCache(5 * one)
	held := func() int {
		n := 0
		for _, e := range c.m {
			n += len(e.json) + listedOverhead
		}
		return n
	}
	for i := range 20 {
		m, k := row(i, 1)
		c.put(m.UUID, newListedModel(m))
		m, k2 := row(i, 2) // replaced by a newer version
		c.put(m.UUID, newListedModel(m))
		if c.size != held() || c.size > c.limit || len(c.m) > 5 {
			t.Fatalf("after %d puts: size %d, holding %d bytes in %d entries, limit %d", i+1, c.size, held(), len(c.m), c.limit)
		}
		out := make([]*listedModel, 2)
		if missing := c.lookup([]store.ModelKey{k, k2}, out); missing != 1 || out[0] != nil || out[1] == nil {
			t.Fatalf("lookup of versions 1 and 2 of the model just put: %d missing, %v", missing, out)
		}
	}
	big := &store.ModelRow{UUID: [16]byte{99}, Name: make([]byte, 5*one)}
	c.put(big.UUID, newListedModel(big))
	if _, ok := c.m[big.UUID]; ok {
		t.Error("kept an entry larger than the limit")
	}
}

// TestModelJSONCacheConcurrent: listings put and look up at once (run with
// -race); the bytes counted stay those held.
func TestModelJSONCacheConcurrent(t *testing.T) {
	one := len(newListedModel(&store.ModelRow{}).json) + listedOverhead
	c := newModelJSONCache(50 * one)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			out := make([]*listedModel, 1)
			for i := range 2000 {
				m := &store.ModelRow{UUID: [16]byte{byte(i % 80)}, Version: int64(g)}
				c.put(m.UUID, newListedModel(m))
				c.lookup([]store.ModelKey{{UUID: m.UUID, Version: m.Version}}, out)
			}
		})
	}
	wg.Wait()
	held := 0
	for _, e := range c.m {
		held += len(e.json) + listedOverhead
	}
	if c.size != held || c.size > c.limit {
		t.Fatalf("size %d, holding %d bytes, limit %d", c.size, held, c.limit)
	}
	if hits, misses := c.hits.Load(), c.misses.Load(); hits+misses != 4*2000 {
		t.Fatalf("%d hits and %d misses for %d lookups", hits, misses, 4*2000)
	}
}
