// Package indexer keeps the hub's model index current: it follows every
// registered controller's event stream (/v1/events), resumed from the
// position the hub last applied, and applies the model summaries to the
// index in PostgreSQL, adopting models created on a controller directly.
//
// Only the hub replica holding the indexer's advisory lock follows; the
// others wait for it. A controller's stream starts again from a reset
// every Config.ResyncEvery, which repairs whatever the index came to hold
// wrong. Writes are paced per controller (Config.WriteRate) and adoption
// bounded (Config.MaxModels): a controller an organization runs cannot
// fill or busy the hub's database.
package indexer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
	"golang.org/x/time/rate"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/hub/internal/store"
	"github.com/droverhq/drover/internal/supervise"
)

// Controller health as the indexer records it.
const (
	StatusConnected    = "connected"
	StatusDisconnected = "disconnected"
)

// indexerLockKey is the PostgreSQL advisory lock held by the one hub
// replica that runs the indexer.
const indexerLockKey int64 = 0x64726f7665720001

// Config is what the indexer needs.
type Config struct {
	Store  *store.Store
	Logger *slog.Logger
	Now    func() time.Time
	// DefaultOrg owns the models adopted from a controller no
	// organization registered.
	DefaultOrg string
	// ResyncEvery is how often each controller's subscription starts
	// again from a reset, whatever the hub last applied.
	ResyncEvery time.Duration
	// MaxModels bounds the models adopted for one controller (0: none).
	MaxModels int
	// WriteRate bounds each controller's index writes per second (0:
	// none).
	WriteRate int
	// Poll is how often a replica without the lock retries, and how often
	// the leader checks it still holds the lock.
	Poll time.Duration
	// MaxEventFrame bounds one frame of a controller's event stream (a
	// reset frame of 100,000 models is about 30 MB): a controller, broken
	// or not the operator's, cannot make the hub hold more.
	MaxEventFrame int64
	// Kick wakes the outbox worker: adopted and forgotten models change
	// tuples.
	Kick func()
	// Subscribe dials the controller's /v1/events with the query q.
	Subscribe func(ctx context.Context, c store.Controller, q url.Values) (*websocket.Conn, error)
}

func (c *Config) validate() error {
	if c.Store == nil || c.Logger == nil || c.Now == nil || c.Kick == nil || c.Subscribe == nil {
		return errors.New("indexer: Config needs Store, Logger, Now, Kick and Subscribe")
	}
	if c.ResyncEvery <= 0 || c.Poll <= 0 || c.MaxEventFrame <= 0 || c.MaxModels < 0 || c.WriteRate < 0 {
		return errors.New("indexer: ResyncEvery, Poll and MaxEventFrame must be positive, MaxModels and WriteRate not negative")
	}
	return nil
}

// Indexer keeps the model index current: one /v1/events subscription per
// registered controller, resumed from controllers.event_index, applying
// model summaries to the index. Only the replica holding indexerLockKey
// runs it; the others wait for the lock.
type Indexer struct {
	cfg   Config
	store *store.Store
	kickc chan struct{}
	// leading is set while this replica holds the lock and runs the
	// followers (drover_hub_indexer_leader).
	leading atomic.Bool
	// resyncs counts the resets applied; drifted the models the index had
	// wrong while it was at the controller's index
	// (drover_hub_index_resyncs_total, drover_hub_index_drift_repaired_total).
	resyncs, drifted atomic.Int64
	// unadopted counts the models left unindexed past Config.MaxModels
	// (drover_hub_models_not_adopted_total).
	unadopted atomic.Int64
	// slowed counts the writes that had to wait for Config.WriteRate
	// (drover_hub_index_writes_slowed_total).
	slowed atomic.Int64
}

// New builds an indexer from a complete cfg; Run runs it.
func New(cfg Config) (*Indexer, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Indexer{cfg: cfg, store: cfg.Store, kickc: make(chan struct{}, 1)}, nil
}

// errResync ends a subscription that is due to start again from a reset.
var errResync = errors.New("due for a resynchronisation")

// Kick makes the leader re-list controllers now (one was added or removed).
func (ix *Indexer) Kick() {
	select {
	case ix.kickc <- struct{}{}:
	default:
	}
}

