// Package load drives a key-value write workload against a Target and
// measures committed writes per second and per-write latency.
//
// Invariants: every worker writes keys no other worker writes at the same
// time; a write counts only once Put has returned (for a replicated store,
// once it is committed); latencies are kept exactly, not bucketed.
package load

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
)

// Target is a store under test. Put must return only once the write is
// durable by the store's own rules (committed by a quorum for etcd or raft).
type Target interface {
	Name() string
	Put(ctx context.Context, key, value string) error
}

// Config describes one load level.
type Config struct {
	Concurrency int           // parallel writers, each with one write in flight
	Duration    time.Duration // measuring time; ignored when Count > 0
	Count       int           // total measured writes; 0 means run for Duration
	Keyspace    int           // distinct keys, shared round-robin by the writers
	Warmup      time.Duration // unmeasured load before measuring
	ValueSize   int           // bytes per value; 0 means 64
}

func (c *Config) validate() error {
	var errs []error
	if c.Concurrency < 1 {
		errs = append(errs, fmt.Errorf("concurrency %d < 1", c.Concurrency))
	}
	if c.Count <= 0 && c.Duration <= 0 {
		errs = append(errs, errors.New("need a positive Duration or Count"))
	}
	if c.Keyspace < c.Concurrency {
		errs = append(errs, fmt.Errorf("keyspace %d smaller than concurrency %d", c.Keyspace, c.Concurrency))
	}
	if c.ValueSize == 0 {
		c.ValueSize = 64
	}
	return errors.Join(errs...)
}

// Result is the measured phase of one run.
type Result struct {
	Target        string
	Concurrency   int
	Ops           int           // successful writes
	Errors        int           // failed writes
	FirstError    error         // the first failure, for the report
	Elapsed       time.Duration // wall time of the measured phase
	CommitsPerSec float64
	P50, P99, Max time.Duration
}

// Run warms target up, then measures writes at cfg.Concurrency until the
// duration or count is reached. Writes in flight when the time is up finish
// and are counted, so Elapsed includes them. A cancelled ctx ends the run
// with ctx's error.
func Run(ctx context.Context, target Target, cfg Config) (Result, error) {
	if err := cfg.validate(); err != nil {
		return Result{}, fmt.Errorf("load: %w", err)
	}
	value := strings.Repeat("v", cfg.ValueSize)
	if cfg.Warmup > 0 {
		warm := cfg
		warm.Count, warm.Duration = 0, cfg.Warmup
		if _, err := phase(ctx, target, warm, value); err != nil {
			return Result{}, err
		}
	}
	return phase(ctx, target, cfg, value)
}

// worker is one writer's private tally; merged after the phase.
type worker struct {
	latencies []time.Duration
	errors    int
	firstErr  error
}

func phase(ctx context.Context, target Target, cfg Config, value string) (Result, error) {
	workers := make([]worker, cfg.Concurrency)
	var (
		mu        sync.Mutex
		remaining = cfg.Count
	)
	// take reports whether another write may start.
	deadline := time.Now().Add(cfg.Duration)
	take := func() bool {
		if cfg.Count <= 0 {
			return time.Now().Before(deadline)
		}
		mu.Lock()
		defer mu.Unlock()
		if remaining == 0 {
			return false
		}
		remaining--
		return true
	}

	start := time.Now()
	g, gctx := errgroup.WithContext(ctx)
	for w := range workers {
		g.Go(func() error {
			tally := &workers[w]
			for i := 0; take(); i++ {
				if err := gctx.Err(); err != nil {
					return err
				}
				key := fmt.Sprintf("bench/%08d", (w+i*cfg.Concurrency)%cfg.Keyspace)
				t0 := time.Now()
				err := target.Put(gctx, key, value)
				lat := time.Since(t0)
				if err != nil {
					tally.errors++
					if tally.firstErr == nil {
						tally.firstErr = err
					}
					continue
				}
				tally.latencies = append(tally.latencies, lat)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return Result{}, fmt.Errorf("load: %s: %w", target.Name(), err)
	}
	return summarise(target.Name(), cfg.Concurrency, time.Since(start), workers), nil
}

func summarise(name string, concurrency int, elapsed time.Duration, workers []worker) Result {
	r := Result{Target: name, Concurrency: concurrency, Elapsed: elapsed}
	var all []time.Duration
	for _, w := range workers {
		all = append(all, w.latencies...)
		r.Errors += w.errors
		if r.FirstError == nil {
			r.FirstError = w.firstErr
		}
	}
	slices.Sort(all)
	r.Ops = len(all)
	if elapsed > 0 {
		r.CommitsPerSec = float64(r.Ops) / elapsed.Seconds()
	}
	r.P50, r.P99 = Percentile(all, 50), Percentile(all, 99)
	if len(all) > 0 {
		r.Max = all[len(all)-1]
	}
	return r
}

// Percentile returns the nearest-rank p-th percentile of sorted latencies.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(float64(len(sorted))*p/100+0.999999999) - 1
	return sorted[min(max(rank, 0), len(sorted)-1)]
}
