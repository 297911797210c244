package apiserver

import (
	"strconv"
	"testing"
)

// TestMarkCacheKeepsTheLastEntries: the cache answers for the last 16
// indexes put, forgets older ones, and never answers for index 0 (no
// entry).
func TestMarkCacheKeepsTheLastEntries(t *testing.T) {
	var c markCache
	if _, ok := c.get(0); ok {
		t.Fatal("an empty cache answers for index 0")
	}
	for i := uint64(1); i <= 20; i++ {
		c.put(i, "2."+strconv.FormatUint(i, 10))
	}
	for i := uint64(1); i <= 20; i++ {
		m, ok := c.get(i)
		if want := i > 4; ok != want || (ok && m != "2."+strconv.FormatUint(i, 10)) {
			t.Errorf("index %d: %q %v, want kept %v", i, m, ok, want)
		}
	}
}