// Run competes for the lock and, while holding it, follows every
// controller. It returns when ctx ends.
func (ix *Indexer) Run(ctx context.Context) error {
	for {
		lock, ok, err := ix.store.TryAdvisoryLock(ctx, indexerLockKey)
		if err != nil && ctx.Err() == nil {
			ix.cfg.Logger.Warn("indexer: advisory lock", "err", err)
		}
		if ok {
			ix.cfg.Logger.Info("indexer: leading")
			ix.leading.Store(true)
			err = ix.lead(ctx, lock)
			ix.leading.Store(false)
			lock.Release(ctx)
			if ctx.Err() != nil {
				return ctx.Err()
			}
			ix.cfg.Logger.Warn("indexer: lost leadership", "err", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(ix.cfg.Poll):
		case <-ix.kickc:
		}
	}
}

// lead runs one follower per controller until ctx ends or the lock is
// lost: it starts one for each controller registered, again for one whose
// follower ended, and stops those of controllers no longer registered.
// It checks the lock every poll: a PostgreSQL restart ends the lock's
// session, and another replica may then take the lock and lead too.
func (ix *Indexer) lead(ctx context.Context, lock *store.AdvisoryLock) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type follower struct {
		cancel context.CancelFunc
		done   chan struct{}
	}
	following := map[string]follower{}
	for {
		cs, err := ix.store.Controllers.List(ctx, nil, true)
		if err != nil {
			return err
		}
		listed := make(map[string]bool, len(cs))
		for _, c := range cs {
			listed[c.UUID] = true
			if f, ok := following[c.UUID]; ok {
				select {
				case <-f.done: // it found the controller gone, which is back
					f.cancel()
				default:
					continue
				}
			}
			fctx, fcancel := context.WithCancel(ctx)
			f := follower{cancel: fcancel, done: make(chan struct{})}
			following[c.UUID] = f
			wg.Add(1)
			go func() { // one supervised follower per controller
				defer wg.Done()
				defer close(f.done)
				ix.follow(fctx, c.UUID)
			}()
		}
		for id, f := range following {
			if !listed[id] { // removed
				f.cancel()
				delete(following, id)
			}
		}
		for relist := time.After(ix.cfg.Poll * 6); ; {
			select {
			case <-ctx.Done():
				return nil
			case <-ix.kickc:
			case <-relist:
			case <-time.After(ix.cfg.Poll):
				if err := lock.Held(ctx); err != nil {
					return err
				}
				continue
			}
			break
		}
	}
}

// follow subscribes to one controller until ctx ends or the controller is
// unregistered, reconnecting under supervise (200ms doubling to 30s, from
// 200ms again after a subscription that lasted a minute) and recording
// health on every change.
func (ix *Indexer) follow(ctx context.Context, id string) {
	// The first subscription resumes; a full reset follows every
	// resyncEvery.
	fs := &following{lastReset: time.Now(), unadopted: map[string]bool{}}
	if ix.cfg.WriteRate > 0 {
		fs.writes = rate.NewLimiter(rate.Limit(ix.cfg.WriteRate), 10*ix.cfg.WriteRate)
	}
	_ = supervise.Run(ctx, supervise.Config{Name: "indexer " + id, Logger: ix.cfg.Logger,
		Min: 200 * time.Millisecond, Max: 30 * time.Second, HealthyAfter: time.Minute,
		Message: "indexer: controller disconnected", Level: slog.LevelInfo},
		func(ctx context.Context) error { return ix.followOnce(ctx, id, fs) })
}

// followOnce subscribes to the controller until a subscription fails for
// another reason than a due resynchronisation, and records the failure as
// the controller's health. It returns nil when the controller is no
// longer registered, which ends follow.
func (ix *Indexer) followOnce(ctx context.Context, id string, fs *following) error {
	for {
		c, err := ix.store.Controllers.ByUUID(ctx, id)
		if err != nil {
			return nil // unregistered
		}
		if !fs.summarySeeded {
			fs.summary, fs.summarySeeded = summaryOf(c.Health), true
		}
		err = ix.subscribe(ctx, c, fs)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if errors.Is(err, errResync) {
			continue
		}
		health := fs.health(map[string]any{"error": err.Error()})
		// Not heard from now: when it last was stays as recorded.
		if herr := ix.store.Controllers.SetHealth(context.WithoutCancel(ctx), id, StatusDisconnected, health, 0, "", time.Time{}); herr != nil {
			ix.cfg.Logger.Warn("indexer: record health", "controller", c.Name, "err", herr)
		}
		return fmt.Errorf("controller %s: %w", c.Name, err)
	}
}

