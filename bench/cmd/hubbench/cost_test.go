package main

import (
	"os"
	"testing"
	"time"
)

var sink []*[64]byte

func TestCostCountsThisProcess(t *testing.T) {
	c := newCost(0)
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

// TestProcessCPU reads a process's CPU time from /proc as getrusage
// counts it: this process's, after a busy spell.
func TestProcessCPU(t *testing.T) {
	before := processCPU(os.Getpid())
	for t0 := time.Now(); time.Since(t0) < 200*time.Millisecond; { // busy
	}
	if d := processCPU(os.Getpid()) - before; d < 100*time.Millisecond || d > 2*time.Second {
		t.Errorf("CPU over a 200 ms busy spell: %v", d)
	}
	if processCPU(-1) != 0 {
		t.Error("a process that does not exist has CPU time")
	}
}

func TestSpokeSettingsRoundTrip(t *testing.T) {
	in := spokeSettings{dataDir: "/tmp/a b", listen: "127.0.0.1:1", raft: "127.0.0.1:2", hubURL: "https://127.0.0.1:3", hubCAFile: "/tmp/ca.crt"}
	out, err := decodeSpokeSettings(in.encode())
	if err != nil || out != in {
		t.Errorf("round trip: %+v %v, want %+v", out, err, in)
	}
	if _, err := decodeSpokeSettings("colour=blue"); err == nil {
		t.Error("an unknown setting was accepted")
	}
}
