package hub

import (
	"sync"
	"time"
)

// maxCached bounds each cache; when full it is emptied rather than
// tracking recency (a refill costs one lookup per key).
const maxCached = 100_000

type cached[V any] struct {
	v       V
	expires time.Time
}

// ttlCache remembers recent answers for a short time, so a burst of
// requests (status polls, a CLI session, a watch reconnect) pays for one
// OpenFGA or PostgreSQL round trip rather than one per request.
type ttlCache[K comparable, V any] struct {
	now func() time.Time
	ttl time.Duration

	mu  sync.Mutex
	gen uint64 // bumped by clear: a lookup begun before it must not be cached
	m   map[K]cached[V]
}

func newTTLCache[K comparable, V any](now func() time.Time, ttl time.Duration) *ttlCache[K, V] {
	if now == nil {
		now = time.Now
	}
	return &ttlCache[K, V]{now: now, ttl: ttl, m: map[K]cached[V]{}}
}

func (c *ttlCache[K, V]) get(k K) (v V, hit bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[k]
	if !ok || c.now().After(e.expires) {
		return v, false
	}
	return e.v, true
}

// expiry returns when k's cached answer expires, if it is cached.
func (c *ttlCache[K, V]) expiry(k K) (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[k]
	return e.expires, ok
}

func (c *ttlCache[K, V]) generation() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen
}

// put stores v until the TTL passes or until, if sooner, until. Nothing is
// stored when the cache was cleared since the lookup that produced v began
// (gen from generation), since its answer may predate the change.
func (c *ttlCache[K, V]) put(k K, v V, gen uint64, until time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen {
		return
	}
	if len(c.m) >= maxCached {
		c.m = map[K]cached[V]{}
	}
	exp := c.now().Add(c.ttl)
	if !until.IsZero() && until.Before(exp) {
		exp = until
	}
	c.m[k] = cached[V]{v: v, expires: exp}
}

// lookup answers from the cache or calls fill and caches its answer.
func (c *ttlCache[K, V]) lookup(k K, fill func() (V, error)) (V, error) {
	if v, hit := c.get(k); hit {
		return v, nil
	}
	gen := c.generation()
	v, err := fill()
	if err == nil {
		c.put(k, v, gen, time.Time{})
	}
	return v, err
}

func (c *ttlCache[K, V]) clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	c.m = map[K]cached[V]{}
}