// readTimeout drops a silent connection: the controller sends keepalives
// every 30 seconds.
const readTimeout = 75 * time.Second

// following is what one controller's follower keeps across subscriptions.
type following struct {
	// lastReset is when the hub last applied a reset of the controller.
	lastReset time.Time
	// unadopted are the models the controller lists that the index left
	// out, past Config.MaxControllerModels (at most maxUnadoptedTracked).
	unadopted map[string]bool
	// writes paces the controller's index writes (Config.IndexWriteRate);
	// nil for no bound. slowedSaid is when the hub last logged waiting.
	writes     *rate.Limiter
	slowedSaid time.Time
	// summary is the controller's version and nodes as it last sent
	// them (nil: it never did), recorded with every health observation:
	// the controller sends it only when it changes. It starts as the
	// one recorded (summarySeeded), which a hub that starts following
	// keeps until the controller says otherwise.
	summary       *api.ControllerSummary
	summarySeeded bool
}

// maxUnadoptedTracked bounds following.unadopted: the hub's memory is not
// the controller's to fill either.
const maxUnadoptedTracked = 100000

// subscribe follows the controller until the subscription fails, or until
// it is due for a resynchronisation (errResync): the next subscription
// then asks for a reset (since=0). A resumed subscription only hears of
// what changed; a reset says what the controller holds, so whatever the
// index came to hold wrong (an event lost to a bug of either side) is
// repaired within resyncEvery, as the outbox's reconciler repairs
// OpenFGA's tuples.
func (ix *Indexer) subscribe(ctx context.Context, c store.Controller, fs *following) error {
	// Asked from index 0 (a new controller, or a due resync), a controller
	// answers with a reset first. One that does not (broken or hostile)
	// fails like any other subscription, with backoff: otherwise each due
	// resync would end at its first frame and the next start at once.
	fromZero := c.EventIndex == 0 || time.Since(fs.lastReset) >= ix.cfg.ResyncEvery
	// The position names the entry in the controller's history (its
	// mark), so that a controller restored from an older copy that has
	// gone past the index since answers with a reset.
	q := url.Values{"since": {strconv.FormatUint(c.EventIndex, 10)}}
	if c.EventMark != "" {
		q.Set("mark", c.EventMark)
	}
	if fromZero {
		q = url.Values{"since": {"0"}}
	}
	conn, err := ix.cfg.Subscribe(ctx, c, q)
	if err != nil {
		return err
	}
	defer conn.Close()
	conn.SetReadLimit(ix.cfg.MaxEventFrame)
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	// Subscribed is connected, before the first frame: a controller with
	// nothing to report sends its first keepalive only after 30 s.
	if err := ix.store.Controllers.SetHealth(ctx, c.UUID, StatusConnected, fs.health(nil), c.EventIndex, c.EventMark, ix.cfg.Now()); err != nil {
		return err
	}
	ix.cfg.Logger.Info("indexer: following controller", "controller", c.Name, "since", c.EventIndex)
	for {
		conn.SetReadDeadline(time.Now().Add(readTimeout))
		var f api.EventFrame
		if err := conn.ReadJSON(&f); err != nil {
			return err
		}
		if fromZero && f.Type != api.EventFrameReset {
			return fmt.Errorf("the controller answered a subscription from index 0 without a reset (a %q frame first)", f.Type)
		}
		fromZero = false
		if err := ix.apply(ctx, &c, &f, fs); err != nil {
			return err
		}
		if f.Type == api.EventFrameReset {
			fs.lastReset = time.Now()
		} else if time.Since(fs.lastReset) >= ix.cfg.ResyncEvery {
			return errResync
		}
	}
}

