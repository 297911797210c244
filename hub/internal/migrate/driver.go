// Package migrate is the hub's migration driver: it walks every persisted
// model migration (store.ModelMigrations) through its phases
// (hub/internal/migration), calling the source and target controllers'
// migration routes (api/migration.go).
//
// Invariants:
//   - Only the hub replica holding the driver's advisory lock acts; it
//     resumes every active migration from its persisted phase, so a hub
//     restarted at any point carries on where the last one stopped.
//   - Each step records its intent before calling a controller, and the
//     call carries the step's idempotency key (store.Migration.StepKey): a
//     step whose result was not recorded is repeated with the same key,
//     and the controller answers it as it did the first time.
//   - Before SUCCESS, a step that keeps failing, an agent that fails or
//     does not report in time, or a user's abort request moves the
//     migration to ABORTING, which undoes it (target import removed,
//     source released) until done. From SUCCESS on a migration is never
//     aborted: its steps are retried until they succeed (a reap that keeps
//     failing ends in REAPFAILED, the model migrated).
//   - The hub index names the target controller for the model, with the
//     matching authorization tuple, in one transaction
//     (store.ModelMigrations.SwitchController) once the target has
//     activated the model.
package migrate

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/hub/internal/migration"
	"github.com/droverhq/drover/hub/internal/store"
)

// LockKey is the PostgreSQL advisory lock held by the one hub replica that
// runs the driver.
const LockKey int64 = 0x64726f7665720003

// Client is what the driver calls on one controller: the migration routes
// of api.Client.
type Client interface {
	MigrationPrecheck(ctx context.Context, model string, step api.MigrationStep, req api.MigrationPrecheckRequest) (*api.MigrationPrecheckResult, error)
	MigrationQuiesce(ctx context.Context, model string, step api.MigrationStep) (*api.Model, error)
	MigrationRelease(ctx context.Context, model string, step api.MigrationStep) (*api.Model, error)
	MigrationSetPhase(ctx context.Context, model string, step api.MigrationStep, phase string, target *api.TargetController) (*api.Model, error)
	MigrationExport(ctx context.Context, model string, step api.MigrationStep) ([]byte, string, uint64, error)
	MigrationImport(ctx context.Context, model string, step api.MigrationStep, export []byte, sha string) (*api.Model, error)
	MigrationActivate(ctx context.Context, model string, step api.MigrationStep) (*api.Model, error)
	MigrationAbortImport(ctx context.Context, model string, step api.MigrationStep) error
	MigrationModel(ctx context.Context, model, migrationID string) (*api.Model, error)
	MigrationReap(ctx context.Context, model string, step api.MigrationStep) error
	MigrationLogs(ctx context.Context, model, migrationID string) ([]api.LogRecord, error)
	MigrationSendLogs(ctx context.Context, model string, step api.MigrationStep, recs []api.LogRecord) error
	MigrationMissingBlobs(ctx context.Context, model, migrationID string) ([]string, error)
	MigrationBlob(ctx context.Context, model, migrationID, sha string) ([]byte, error)
	MigrationPutBlob(ctx context.Context, model string, step api.MigrationStep, sha string, data []byte) error
	Close()
}

// Controllers gives a client of a registered controller, authenticated as
// the hub's superuser with short-lived tokens.
type Controllers interface {
	Client(ctx context.Context, controllerUUID string) (Client, error)
}

// Config is what the driver needs. Zero durations and counts take their
// defaults.
type Config struct {
	Logger      *slog.Logger
	Now         func() time.Time
	Store       *store.Store
	Controllers Controllers
	// Kick, optional, wakes the authorization outbox: switching a model
	// to its target queues a tuple change.
	Kick func()
	// Faults, nil in production, is called at each named fault point
	// ("before-call:QUIESCE", "after-persist:EXPORT", ...); an error
	// stops the driver's work on the migration there, as a crash would.
	Faults func(point string) error
	// MinionWait bounds the wait for the agents' reports in a phase
	// (default 15 minutes, Juju's migration-agent-wait-time).
	MinionWait time.Duration
	// Attempts bounds the tries of a step before its phase gives up
	// (default 5); Backoff is the pause after the first failed try,
	// doubling up to MaxBackoff (defaults 1 s and 30 s).
	Attempts            int
	Backoff, MaxBackoff time.Duration
	// Poll is how often the leader looks for new migrations and checks
	// its lock (default 2 s).
	Poll time.Duration
	// ReportPoll is how often the agents' reports are read from the
	// source while the driver waits for them (default 200 ms): every
	// read is one consistent read of one model, and each wait it saves
	// is time the model's hooks are held.
	ReportPoll time.Duration
}

