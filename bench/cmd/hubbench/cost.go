package main

import (
	"fmt"
	"runtime/metrics"
	"syscall"
	"time"
)

// cost is what one path's status calls spent: CPU time (user and system,
// all threads) of this process and of the spoke's own process if it has
// one, and this process's heap allocations (which the runtime counts as it
// refills its per-CPU caches: exact over many calls, not for one). The two
// paths are interleaved call by call, so the difference between them is
// what the hub's hop costs the machine. Background work (the indexer,
// OpenFGA, raft) falls on both paths alike. A call's latency is mostly
// CPU, since the calls are sequential.
type cost struct {
	cpu                    time.Duration
	objs, bytes            uint64
	calls                  int
	samples                [2][]metrics.Sample
	start, split           syscall.Rusage
	spokePID               int
	spokeStart, spokeSplit time.Duration
}

func newCost(spokePID int) *cost {
	c := &cost{spokePID: spokePID}
	for i := range c.samples {
		c.samples[i] = []metrics.Sample{{Name: "/gc/heap/allocs:objects"}, {Name: "/gc/heap/allocs:bytes"}}
	}
	return c
}

// begin is called just before a call is timed, end just after.
func (c *cost) begin() {
	metrics.Read(c.samples[0])
	if c.spokePID != 0 {
		c.spokeStart = processCPU(c.spokePID)
	}
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &c.start)
}

func (c *cost) end() {
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &c.split)
	if c.spokePID != 0 {
		c.spokeSplit = processCPU(c.spokePID)
		c.cpu += c.spokeSplit - c.spokeStart
	}
	metrics.Read(c.samples[1])
	c.cpu += cpuTime(c.split) - cpuTime(c.start)
	c.objs += c.samples[1][0].Value.Uint64() - c.samples[0][0].Value.Uint64()
	c.bytes += c.samples[1][1].Value.Uint64() - c.samples[0][1].Value.Uint64()
	c.calls++
}

func micros(d time.Duration) string {
	return fmt.Sprintf("%.0fµs", float64(d)/float64(time.Microsecond))
}

func cpuTime(r syscall.Rusage) time.Duration {
	return time.Duration(r.Utime.Nano() + r.Stime.Nano())
}

func (c *cost) perCall() (cpu time.Duration, objs, bytes float64) {
	n := max(1, c.calls)
	return c.cpu / time.Duration(n), float64(c.objs) / float64(n), float64(c.bytes) / float64(n)
}

// printCosts prints both paths' costs per call and the hub's share.
func printCosts(path string, hub, direct *cost) {
	hc, ho, hb := hub.perCall()
	dc, do, db := direct.perCall()
	fmt.Printf("  CPU per call, %-15s direct %s  this path %s  difference %s (%+.1f%%)\n",
		path, micros(dc), micros(hc), us(hc-dc), 100*(float64(hc)-float64(dc))/float64(dc))
	fmt.Printf("  heap allocs,  %-15s direct %.0f (%.1f KB)  this path %.0f (%.1f KB)  difference %+.0f (%+.1f KB)\n",
		path, do, db/1024, ho, hb/1024, ho-do, (hb-db)/1024)
}
