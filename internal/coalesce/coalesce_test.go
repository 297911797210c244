package coalesce

import (
	"context"
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/droverhq/drover/tests/testkit"
)

// gatedFn is a round function that counts its rounds, notes whether two
// ever overlapped, and holds each round until the test releases it.
type gatedFn struct {
	started  atomic.Uint64
	inflight atomic.Int32
	overlap  atomic.Bool
	release  chan struct{}
}

func newGatedFn() *gatedFn { return &gatedFn{release: make(chan struct{})} }

func (g *gatedFn) run(ctx context.Context) (uint64, error) {
	n := g.started.Add(1)
	if g.inflight.Add(1) > 1 {
		g.overlap.Store(true)
	}
	defer g.inflight.Add(-1)
	select {
	case <-g.release:
		return n, nil
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// joined is how many callers wait for the round after the one in flight.
func (r *Rounds[T]) joinedNext() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pending == nil {
		return 0
	}
	return r.pending.joined
}

// TestCallersShareTheNextRound: callers that arrive while a round is in
// flight share one round that starts after it, never the one in flight.
func TestCallersShareTheNextRound(t *testing.T) {
	g := newGatedFn()
	r := New(g.run)
	var eg errgroup.Group
	eg.Go(func() error {
		v, err := r.Do(t.Context())
		if err == nil && v != 1 {
			t.Errorf("first caller got round %d, want 1", v)
		}
		return err
	})
	testkit.EventuallyWithin(t, 10*time.Second, func() (bool, error) { return g.started.Load() == 1, nil }, "first round started")

	const callers = 64
	got := make([]uint64, callers)
	for i := range callers {
		eg.Go(func() error {
			v, err := r.Do(t.Context())
			got[i] = v
			return err
		})
	}
	testkit.EventuallyWithin(t, 10*time.Second, func() (bool, error) { return r.joinedNext() == callers, nil }, "callers joined the next round")
	g.release <- struct{}{} // ends round 1
	g.release <- struct{}{} // ends round 2
	if err := eg.Wait(); err != nil {
		t.Fatal(err)
	}
	for i, v := range got {
		if v != 2 {
			t.Fatalf("caller %d got round %d, want 2 (the round after the one in flight when it asked)", i, v)
		}
	}
	if n := r.Started(); n != 2 {
		t.Fatalf("%d rounds for %d callers, want 2", n, callers+1)
	}
	if g.overlap.Load() {
		t.Fatal("two rounds ran at once")
	}
}

// TestRoundsUnderLoad: many callers in a loop; every answer comes from a
// round that started after its caller asked, one round at a time, far
// fewer rounds than calls. Run with -race.
func TestRoundsUnderLoad(t *testing.T) {
	var started, inflight atomic.Int64
	var overlap atomic.Bool
	r := New(func(context.Context) (int64, error) {
		n := started.Add(1)
		if inflight.Add(1) > 1 {
			overlap.Store(true)
		}
		defer inflight.Add(-1)
		for range 100 { // a round takes a while; callers arrive meanwhile
			runtime.Gosched()
		}
		return n, nil
	})
	const callers, calls = 32, 50
	var eg errgroup.Group
	for range callers {
		eg.Go(func() error {
			for range calls {
				before := started.Load()
				v, err := r.Do(t.Context())
				if err != nil {
					return err
				}
				if v <= before {
					return errors.New("an answer came from a round that started before its caller asked")
				}
			}
			return nil
		})
	}
	if err := eg.Wait(); err != nil {
		t.Fatal(err)
	}
	if overlap.Load() {
		t.Fatal("two rounds ran at once")
	}
	if n := r.Started(); n >= callers*calls {
		t.Fatalf("%d rounds for %d calls: nothing was shared", n, callers*calls)
	}
}

// TestRoundCutByItsRunner: a round that fails because the context of the
// caller running it ended is run again for the callers still waiting.
func TestRoundCutByItsRunner(t *testing.T) {
	g := newGatedFn()
	r := New(g.run)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var eg errgroup.Group
	eg.Go(func() error {
		if _, err := r.Do(ctx); !errors.Is(err, context.Canceled) {
			t.Errorf("runner whose context ended got %v, want context.Canceled", err)
		}
		return nil
	})
	testkit.EventuallyWithin(t, 10*time.Second, func() (bool, error) { return g.started.Load() == 1, nil }, "first round started")
	// A second round starts as soon as the first ends, run by the waiter.
	var got uint64
	eg.Go(func() error {
		v, err := r.Do(t.Context())
		got = v
		return err
	})
	testkit.EventuallyWithin(t, 10*time.Second, func() (bool, error) { return r.joinedNext() == 1, nil }, "waiter joined")
	cancel()
	g.release <- struct{}{}
	if err := eg.Wait(); err != nil {
		t.Fatal(err)
	}
	if got != 2 {
		t.Fatalf("waiter got round %d, want 2", got)
	}
}

// TestWaiterLeavesWhenItsContextEnds: a caller waiting for a round gives up
// with its own context; the round in flight is not disturbed.
func TestWaiterLeavesWhenItsContextEnds(t *testing.T) {
	g := newGatedFn()
	r := New(g.run)
	var eg errgroup.Group
	var first uint64
	eg.Go(func() (err error) {
		first, err = r.Do(t.Context())
		return err
	})
	testkit.EventuallyWithin(t, 10*time.Second, func() (bool, error) { return g.started.Load() == 1, nil }, "first round started")
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	if _, err := r.Do(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("waiter got %v, want its deadline", err)
	}
	g.release <- struct{}{}
	if err := eg.Wait(); err != nil {
		t.Fatal(err)
	}
	if first != 1 {
		t.Fatalf("round in flight answered %d, want 1", first)
	}
	// The round the waiter had joined is run by the next caller.
	eg.Go(func() error { g.release <- struct{}{}; return nil })
	if v, err := r.Do(t.Context()); err != nil || v != 2 {
		t.Fatalf("next caller got %d, %v; want round 2", v, err)
	}
	if err := eg.Wait(); err != nil {
		t.Fatal(err)
	}
}

// TestPanickingRoundEnds: a round whose function panics still ends, so
// later callers are not stuck behind it.
func TestPanickingRoundEnds(t *testing.T) {
	calls := 0
	r := New(func(context.Context) (int, error) {
		calls++
		if calls == 1 {
			panic("boom")
		}
		return calls, nil
	})
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("the panic did not reach the caller running the round")
			}
		}()
		r.Do(t.Context())
	}()
	if v, err := r.Do(t.Context()); err != nil || v != 2 {
		t.Fatalf("after a panic: %d, %v; want 2", v, err)
	}
}
