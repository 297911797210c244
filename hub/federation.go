package hub

import (
	"context"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/hub/internal/fanout"
	"github.com/droverhq/drover/hub/internal/store"
)

// The federation stream (GET /v1/watch, fedstream.go) serves the index by
// version. Versions are taken when rows are written, not when their
// transactions commit, so a stream may only serve up to a horizon below
// which no running transaction holds a version: the federation worker
// (one per replica) computes it after every notification of a change
// (store.IndexHorizon) and hands it to the replica's streams through a
// broker that never blocks it (hub/internal/fanout).
//
// Horizon: a round reads the highest version taken, hi, and the running
// transactions that took one. A writer first seen in a round took its
// versions after the previous round read hi (it takes its lock before its
// first version, and was not holding it at the previous round), so the
// horizon is the least of hi and, for each running writer, the hi of the
// round before it was first seen. While writers run, rounds repeat every
// horizonPoll (one that rolls back announces nothing).

// indexNote is what the federation worker tells the streams: the horizon
// rose to index; or the worker may have missed changes (gap: a reset);
// or permissions changed (authz: the streams recompute what their caller
// may read).
type indexNote struct {
	index      int64
	gap, authz bool
}

// horizonPoll is how often the horizon is read again while transactions
// holding index versions run.
const horizonPoll = 500 * time.Millisecond

// federation is a replica's federation worker and its streams.
type federation struct {
	store  *store.Store
	srv    *Server
	broker *fanout.Broker[indexNote]
	kick   chan struct{}
	ready  chan struct{}

	mu      sync.Mutex
	index   int64            // the horizon
	lastHi  int64            // hi of the last round (-1: none yet)
	pending map[string]int64 // running writers: the bound of their versions
	isReady bool
	per     map[string]int // each identity's open streams
	streams map[*fedStream]struct{}
}

func newFederation(s *Server) *federation {
	return &federation{store: s.store, srv: s, broker: fanout.New[indexNote](), kick: make(chan struct{}, 1),
		ready: make(chan struct{}), lastHi: -1, pending: map[string]int64{}, per: map[string]int{}, streams: map[*fedStream]struct{}{}}
}

// Run listens for changes of the index and publishes the horizon to the
// streams until ctx ends. A lost LISTEN connection is listened again with
// backoff, and the streams get a gap note once it is back.
func (f *federation) Run(ctx context.Context) error {
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return f.listen(gctx) })
	g.Go(func() error { return f.rounds(gctx) })
	return g.Wait()
}

func (f *federation) listen(ctx context.Context) error {
	lost := false
	backoff := 100 * time.Millisecond
	for {
		err := f.store.ListenIndexChanges(ctx, func() {
			backoff = 100 * time.Millisecond
			if lost {
				// Changes committed while away were not announced.
				f.srv.cfg.Logger.Info("federation stream: listening again; streams reset")
				f.publishGap(ctx)
			}
			f.wake()
		}, f.wake)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		lost = true
		f.srv.cfg.Logger.Warn("federation stream: index notifications lost; listening again", "err", err)
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		backoff = min(2*backoff, 30*time.Second)
	}
}

func (f *federation) wake() {
	select {
	case f.kick <- struct{}{}:
	default:
	}
}

// rounds reads the horizon on every wake, and every horizonPoll while
// writers run.
func (f *federation) rounds(ctx context.Context) error {
	t := time.NewTicker(horizonPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-f.kick:
		case <-t.C:
			f.mu.Lock()
			idle := len(f.pending) == 0 && f.isReady
			f.mu.Unlock()
			if idle {
				continue
			}
		}
		if err := f.round(ctx); err != nil && ctx.Err() == nil {
			f.srv.cfg.Logger.Warn("federation stream: cannot read the index horizon", "err", err)
		}
	}
}

// round reads the horizon and publishes it when it rose.
func (f *federation) round(ctx context.Context) error {
	hi, writers, err := f.store.IndexHorizon(ctx)
	if err != nil {
		return err
	}
	f.mu.Lock()
	bound := hi
	pending := make(map[string]int64, len(writers))
	for _, w := range writers {
		b, ok := f.pending[w]
		if !ok {
			b = max(f.lastHi, 0)
		}
		pending[w] = b
		bound = min(bound, b)
	}
	f.pending, f.lastHi = pending, hi
	rose := bound > f.index
	f.index = max(f.index, bound)
	index := f.index
	first := !f.isReady
	f.isReady = true
	f.mu.Unlock()
	if first {
		close(f.ready)
	}
	if rose {
		f.broker.Publish(indexNote{index: index})
	}
	return nil
}

// publishGap tells the streams they may have missed changes.
func (f *federation) publishGap(ctx context.Context) {
	if err := f.round(ctx); err != nil {
		f.srv.cfg.Logger.Warn("federation stream: cannot read the index horizon", "err", err)
	}
	f.broker.Publish(indexNote{index: f.horizon(), gap: true})
}

// authzChanged tells the streams that permissions changed.
func (f *federation) authzChanged() { f.broker.Publish(indexNote{index: f.horizon(), authz: true}) }

// horizon is the index the streams may serve up to.
func (f *federation) horizon() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.index
}

// open counts a stream of p's, refusing one past max (negative: no bound).
func (f *federation) open(st *fedStream, max int) error {
	id := st.p.Identity.ID
	f.mu.Lock()
	defer f.mu.Unlock()
	if max >= 0 && f.per[id] >= max {
		return api.Errorf(api.CodeTooMany, "%s holds %d federation streams open on this hub already, its most: "+
			"close some (a stream left open by a program that forgot it counts too)", st.p.Identity.Name(), max)
	}
	f.per[id]++
	f.streams[st] = struct{}{}
	return nil
}

func (f *federation) close(st *fedStream) {
	id := st.p.Identity.ID
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.streams, st)
	if f.per[id]--; f.per[id] <= 0 {
		delete(f.per, id)
	}
}

// endSession ends the streams opened with a token of session sid.
func (f *federation) endSession(sid string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for st := range f.streams {
		if st.p.SID == sid {
			st.cancel()
		}
	}
}

// count counts the open streams (for tests).
func (f *federation) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.streams)
}
