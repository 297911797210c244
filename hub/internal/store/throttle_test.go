package store_test

import (
	"slices"
	"testing"
	"time"

	"github.com/droverhq/drover/hub/internal/store"
)

// TestSharedThrottle: a shared bucket refills at its rate from the time of
// its last charge, may owe at most a burst, and is pruned once untouched.
func TestSharedThrottle(t *testing.T) {
	s, _ := newStore(t)
	ctx := t.Context()
	r := store.ThrottleRate{Burst: 3, Every: 10 * time.Second}
	now := time.Unix(1_800_000_000, 0)
	tokens := func() float64 {
		t.Helper()
		n, err := s.Throttle.Tokens(ctx, "failed-logins", "203.0.113.9", r, now)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := tokens(); n != 3 {
		t.Fatalf("an address never charged holds %v, want the burst", n)
	}
	var got []float64
	for range 8 {
		n, err := s.Throttle.Charge(ctx, "failed-logins", "203.0.113.9", r, now)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, n)
	}
	if want := []float64{2, 1, 0, -1, -2, -3, -3, -3}; !slices.Equal(got, want) {
		t.Fatalf("charges left %v, want %v", got, want)
	}
	if n, err := s.Throttle.Tokens(ctx, "login-starts", "203.0.113.9", r, now); err != nil || n != 3 {
		t.Errorf("another kind's bucket: %v, %v", n, err)
	}
	now = now.Add(25 * time.Second)
	if n := tokens(); n != -0.5 {
		t.Errorf("25 s later: %v, want -0.5", n)
	}
	now = now.Add(time.Hour)
	if n := tokens(); n != 3 {
		t.Errorf("an hour later: %v, want the burst", n)
	}
	if err := s.Throttle.Prune(ctx, now.Add(-time.Minute)); err != nil {
		t.Fatal(err)
	}
	if n, err := s.Throttle.Charge(ctx, "failed-logins", "203.0.113.9", r, now.Add(-time.Hour)); err != nil || n != 2 {
		t.Errorf("a charge after pruning (dated before it): %v, %v, want a fresh bucket", n, err)
	}
}
