// Package coalesce shares one run of a function among the callers that
// ask for it at the same time, where each caller needs a run that started
// after it asked: a linearizable read index is one, whose answer is valid
// only for requests that arrived before the leader took its commit index.
//
// Invariants: at most one run is in flight; a caller joins only a run that
// has not started yet, so every run's result is valid for every caller
// that receives it; a caller that arrives while a run is in flight waits
// for the next one, which starts as soon as the one in flight ends.
package coalesce

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
)

// Rounds runs fn for its callers, one round at a time. The zero value is
// not usable: make one with New.
type Rounds[T any] struct {
	fn     func(context.Context) (T, error)
	rounds atomic.Uint64

	mu       sync.Mutex
	inflight *round[T] // running, nil when idle
	pending  *round[T] // joined by callers, not started yet
}

type round[T any] struct {
	done chan struct{} // closed when val, err and cut are set
	val  T
	err  error
	// cut means fn failed while the context of the caller running it
	// had ended: the result says nothing about the other callers.
	cut bool
	// joined counts the callers waiting for this round to start (under
	// Rounds.mu); tests watch it.
	joined int
}

// New returns Rounds that run fn. fn receives the context of the caller
// that runs the round (the others wait on their own contexts), so it
// should bound its own work rather than rely on that context alone.
func New[T any](fn func(context.Context) (T, error)) *Rounds[T] {
	return &Rounds[T]{fn: fn}
}

// Do returns the result of a round of fn that started after Do was
// called, shared with every other caller of that round. The caller that
// finds no round in flight runs one itself, in its own goroutine, and
// waits for it to end even if ctx ends first; the others return when ctx
// ends. A round cut short by its runner's context is run again for the
// callers whose contexts are live.
func (r *Rounds[T]) Do(ctx context.Context) (T, error) {
	var zero T
	for {
		r.mu.Lock()
		if r.inflight == nil {
			rd := r.pending
			if rd == nil {
				rd = &round[T]{done: make(chan struct{})}
			}
			r.pending = nil
			r.inflight = rd
			r.mu.Unlock()
			r.run(ctx, rd)
			return rd.val, rd.err
		}
		if r.pending == nil {
			r.pending = &round[T]{done: make(chan struct{})}
		}
		rd, prev := r.pending, r.inflight
		rd.joined++
		r.mu.Unlock()

		// Wait for the round in flight to end: then one of the callers
		// of rd (whichever gets here first) starts it.
		select {
		case <-ctx.Done():
			return zero, ctx.Err()
		case <-prev.done:
		}
		r.mu.Lock()
		if r.inflight == nil && r.pending == rd {
			r.pending = nil
			r.inflight = rd
			r.mu.Unlock()
			r.run(ctx, rd)
			return rd.val, rd.err
		}
		r.mu.Unlock()
		select {
		case <-ctx.Done():
			return zero, ctx.Err()
		case <-rd.done:
		}
		if !rd.cut || ctx.Err() != nil {
			return rd.val, rd.err
		}
	}
}

// run runs rd in the calling goroutine and ends it. A panic in fn (which
// net/http recovers from) still ends the round, as cut, so that no caller
// waits for it forever and the next caller runs a round of its own.
func (r *Rounds[T]) run(ctx context.Context, rd *round[T]) {
	r.rounds.Add(1)
	finished := false
	defer func() {
		rd.cut = !finished || (rd.err != nil && ctx.Err() != nil)
		if !finished {
			rd.err = errPanicked
		}
		r.mu.Lock()
		r.inflight = nil
		close(rd.done)
		r.mu.Unlock()
	}()
	rd.val, rd.err = r.fn(ctx)
	finished = true
}

// errPanicked is the result of a round whose function panicked; its
// other callers run a round of their own.
var errPanicked = errors.New("coalesce: the round's function panicked")

// Started is how many rounds have started.
func (r *Rounds[T]) Started() uint64 { return r.rounds.Load() }