// apply brings the index up to date with one frame and records the
// controller as connected at the frame's index.
func (ix *Indexer) apply(ctx context.Context, c *store.Controller, f *api.EventFrame, fs *following) error {
	st := ix.store
	now := ix.cfg.Now()
	if err := ix.followAddresses(ctx, c, f); err != nil {
		return err
	}
	// A reset says all the controller reports: one that sends no
	// summary (older than the field) has none.
	if f.Controller != nil || f.Type == api.EventFrameReset {
		fs.summary = f.Controller
	}
	var same map[string]bool
	if f.Type == api.EventFrameReset {
		var err error
		if same, err = ix.reset(ctx, c, f); err != nil {
			return err
		}
		clear(fs.unadopted) // the reset lists them all again
	}
	// How many models the index holds for the controller: counted afresh
	// in each frame that adopts (models placed through the hub meanwhile
	// count too), -1 until then.
	models, unadopted := -1, 0
	for _, m := range f.Models {
		if same[m.UUID] {
			continue // a reset repeating what the index holds writes nothing
		}
		sum := store.Model{UUID: m.UUID, Name: m.Name, ControllerUUID: c.UUID, Life: string(m.Life), Status: m.Status,
			ApplicationCount: m.ApplicationCount, UnitCount: m.UnitCount, MachineCount: m.MachineCount,
			EventIndex: f.Index, CreatedAt: m.CreatedAt}
		charms := charmsOf(m.Charms)
		if err := ix.pace(ctx, c, fs); err != nil {
			return err
		}
		indexed, err := st.Models.Summarize(ctx, store.Summary{Model: sum, Charms: charms}, now)
		if err != nil {
			return err
		}
		delete(fs.unadopted, m.UUID)
		if !indexed && m.Life == api.Alive {
			if ok, err := ix.roomFor(ctx, c, &models); err != nil {
				return err
			} else if !ok {
				if !fs.unadopted[m.UUID] && len(fs.unadopted) < maxUnadoptedTracked {
					fs.unadopted[m.UUID] = true
				}
				unadopted++
				continue
			}
			adopted, err := ix.adopt(ctx, *c, sum, charms, m.Owner)
			if err != nil {
				return err
			}
			if adopted && models >= 0 {
				models++
			}
		}
	}
	if unadopted > 0 {
		ix.unadopted.Add(int64(unadopted))
		ix.cfg.Logger.Warn("indexer: the controller holds more models than the hub indexes for one controller: not adopting the others",
			"controller", c.Name, "limit", ix.cfg.MaxModels, "not-adopted", unadopted)
	}
	if err := ix.remove(ctx, c, f, fs); err != nil {
		return err
	}
	if f.Index >= c.EventIndex {
		c.EventIndex, c.EventMark = f.Index, f.Mark
	}
	health := fs.health(nil)
	if n := len(fs.unadopted); n > 0 {
		health["models-not-indexed"], health["model-limit"] = n, ix.cfg.MaxModels
	}
	return st.Controllers.SetHealth(ctx, c.UUID, StatusConnected, health, f.Index, f.Mark, now)
}

// remove drops from the index the models the frame says the controller
// removed (those the index holds on it).
func (ix *Indexer) remove(ctx context.Context, c *store.Controller, f *api.EventFrame, fs *following) error {
	st := ix.store
	for _, id := range f.Removed {
		delete(fs.unadopted, id)
		if m, err := st.Models.ByUUID(ctx, id); err != nil || m.ControllerUUID != c.UUID {
			continue
		}
		if err := ix.pace(ctx, c, fs); err != nil {
			return err
		}
		if err := st.Models.Delete(ctx, id); err != nil {
			return err
		}
		ix.cfg.Kick()
	}
	return nil
}

