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
