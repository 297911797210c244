package store_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/droverhq/drover/hub/internal/store"
)

// TestWebLoginsAreBounded: pending browser logins are capped per source
// and in all, expired ones are pruned by the next start and by
// PruneWebLogins, and a refused start stores nothing.
func TestWebLoginsAreBounded(t *testing.T) {
	s, _ := newStore(t)
	ctx := t.Context()
	now := time.Now()
	lim := store.WebLoginLimits{PerSource: 2, Total: 3}
	seq := 0
	put := func(source string, at time.Time) error {
		seq++
		return s.Sessions.PutWebLogin(ctx, store.WebLogin{State: fmt.Sprint("state-", seq), Verifier: "v", Nonce: "n",
			ReturnTo: "/", Source: source, ExpiresAt: at.Add(10 * time.Minute)}, at, lim)
	}
	count := func(want int, what string) {
		t.Helper()
		if n, err := s.Sessions.CountWebLogins(ctx); err != nil || n != want {
			t.Fatalf("%s: %d pending %v, want %d", what, n, err, want)
		}
	}
	for _, src := range []string{"a", "a", "b"} {
		if err := put(src, now); err != nil {
			t.Fatal(err)
		}
	}
	if err := put("a", now); !errors.Is(err, store.ErrTooManyWebLogins) {
		t.Fatalf("a third from one source: %v", err)
	}
	if err := put("c", now); !errors.Is(err, store.ErrTooManyWebLogins) {
		t.Fatalf("a fourth in all: %v", err)
	}
	count(3, "after the refusals")
	later := now.Add(11 * time.Minute)
	if err := put("a", later); err != nil {
		t.Fatalf("a start once the others expired: %v", err)
	}
	count(1, "after a start pruned the expired ones")
	if n, err := s.Sessions.PruneWebLogins(ctx, later.Add(11*time.Minute)); err != nil || n != 1 {
		t.Fatalf("prune: %d %v", n, err)
	}
	count(0, "after pruning")
}
