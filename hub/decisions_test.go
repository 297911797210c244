package hub

import (
	"testing"
	"time"
)

func TestDecisionCacheExpiresAndClears(t *testing.T) {
	now := time.Unix(1000, 0)
	c := newTTLCache[decisionKey, bool](func() time.Time { return now }, 2*time.Second)
	k := decisionKey{user: "user:a", rel: "reader", object: "model:m"}
	c.put(k, true, c.generation(), time.Time{})
	if ok, hit := c.get(k); !hit || !ok {
		t.Fatalf("fresh decision: ok=%v hit=%v", ok, hit)
	}
	now = now.Add(3 * time.Second)
	if _, hit := c.get(k); hit {
		t.Fatal("an expired decision was reused")
	}
	gen := c.generation()
	c.clear() // a tuple changed while a Check was in flight
	c.put(k, true, gen, time.Time{})
	if _, hit := c.get(k); hit {
		t.Fatal("a decision from before a tuple change was cached")
	}
	c.put(k, false, c.generation(), time.Time{})
	c.clear()
	if _, hit := c.get(k); hit {
		t.Fatal("clear kept a decision")
	}
}

// A cached answer never outlives the credential it came from: put's until
// (a token's expiry) cuts the TTL short.
func TestTTLCacheUntil(t *testing.T) {
	now := time.Unix(1000, 0)
	c := newTTLCache[string, int](func() time.Time { return now }, 2*time.Second)
	c.put("short", 1, c.generation(), now.Add(500*time.Millisecond))
	c.put("long", 2, c.generation(), now.Add(time.Hour))
	now = now.Add(time.Second)
	if _, hit := c.get("short"); hit {
		t.Fatal("an answer was served past its until")
	}
	if v, hit := c.get("long"); !hit || v != 2 {
		t.Fatalf("long = %v, %v; want 2 within the TTL", v, hit)
	}
	now = now.Add(2 * time.Second)
	if _, hit := c.get("long"); hit {
		t.Fatal("an answer was served past the TTL")
	}
	calls := 0
	fill := func() (int, error) { calls++; return calls, nil }
	if v, _ := c.lookup("k", fill); v != 1 {
		t.Fatalf("lookup = %d", v)
	}
	if v, _ := c.lookup("k", fill); v != 1 || calls != 1 {
		t.Fatalf("second lookup = %d after %d fills, want the cached 1", v, calls)
	}
}

// TestTTLCacheExpiry: a cached answer's expiry is what a remembered proxy
// route is bounded by (handleModelProxy): the TTL from when it was cached,
// or the sooner limit it was put with.
func TestTTLCacheExpiry(t *testing.T) {
	now := time.Unix(1000, 0)
	c := newTTLCache[string, bool](func() time.Time { return now }, 2*time.Second)
	if _, ok := c.expiry("a"); ok {
		t.Fatal("expiry of an answer never cached")
	}
	c.put("a", true, c.generation(), time.Time{})
	c.put("b", true, c.generation(), now.Add(time.Second))
	now = now.Add(500 * time.Millisecond)
	if exp, ok := c.expiry("a"); !ok || !exp.Equal(time.Unix(1002, 0)) {
		t.Fatalf("expiry of a: %v %v, want the TTL from when it was cached", exp, ok)
	}
	if exp, ok := c.expiry("b"); !ok || !exp.Equal(time.Unix(1001, 0)) {
		t.Fatalf("expiry of b: %v %v, want its sooner limit", exp, ok)
	}
}
