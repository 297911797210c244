// Package outbox delivers the hub's queued OpenFGA tuple changes
// (authz_outbox) and repairs drift between PostgreSQL's expected tuples and
// OpenFGA.
//
// Invariants: an entry is marked delivered only after OpenFGA acknowledged
// it, so a crash at any point leaves it pending and a later worker delivers
// it again; authz.Client.Write is idempotent, so delivering twice is
// harmless. Entries of one batch are collapsed to the last operation per
// tuple, which is the state the database holds.
package outbox

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/droverhq/drover/authz"
	"github.com/droverhq/drover/hub/internal/store"
)

// Config configures a Worker.
type Config struct {
	Store  *store.Store
	Authz  *authz.Client
	Logger *slog.Logger
	Now    func() time.Time
	// Poll is how often the worker looks for entries when not kicked.
	Poll time.Duration
	// ReconcileEvery is the reconciler's period; 0 disables it.
	ReconcileEvery time.Duration
	// Batch is the most entries delivered per round (default 100).
	Batch int
	// BeforeWrite and AfterWrite are fault-injection hooks for tests: they
	// run around the OpenFGA write and may cancel the worker's context to
	// simulate a crash at that point.
	BeforeWrite, AfterWrite func()
	// Changed, if set, runs after every successful OpenFGA write, so
	// caches of permission decisions can be dropped.
	Changed func()
	// Restored, if set, runs once Run's first reconcile has succeeded and
	// the repairs it queued are delivered: from then on OpenFGA holds what
	// the database expected at start. Run tries that first reconcile again
	// at every poll until it succeeds.
	Restored func()
}

// Worker delivers the outbox. Run it under a supervisor; one per hub
// replica is safe (deliveries are idempotent).
type Worker struct {
	cfg  Config
	kick chan struct{}

	stats Stats
}

// Stats count what the worker did since it started, for the hub's
// metrics: entries it delivered, deliveries OpenFGA refused or did not
// answer (retried), and tuples the reconciler found drifted and queued.
type Stats struct {
	Delivered, Failed, Repaired atomic.Int64
}

// Stats returns the worker's counters.
func (w *Worker) Stats() *Stats { return &w.stats }

// New validates cfg and returns a worker.
func New(cfg Config) (*Worker, error) {
	if cfg.Store == nil || cfg.Authz == nil {
		return nil, errors.New("outbox: store and authz client are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Poll <= 0 {
		cfg.Poll = time.Second
	}
	if cfg.Batch <= 0 {
		cfg.Batch = 100
	}
	return &Worker{cfg: cfg, kick: make(chan struct{}, 1)}, nil
}

// Kick asks the worker to look at the outbox now (after a commit).
func (w *Worker) Kick() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// Run delivers until ctx ends. Delivery errors are logged and retried on
// the next round; Run returns only ctx's error.
func (w *Worker) Run(ctx context.Context) error {
	poll := time.NewTicker(w.cfg.Poll)
	defer poll.Stop()
	var reconcile <-chan time.Time
	first := w.cfg.ReconcileEvery > 0 // the start's reconcile is still to be done
	if first {
		t := time.NewTicker(w.cfg.ReconcileEvery)
		defer t.Stop()
		reconcile = t.C
	}
	restored := w.cfg.Restored == nil
	for {
		if first {
			if n, err := w.Reconcile(ctx); err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				w.cfg.Logger.Warn("authz reconcile failed", "err", err)
			} else {
				first = false
				if n > 0 {
					w.cfg.Logger.Info("authz drift found at start: delivering the repairs", "tuples", n)
				}
			}
		}
		drained := false
		for {
			n, err := w.DeliverOnce(ctx)
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if err != nil {
				w.cfg.Logger.Warn("authz outbox delivery failed", "err", err)
				break
			}
			if n < w.cfg.Batch {
				drained = true
				break
			}
		}
		if !restored && !first && drained {
			restored = true
			w.cfg.Restored()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-w.kick:
		case <-poll.C:
		case <-reconcile:
			if n, err := w.Reconcile(ctx); err != nil && ctx.Err() == nil {
				w.cfg.Logger.Warn("authz reconcile failed", "err", err)
			} else if n > 0 {
				w.cfg.Logger.Info("authz drift repaired", "tuples", n)
			}
		}
	}
}

// DeliverOnce delivers one batch and returns how many entries it handled.
func (w *Worker) DeliverOnce(ctx context.Context) (int, error) {
	entries, err := w.cfg.Store.Outbox.Pending(ctx, w.cfg.Batch)
	if err != nil || len(entries) == 0 {
		return 0, err
	}
	last := make(map[authz.Tuple]bool, len(entries)) // tuple -> delete?
	var order []authz.Tuple
	ids := make([]int64, len(entries))
	for i, e := range entries {
		if _, ok := last[e.Tuple]; !ok {
			order = append(order, e.Tuple)
		}
		last[e.Tuple] = e.Delete
		ids[i] = e.ID
	}
	var writes, deletes []authz.Tuple
	for _, t := range order {
		if last[t] {
			deletes = append(deletes, t)
		} else {
			writes = append(writes, t)
		}
	}
	if w.cfg.BeforeWrite != nil {
		w.cfg.BeforeWrite()
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
	}
	if err := w.cfg.Authz.Write(ctx, writes, deletes); err != nil {
		w.stats.Failed.Add(1)
		if ctx.Err() == nil {
			if merr := w.cfg.Store.Outbox.MarkFailed(ctx, ids, err); merr != nil {
				return 0, errors.Join(err, merr)
			}
		}
		return 0, err
	}
	if w.cfg.Changed != nil {
		w.cfg.Changed()
	}
	if w.cfg.AfterWrite != nil {
		w.cfg.AfterWrite()
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
	}
	if err := w.cfg.Store.Outbox.MarkDelivered(ctx, ids, w.cfg.Now()); err != nil {
		return len(entries), err
	}
	w.stats.Delivered.Add(int64(len(entries)))
	return len(entries), nil
}

// Reconcile compares the database's expected tuples with OpenFGA's and
// queues repairs for the difference; it returns how many it queued.
func (w *Worker) Reconcile(ctx context.Context) (int, error) {
	expected, err := w.cfg.Store.Outbox.ExpectedTuples(ctx)
	if err != nil {
		return 0, err
	}
	actual, err := w.cfg.Authz.ReadAll(ctx, authz.ReadFilter{})
	if err != nil {
		return 0, err
	}
	have := make(map[authz.Tuple]bool, len(actual))
	for _, t := range actual {
		have[t] = true
	}
	want := make(map[authz.Tuple]bool, len(expected))
	var missing, extra []authz.Tuple
	for _, t := range expected {
		want[t] = true
		if !have[t] {
			missing = append(missing, t)
		}
	}
	for _, t := range actual {
		if !want[t] {
			extra = append(extra, t)
		}
	}
	if len(missing)+len(extra) == 0 {
		return 0, nil
	}
	n, err := w.cfg.Store.Outbox.EnqueueRepairs(ctx, missing, extra)
	if n > 0 {
		w.stats.Repaired.Add(int64(n))
		w.Kick()
	}
	return n, err
}
