package hub

import (
	"context"
	"sync"
	"time"

	"github.com/droverhq/drover/authz"
	"github.com/droverhq/drover/hub/internal/store"
)

// decisionTTL bounds how long a permission decision or listing is reused.
// This hub replica drops every cached one as soon as its outbox writes a
// tuple to OpenFGA, so grants and revocations made through it apply at
// once; one made through another replica applies within the TTL.
const decisionTTL = 2 * time.Second

// maxCached bounds each cache; when full it is emptied rather than
// tracking recency (a refill costs one lookup per key).
const maxCached = 100_000

// decisionKey names a Check (object set) or a ListObjects (typ set).
type decisionKey struct {
	user   string
	rel    authz.Relation
	object string
	typ    string
}

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

// authzSyncTimeout bounds how long a request that changed tuples waits for
// OpenFGA to hold them (awaitAuthz).
const authzSyncTimeout = 5 * time.Second

// awaitAuthz makes a change of tuples visible to the caller's next request
// (read your writes through the outbox): it wakes the outbox worker and
// waits, at most authzSyncTimeout, until every entry committed so far has
// reached OpenFGA on this or another replica. Without it `drover add-model
// m && drover status -m m` could be refused for a few milliseconds. The
// change is committed either way; a timeout (OpenFGA down) is only logged,
// and the worker keeps delivering.
func (s *Server) awaitAuthz(ctx context.Context) {
	s.outbox.Kick()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), authzSyncTimeout)
	defer cancel()
	head, err := s.store.Outbox.Head(ctx)
	delay := time.Millisecond
	for err == nil {
		var done bool
		if done, err = s.store.Outbox.DeliveredThrough(ctx, head); done || err != nil {
			break
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			err = ctx.Err()
		case <-t.C:
		}
		t.Stop()
		delay = min(2*delay, 50*time.Millisecond)
	}
	if err != nil {
		s.cfg.Logger.Warn("permission changes not yet in OpenFGA; they will be delivered", "err", err)
		return
	}
	// Whichever replica delivered them, this one's next request must see
	// them (its own notification may still be on its way).
	s.dropAuthzCaches()
}

// dropAuthzCaches forgets the authenticated tokens, permission decisions,
// listings and remembered routes this replica holds.
func (s *Server) dropAuthzCaches() {
	s.principals.clear() // an identity may have been disabled
	s.decisions.clear()
	s.listings.clear()
	s.proxyRoutes.clear()
	s.live.changed() // and end the long-lived calls that no longer hold
}

// reloadKeys has this replica reload the signing keys now (another one
// rotated or revoked them), and then drop what it holds signed with the
// old ones: controller tokens it hands out again and the sessions it has
// verified.
func (s *Server) reloadKeys(ctx context.Context) {
	if err := s.keys.Refresh(ctx); err != nil {
		s.cfg.Logger.Warn("signing key refresh failed", "err", err)
	}
	s.spokeTokens.clear()
	s.dropAuthzCaches()
}

// followAuthz drops this replica's cached decisions (and has its
// long-lived calls checked again, live.go) whenever any replica
// has delivered permission changes to OpenFGA (announced through
// PostgreSQL), so a grant or a revoke made through one replica holds on
// every other one from its next request, not when the 2 s cache expires.
// It listens again after a failure, dropping the caches for what it may
// have missed. The same channel announces a change of the signing keys
// (rotate-signing-key), which it reloads.
func (s *Server) followAuthz(ctx context.Context) error {
	// The long-lived calls are checked again on the same changes (live.go).
	live := make(chan struct{})
	go func() { defer close(live); _ = s.followLive(ctx) }()
	defer func() { <-live }()
	for relisten := false; ; relisten = true {
		err := s.store.ListenAuthzChanges(ctx, func() {
			if relisten {
				s.reloadKeys(ctx) // for a change of keys it may have missed
			}
			s.dropAuthzCaches()
		}, func(payload string) {
			if payload == store.SigningKeysChanged {
				s.reloadKeys(ctx)
				return
			}
			s.dropAuthzCaches()
		})
		if ctx.Err() != nil {
			return ctx.Err()
		}
		s.cfg.Logger.Warn("permission change notifications interrupted; listening again", "err", err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}