// pace waits, if need be, before one more index write for c
// (Config.IndexWriteRate). While it waits the hub does not read the
// controller's stream, whose sending then waits too.
func (ix *Indexer) pace(ctx context.Context, c *store.Controller, fs *following) error {
	if fs.writes == nil {
		return nil
	}
	r := fs.writes.Reserve()
	d := r.Delay()
	if d == 0 {
		return nil
	}
	if ix.slowed.Add(1) == 1 || time.Since(fs.slowedSaid) > time.Minute {
		fs.slowedSaid = time.Now()
		ix.cfg.Logger.Warn("indexer: the controller's events write to the index faster than it takes them: reading them more slowly",
			"controller", c.Name, "rate", ix.cfg.WriteRate)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		r.Cancel()
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// roomFor reports whether the index may adopt one more model of c
// (Config.MaxControllerModels). The count is read from the index once per
// frame, and kept up to date with the frame's adoptions.
func (ix *Indexer) roomFor(ctx context.Context, c *store.Controller, models *int) (bool, error) {
	if ix.cfg.MaxModels == 0 {
		return true, nil
	}
	if *models < 0 {
		n, err := ix.store.Controllers.CountModels(ctx, c.UUID)
		if err != nil {
			return false, err
		}
		*models = n
	}
	return *models < ix.cfg.MaxModels, nil
}

// reset applies what a reset frame says beyond its summaries. A reset
// below the index the hub has reached means the controller's history went
// back (its state restored from an older backup): the index is set back
// with it, or the controller's summaries, all older than the hub's, would
// be ignored. The models the hub indexes there and the frame does not list
// are forgotten (store.Models.Forget), not deleted: one that shows again
// on the controller gets back its owner and grants. It returns the models
// whose summary the index already holds as the frame gives it.
func (ix *Indexer) reset(ctx context.Context, c *store.Controller, f *api.EventFrame) (same map[string]bool, err error) {
	st, now := ix.store, ix.cfg.Now()
	// At the index the hub had reached, the controller and the index must
	// agree: any difference is drift, repaired by this reset. (Past it,
	// differences are changes the hub had not heard of yet; before it, or
	// at another entry of that index, the controller's history went back.)
	atIndex := f.Index == c.EventIndex && c.EventIndex > 0 && (f.Mark == "" || c.EventMark == "" || f.Mark == c.EventMark)
	if f.Index < c.EventIndex {
		ix.cfg.Logger.Warn("indexer: the controller's history went back (its state restored from an older backup?): following it from its index",
			"controller", c.Name, "hub-index", c.EventIndex, "controller-index", f.Index)
		if err := st.Controllers.Rewind(ctx, c.UUID, f.Index, now); err != nil {
			return nil, err
		}
		c.EventIndex, c.EventMark = f.Index, ""
	}
	known, err := st.Controllers.ModelSummaries(ctx, c.UUID)
	if err != nil {
		return nil, err
	}
	listed, same := map[string]bool{}, map[string]bool{}
	var wrong []string
	for _, m := range f.Models {
		listed[m.UUID] = true
		k, ok := known[m.UUID]
		switch {
		case !ok:
		case k.Life == string(m.Life) && k.Status == m.Status && k.ApplicationCount == m.ApplicationCount &&
			k.UnitCount == m.UnitCount && k.MachineCount == m.MachineCount && slices.Equal(k.Charms, charmsOf(m.Charms)):
			same[m.UUID] = true
		default:
			wrong = append(wrong, m.UUID)
		}
	}
	var gone []string
	for id := range known {
		if !listed[id] {
			gone = append(gone, id)
		}
	}
	slices.Sort(gone)
	forgotten, err := st.Models.Forget(ctx, c.UUID, gone, now)
	if err != nil {
		return nil, err
	}
	if len(forgotten) > 0 {
		ix.cfg.Logger.Info("indexer: forgot models the controller no longer lists", "controller", c.Name, "models", forgotten)
		ix.cfg.Kick()
	}
	ix.resyncs.Add(1)
	if atIndex && len(wrong)+len(forgotten) > 0 {
		ix.drifted.Add(int64(len(wrong) + len(forgotten)))
		ix.cfg.Logger.Warn("indexer: the index had drifted from the controller: repaired from its reset",
			"controller", c.Name, "index", f.Index, "summaries", wrong, "forgotten", forgotten)
	}
	return same, nil
}

// adopt indexes a model created on the controller directly (not through
// the hub), so that the controller's and its organization's administrators
// find it at the hub: owned by the controller's organization (the hub's
// default organization for a shared controller), with no owner and no
// grant but the structural ones. A model whose every candidate name is
// taken is skipped (and tried again on its next event or reset): one
// model never stops the frame.
func (ix *Indexer) adopt(ctx context.Context, c store.Controller, m store.Model, charms []store.Charm, spokeOwner string) (bool, error) {
	if err := api.CheckModelName(m.Name); err != nil {
		// No controller of ours names a model so: not indexed.
		ix.cfg.Logger.Warn("indexer: not adopting a model with an invalid name", "controller", c.Name, "uuid", m.UUID, "err", err)
		return false, nil
	}
	m.Org = c.Org
	if m.Org == "" {
		m.Org = ix.cfg.DefaultOrg
	}
	got, adopted, err := ix.store.Models.Adopt(ctx, store.Adoption{Model: m, ControllerName: c.Name,
		SpokeOwner: spokeOwner, Charms: charms, At: ix.cfg.Now()})
	if errors.Is(err, store.ErrAlreadyExists) {
		ix.cfg.Logger.Warn("indexer: cannot adopt model", "controller", c.Name, "model", m.UUID, "err", err)
		return false, nil
	}
	if err != nil || !adopted {
		return false, err
	}
	ix.cfg.Kick()
	ix.cfg.Logger.Info("indexer: adopted model", "controller", c.Name, "model", got.UUID, "name", got.Name, "org", got.Org)
	return true, nil
}
