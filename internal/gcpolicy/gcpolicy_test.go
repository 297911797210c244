package gcpolicy

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

func TestGCTunerPercent(t *testing.T) {
	tu := &gcTuner{floor: 512 << 20}
	for _, tc := range []struct {
		live uint64
		want int
	}{
		{0, gcMaxPercent},
		{1 << 20, gcMaxPercent},      // a tiny heap: capped
		{64 << 20, 700},              // 64 MiB × 8 = the 512 MiB floor
		{128 << 20, 300},             // 128 MiB × 4 = 512 MiB: plain GOGC
		{1 << 30, gcPercent},         // past the floor: plain GOGC
		{(512 << 20) / 3, gcPercent}, // never below gcPercent
		{(512 << 20) / 11, 1000},     // whole percents, rounded down
	} {
		if got := tu.percent(tc.live); got != tc.want {
			t.Errorf("percent(%d) = %d, want %d", tc.live, got, tc.want)
		}
	}
}

// TestGCTunerFollowsCollections checks that the tuner runs after every
// collection (its cleanup re-arms itself), follows the live heap, and sets
// GOGC only when the percent changes.
func TestGCTunerFollowsCollections(t *testing.T) {
	var live atomic.Uint64
	live.Store(1 << 20)
	set := make(chan int, 10)
	tu := &gcTuner{floor: 512 << 20, live: live.Load, set: func(p int) int { set <- p; return 0 }}
	tu.arm()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	// collectUntil collects until the tuner sets GOGC, and returns it.
	collectUntil := func() int {
		t.Helper()
		for {
			runtime.GC()
			select {
			case p := <-set:
				return p
			case <-ctx.Done():
				t.Fatal("the tuner did not run after collections")
			case <-time.After(time.Millisecond):
			}
		}
	}
	if p := collectUntil(); p != gcMaxPercent {
		t.Fatalf("small heap: GOGC %d, want %d", p, gcMaxPercent)
	}
	live.Store(64 << 20)
	if p := collectUntil(); p != 700 {
		t.Fatalf("64 MiB heap: GOGC %d, want 700", p)
	}
	live.Store(1 << 30)
	if p := collectUntil(); p != gcPercent {
		t.Fatalf("1 GiB heap: GOGC %d, want %d", p, gcPercent)
	}
	// Unchanged heap: collections run the tuner but set nothing.
	for range 5 {
		runtime.GC()
	}
	select {
	case p := <-set:
		t.Fatalf("set GOGC %d again for an unchanged percent", p)
	default:
	}
}
