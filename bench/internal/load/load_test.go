package load

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// memTarget is an in-memory store that checks no key is written by two
// workers at once.
type memTarget struct {
	mu       sync.Mutex
	inFlight map[string]bool
	writes   int
	failEach int // every failEach-th write fails; 0 never
	clash    error
}

func (m *memTarget) Name() string { return "mem" }

func (m *memTarget) Put(ctx context.Context, key, value string) error {
	m.mu.Lock()
	if m.inFlight[key] {
		m.clash = errors.New("concurrent writes to " + key)
	}
	m.inFlight[key] = true
	m.writes++
	n := m.writes
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		delete(m.inFlight, key)
		m.mu.Unlock()
	}()
	if len(value) != 64 {
		return errors.New("value is not 64 bytes")
	}
	if m.failEach > 0 && n%m.failEach == 0 {
		return errors.New("injected")
	}
	return nil
}

func TestRunCount(t *testing.T) {
	m := &memTarget{inFlight: map[string]bool{}, failEach: 10}
	r, err := Run(t.Context(), m, Config{Concurrency: 8, Count: 1000, Keyspace: 64})
	if err != nil {
		t.Fatal(err)
	}
	if r.Ops+r.Errors != 1000 || r.Errors != 100 || r.FirstError == nil {
		t.Fatalf("ops=%d errors=%d first=%v; want 900/100", r.Ops, r.Errors, r.FirstError)
	}
	if m.clash != nil {
		t.Fatal(m.clash)
	}
	if r.P50 > r.P99 || r.P99 > r.Max || r.CommitsPerSec <= 0 {
		t.Fatalf("inconsistent summary %+v", r)
	}
}

func TestRunDurationWithWarmup(t *testing.T) {
	m := &memTarget{inFlight: map[string]bool{}}
	r, err := Run(t.Context(), m, Config{Concurrency: 4, Duration: 30 * time.Millisecond, Warmup: 10 * time.Millisecond, Keyspace: 100})
	if err != nil {
		t.Fatal(err)
	}
	if r.Ops == 0 || r.Ops >= m.writes || r.Elapsed < 30*time.Millisecond {
		t.Fatalf("ops=%d total writes=%d elapsed=%v; want warm-up writes excluded", r.Ops, m.writes, r.Elapsed)
	}
}

func TestRunRejectsBadConfig(t *testing.T) {
	if _, err := Run(t.Context(), &memTarget{}, Config{Concurrency: 0, Keyspace: 1}); err == nil {
		t.Fatal("want error")
	}
}

func TestPercentile(t *testing.T) {
	var l []time.Duration
	for i := 1; i <= 100; i++ {
		l = append(l, time.Duration(i))
	}
	if Percentile(l, 50) != 50 || Percentile(l, 99) != 99 || Percentile(l, 100) != 100 || Percentile(nil, 50) != 0 {
		t.Fatal("nearest-rank percentile")
	}
}
