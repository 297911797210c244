// Package gcpolicy is droverd's garbage-collector policy, shared with the
// bench programs that run a controller or hub in their own process.
package gcpolicy

import (
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"sync/atomic"
)

// GC policy. A controller keeps its model state in memory and allocates
// per request, and its live heap is often small (tens of MB): collecting
// whenever the heap grows by a fixed percentage of so little runs the
// collector several times a second under write load, and each cycle takes
// CPU from, and adds latency to, every request in flight (measured: 22%
// fewer commits/s at GOGC=300 than with a 400 MB heap goal, same machine,
// interleaved runs). So the heap goal has a floor: the next GC starts at
// max(live × (1 + gcPercent/100), floor), never beyond gcMaxPercent. A
// large heap is collected at gcPercent, as plain GOGC would; a small one uses up to
// the floor's worth of memory instead of collecting constantly.
//
// GOGC set in the environment turns this off (the runtime then follows
// GOGC alone); DROVER_GC_MIN_HEAP_MB changes the floor (0: no floor, plain
// GOGC=300). GOMEMLIMIT still caps the heap either way.
const (
	gcPercent       = 300
	gcMaxPercent    = 2000
	gcDefaultFloorB = 512 << 20
	envGCMinHeap    = "DROVER_GC_MIN_HEAP_MB"
)

// Apply applies the policy above to this process.
func Apply() error {
	if os.Getenv("GOGC") != "" {
		return nil
	}
	floor := uint64(gcDefaultFloorB)
	if v := os.Getenv(envGCMinHeap); v != "" {
		mb, err := strconv.ParseUint(v, 10, 32)
		if err != nil {
			return fmt.Errorf("%s=%q: want a whole number of MiB", envGCMinHeap, v)
		}
		floor = mb << 20
	}
	debug.SetGCPercent(gcPercent)
	if floor > 0 {
		t := &gcTuner{floor: floor, set: debug.SetGCPercent, live: liveHeap}
		t.tune()
		t.arm()
	}
	return nil
}

// gcTuner moves GOGC after every collection so that the next heap goal
// respects the floor.
type gcTuner struct {
	floor   uint64
	set     func(int) int // debug.SetGCPercent
	live    func() uint64 // liveHeap
	current atomic.Int64  // last percent set
}

// percent is the GOGC that puts the next heap goal at the floor for a
// live heap of live bytes, within [gcPercent, gcMaxPercent].
func (t *gcTuner) percent(live uint64) int {
	if live == 0 {
		return gcMaxPercent
	}
	p := int64(t.floor*100/live) - 100
	return int(min(max(p, gcPercent), gcMaxPercent))
}

func (t *gcTuner) tune() {
	p := t.percent(t.live())
	if t.current.Swap(int64(p)) != int64(p) {
		t.set(p)
	}
}

// arm attaches a cleanup to a fresh unreachable object: the runtime runs
// it after the next collection, and it re-arms itself, so the tuner runs
// once per GC cycle on the runtime's cleanup goroutine and needs none of
// its own.
func (t *gcTuner) arm() {
	sentinel := new(gcSentinel)
	runtime.AddCleanup(sentinel, func(t *gcTuner) {
		t.tune()
		t.arm()
	}, t)
}

// gcSentinel is big enough to bypass the tiny allocator, whose blocks free
// several objects together and would delay the cleanup.
type gcSentinel [32]byte

var liveHeapSample = []metrics.Sample{{Name: "/gc/heap/live:bytes"}}

// liveHeap is the heap marked live by the last collection. Only the
// cleanup goroutine and Apply (before it is armed) call it.
func liveHeap() uint64 {
	metrics.Read(liveHeapSample)
	if liveHeapSample[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return liveHeapSample[0].Value.Uint64()
}
