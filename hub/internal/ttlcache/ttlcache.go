// Package ttlcache remembers answers for a short time, so a burst of
// requests (status polls, a CLI session, a watch reconnect) pays for one
// OpenFGA or PostgreSQL round trip rather than one per request.
//
// A Cache never hands back an answer older than its TTL, and never keeps
// one whose lookup began before the last Clear: a change that clears the
// cache cannot be undone by a lookup still in flight.
package ttlcache

import (
	"sync"
	"time"
)

// MaxEntries bounds each cache; when full it is emptied rather than
// tracking recency (a refill costs one lookup per key).
const MaxEntries = 100_000

type entry[V any] struct {
	v       V
	expires time.Time
}

// Cache maps K to answers V, each kept for the cache's TTL at most.
type Cache[K comparable, V any] struct {
	now func() time.Time
	ttl time.Duration

	mu  sync.Mutex
	gen uint64 // bumped by Clear: a lookup begun before it must not be cached
	m   map[K]entry[V]
}

// New is an empty cache keeping answers for ttl by the clock now (nil:
// time.Now).
func New[K comparable, V any](now func() time.Time, ttl time.Duration) *Cache[K, V] {
	if now == nil {
		now = time.Now
	}
	return &Cache[K, V]{now: now, ttl: ttl, m: map[K]entry[V]{}}
}

// Get returns k's answer if it is cached and not expired.
func (c *Cache[K, V]) Get(k K) (v V, hit bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[k]
	if !ok || c.now().After(e.expires) {
		return v, false
	}
	return e.v, true
}

// Expiry returns when k's cached answer expires, if it is cached.
func (c *Cache[K, V]) Expiry(k K) (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[k]
	return e.expires, ok
}

// Generation is the count of Clears so far; a lookup takes it before it
// asks, and hands it to Put.
func (c *Cache[K, V]) Generation() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen
}

// Put stores v until the TTL passes or until, if sooner, until. Nothing is
// stored when the cache was cleared since the lookup that produced v began
// (gen from Generation), since its answer may predate the change.
func (c *Cache[K, V]) Put(k K, v V, gen uint64, until time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen {
		return
	}
	if len(c.m) >= MaxEntries {
		c.m = map[K]entry[V]{}
	}
	exp := c.now().Add(c.ttl)
	if !until.IsZero() && until.Before(exp) {
		exp = until
	}
	c.m[k] = entry[V]{v: v, expires: exp}
}

// Lookup answers from the cache or calls fill and caches its answer.
func (c *Cache[K, V]) Lookup(k K, fill func() (V, error)) (V, error) {
	if v, hit := c.Get(k); hit {
		return v, nil
	}
	gen := c.Generation()
	v, err := fill()
	if err == nil {
		c.Put(k, v, gen, time.Time{})
	}
	return v, err
}

// Clear forgets every answer, and has Put refuse those whose lookup began
// before it.
func (c *Cache[K, V]) Clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	c.m = map[K]entry[V]{}
}

// Len counts the answers held, expired or not.
func (c *Cache[K, V]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}

// DeleteFunc forgets the answers del picks, and has Put refuse those whose
// lookup began before it, as Clear does: one still in flight may rest on
// what the deleted answers were deleted for (a session that ended while
// its token was being verified).
func (c *Cache[K, V]) DeleteFunc(del func(K, V) bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	for k, e := range c.m {
		if del(k, e.v) {
			delete(c.m, k)
		}
	}
}