func (c *Config) validate() error {
	if c.Logger == nil || c.Now == nil || c.Store == nil || c.Controllers == nil {
		return errors.New("migrate: Config needs Logger, Now, Store and Controllers")
	}
	if c.MinionWait < 0 || c.Attempts < 0 || c.Backoff < 0 || c.MaxBackoff < 0 || c.Poll < 0 || c.ReportPoll < 0 {
		return errors.New("migrate: durations and Attempts must not be negative")
	}
	defaults := []struct {
		d *time.Duration
		v time.Duration
	}{{&c.MinionWait, 15 * time.Minute}, {&c.Backoff, time.Second}, {&c.MaxBackoff, 30 * time.Second}, {&c.Poll, 2 * time.Second}, {&c.ReportPoll, 200 * time.Millisecond}}
	for _, d := range defaults {
		if *d.d == 0 {
			*d.d = d.v
		}
	}
	if c.Attempts == 0 {
		c.Attempts = 5
	}
	return nil
}

// Driver runs the migrations of the hub.
type Driver struct {
	cfg   Config
	store *store.Store
	wake  chan struct{}

	mu sync.Mutex
	// exports are the exports read in EXPORT, by migration ID, for IMPORT.
	exports map[string]export
	// prechecks are the source's precheck answers, by migration ID.
	prechecks map[string]*api.MigrationPrecheckResult
}

type export struct {
	data []byte
	sha  string
}

// New builds a driver from cfg; Run runs it.
func New(cfg Config) (*Driver, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Driver{cfg: cfg, store: cfg.Store, wake: make(chan struct{}, 1),
		exports: map[string]export{}, prechecks: map[string]*api.MigrationPrecheckResult{}}, nil
}

// Wake makes the leader look for new migrations now.
func (d *Driver) Wake() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// Run competes for the driver's lock and, while holding it, drives every
// active migration, each in its own goroutine. It returns when ctx ends.
func (d *Driver) Run(ctx context.Context) error {
	for {
		lock, ok, err := d.store.TryAdvisoryLock(ctx, LockKey)
		if err != nil && ctx.Err() == nil {
			d.cfg.Logger.Warn("migrate: advisory lock", "err", err)
		}
		if ok {
			d.cfg.Logger.Info("migrate: leading")
			err = d.lead(ctx, lock)
			lock.Release(ctx)
			if ctx.Err() != nil {
				return ctx.Err()
			}
			d.cfg.Logger.Warn("migrate: lost leadership", "err", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(d.cfg.Poll):
		case <-d.wake:
		}
	}
}

// lead drives the active migrations until ctx ends or the lock is lost,
// starting a goroutine for each one not driven yet.
func (d *Driver) lead(ctx context.Context, lock *store.AdvisoryLock) error {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	var mu sync.Mutex
	driving := map[string]bool{}
	for {
		ms, err := d.store.Migrations.List(ctx, store.MigrationFilter{Active: true, Limit: 10000})
		if err != nil {
			return err
		}
		for _, m := range ms {
			mu.Lock()
			busy := driving[m.ID]
			driving[m.ID] = true
			mu.Unlock()
			if busy {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := d.drive(ctx, m.ID); err != nil && ctx.Err() == nil {
					d.cfg.Logger.Warn("migrate: driving a migration stopped", "migration", m.ID, "model", m.ModelName, "err", err)
				}
				mu.Lock()
				delete(driving, m.ID)
				mu.Unlock()
			}()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-d.wake:
		case <-time.After(d.cfg.Poll):
			if err := lock.Held(ctx); err != nil {
				return err
			}
		}
	}
}

// drive takes migration id through its phases until it ends (or stops in
// REAPFAILED), ctx ends, or a step cannot be recorded.
func (d *Driver) drive(ctx context.Context, id string) error {
	defer d.forget(id)
	for {
		m, err := d.store.Migrations.ByID(ctx, id)
		if err != nil {
			return err
		}
		if !m.Phase.Active() {
			return nil
		}
		if err := d.step(ctx, m); err != nil {
			if errors.Is(err, store.ErrPhaseMoved) {
				continue // read it again
			}
			return err
		}
	}
}

func (d *Driver) forget(id string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.exports, id)
	delete(d.prechecks, id)
}

// fault calls the fault hook at point.
func (d *Driver) fault(point string, phase migration.Phase) error {
	if d.cfg.Faults == nil {
		return nil
	}
	if err := d.cfg.Faults(point + ":" + string(phase)); err != nil {
		return fmt.Errorf("fault point %s:%s: %w", point, phase, err)
	}
	return nil
}

// sleep waits for dur or ctx's end.
func sleep(ctx context.Context, dur time.Duration) error {
	t := time.NewTimer(dur)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
