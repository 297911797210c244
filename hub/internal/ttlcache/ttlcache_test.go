package ttlcache

import (
	"testing"
	"time"
)

// key stands for a permission decision's key.
type key struct{ user, rel, object string }

func TestCacheExpiresAndClears(t *testing.T) {
	now := time.Unix(1000, 0)
	c := New[key, bool](func() time.Time { return now }, 2*time.Second)
	k := key{user: "user:a", rel: "reader", object: "model:m"}
	c.Put(k, true, c.Generation(), time.Time{})
	if ok, hit := c.Get(k); !hit || !ok {
		t.Fatalf("fresh decision: ok=%v hit=%v", ok, hit)
	}
	now = now.Add(3 * time.Second)
	if _, hit := c.Get(k); hit {
		t.Fatal("an expired decision was reused")
	}
	gen := c.Generation()
	c.Clear() // a tuple changed while a Check was in flight
	c.Put(k, true, gen, time.Time{})
	if _, hit := c.Get(k); hit {
		t.Fatal("a decision from before a tuple change was cached")
	}
	c.Put(k, false, c.Generation(), time.Time{})
	c.Clear()
	if _, hit := c.Get(k); hit {
		t.Fatal("clear kept a decision")
	}
}

// A cached answer never outlives the credential it came from: put's until
// (a token's expiry) cuts the TTL short.
func TestTTLCacheUntil(t *testing.T) {
	now := time.Unix(1000, 0)
	c := New[string, int](func() time.Time { return now }, 2*time.Second)
	c.Put("short", 1, c.Generation(), now.Add(500*time.Millisecond))
	c.Put("long", 2, c.Generation(), now.Add(time.Hour))
	now = now.Add(time.Second)
	if _, hit := c.Get("short"); hit {
		t.Fatal("an answer was served past its until")
	}
	if v, hit := c.Get("long"); !hit || v != 2 {
		t.Fatalf("long = %v, %v; want 2 within the TTL", v, hit)
	}
	now = now.Add(2 * time.Second)
	if _, hit := c.Get("long"); hit {
		t.Fatal("an answer was served past the TTL")
	}
	calls := 0
	fill := func() (int, error) { calls++; return calls, nil }
	if v, _ := c.Lookup("k", fill); v != 1 {
		t.Fatalf("lookup = %d", v)
	}
	if v, _ := c.Lookup("k", fill); v != 1 || calls != 1 {
		t.Fatalf("second lookup = %d after %d fills, want the cached 1", v, calls)
	}
}

// TestTTLCacheExpiry: a cached answer's expiry is what a remembered proxy
// route is bounded by (the proxy): the TTL from when it was cached,
// or the sooner limit it was put with.
func TestTTLCacheExpiry(t *testing.T) {
	now := time.Unix(1000, 0)
	c := New[string, bool](func() time.Time { return now }, 2*time.Second)
	if _, ok := c.Expiry("a"); ok {
		t.Fatal("expiry of an answer never cached")
	}
	c.Put("a", true, c.Generation(), time.Time{})
	c.Put("b", true, c.Generation(), now.Add(time.Second))
	now = now.Add(500 * time.Millisecond)
	if exp, ok := c.Expiry("a"); !ok || !exp.Equal(time.Unix(1002, 0)) {
		t.Fatalf("expiry of a: %v %v, want the TTL from when it was cached", exp, ok)
	}
	if exp, ok := c.Expiry("b"); !ok || !exp.Equal(time.Unix(1001, 0)) {
		t.Fatalf("expiry of b: %v %v, want its sooner limit", exp, ok)
	}
}

// TestDeleteFuncRefusesLookupsInFlight: an answer whose lookup began
// before a DeleteFunc is not cached: it may rest on what the deleted
// answers were deleted for (a token verified while its session ended).
func TestDeleteFuncRefusesLookupsInFlight(t *testing.T) {
	c := New[string, string](nil, time.Minute)
	c.Put("b", "session-b", c.Generation(), time.Time{})
	gen := c.Generation() // a lookup of a's token begins
	c.DeleteFunc(func(_, sid string) bool { return sid == "session-a" })
	c.Put("a", "session-a", gen, time.Time{})
	if _, hit := c.Get("a"); hit {
		t.Fatal("an answer looked up before the DeleteFunc was cached")
	}
	if _, hit := c.Get("b"); !hit {
		t.Fatal("DeleteFunc dropped an answer it did not pick")
	}
}
