package hub

import (
	"sync"
	"sync/atomic"

	"github.com/droverhq/drover/hub/internal/store"
)

// modelJSONCache keeps the JSON of listed models by UUID, each for one
// version of its row (store.ModelRow.Version). A
// listing reads every visible model's key from PostgreSQL and takes the
// JSON of those whose row has not changed from here, so it never shows
// what the index no longer says: any write to a row, a rename of its
// owner included, gives it a new version. Where the controller is (name,
// cloud, region) is not kept: a listing reads it fresh.
//
// The cache is bounded by limit bytes; past it, arbitrary entries go
// (those of models that no longer exist among them).
type modelJSONCache struct {
	mu    sync.RWMutex
	m     map[[16]byte]*listedModel
	size  int
	limit int
	// hits and misses count listed models taken from the cache and read
	// whole from PostgreSQL.
	hits, misses atomic.Int64
}

// listedModel is one model's JSON less its controller's place:
// json[:split] is up to and with the owner, json[split:] from its life on.
type listedModel struct {
	version int64
	ctrl    [16]byte
	json    []byte
	split   int
}

// listedOverhead is what an entry holds besides its JSON (map slot, key,
// struct), for the cache's bound.
const listedOverhead = 96

// modelJSONLimit bounds the cache: about 140,000 models.
const modelJSONLimit = 64 << 20

func newModelJSONCache(limit int) *modelJSONCache {
	return &modelJSONCache{m: map[[16]byte]*listedModel{}, limit: limit}
}

func newListedModel(m *store.ModelRow) *listedModel {
	b := appendModelHead(make([]byte, 0, 384), m)
	split := len(b)
	b = appendModelTail(b, m)
	return &listedModel{version: m.Version, ctrl: m.ControllerUUID, json: b, split: split}
}

// lookup sets out[i] to the entry for keys[i] at its version, or nil, and
// returns how many it left nil.
func (c *modelJSONCache) lookup(keys []store.ModelKey, out []*listedModel) (missing int) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for i, k := range keys {
		e := c.m[k.UUID]
		if e != nil && e.version != k.Version {
			e = nil
		}
		if out[i] = e; e == nil {
			missing++
		}
	}
	c.hits.Add(int64(len(keys) - missing))
	c.misses.Add(int64(missing))
	return missing
}

// fits reports whether n models' JSON would fit in the cache, at the
// listing's typical 500 bytes a model.
func (c *modelJSONCache) fits(n int) bool { return n*(400+listedOverhead) <= c.limit }

// put keeps e as model id's JSON, making room past the limit.
func (c *modelJSONCache) put(id [16]byte, e *listedModel) {
	n := len(e.json) + listedOverhead
	if n > c.limit {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old := c.m[id]; old != nil {
		delete(c.m, id)
		c.size -= len(old.json) + listedOverhead
	}
	if c.size+n > c.limit {
		for k, old := range c.m { // map order: arbitrary entries
			delete(c.m, k)
			if c.size -= len(old.json) + listedOverhead; c.size+n <= c.limit {
				break
			}
		}
	}
	c.m[id] = e
	c.size += n
}
