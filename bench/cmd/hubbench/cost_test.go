package main

import (
	"testing"
	"time"
)

var sink []*[64]byte

func TestCostCountsThisProcess(t *testing.T) {
	c := newCost()
	const calls, each = 20, 10000
	for range calls {
		c.begin()
		for range each {
			sink = append(sink, new([64]byte))
		}
		for t0 := time.Now(); time.Since(t0) < 20*time.Millisecond; { // busy: CPU, not sleep
		}
		c.end()
		sink = sink[:0]
	}
	cpu, objs, bytes := c.perCall()
	// The runtime counts allocations as it refills its per-CPU caches:
	// exact over many calls, within a cache's worth for one.
	if objs < 0.95*each || objs > 1.05*each+100 || bytes < 0.95*64*each {
		t.Errorf("allocations per call: %.0f objects, %.0f bytes; want about %d and %d", objs, bytes, each, 64*each)
	}
	// getrusage counts in scheduler ticks: allow for a coarse clock.
	if cpu < 10*time.Millisecond {
		t.Errorf("CPU per call %v, want about 20ms", cpu)
	}
	if c.calls != calls {
		t.Errorf("calls = %d, want %d", c.calls, calls)
	}
}
