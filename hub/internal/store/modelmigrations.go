package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/droverhq/drover/hub/internal/migration"
)

// ModelMigrations are the persisted model migrations (hub/internal/migration)
// and their events. Advance is the only way a migration's phase changes,
// and only along the edge table.
type ModelMigrations struct{ *db }

// ErrPhaseMoved is Advance's answer when the migration is not in the phase
// the caller read: another driver moved it meanwhile.
var ErrPhaseMoved = errors.New("store: the migration's phase moved meanwhile")

// Migration is one model migration.
type Migration struct {
	ID               string          `json:"id"`
	ModelUUID        string          `json:"model-uuid"`
	ModelName        string          `json:"model-name"`
	SourceController string          `json:"source-controller"` // UUID
	TargetController string          `json:"target-controller"` // UUID
	Phase            migration.Phase `json:"phase"`
	// Attempt counts the tries of the current phase's step; it starts at
	// 0 in each phase and names the step in its idempotency key.
	Attempt int `json:"attempt"`
	// Message is the current progress, Failure why the migration aborts
	// or aborted.
	Message        string          `json:"message,omitempty"`
	Failure        string          `json:"failure,omitempty"`
	AbortRequested bool            `json:"abort-requested,omitempty"`
	Minions        json.RawMessage `json:"minions,omitempty"`
	RequestedBy    string          `json:"requested-by"`
	StartedAt      time.Time       `json:"started-at"`
	UpdatedAt      time.Time       `json:"updated-at"`
	EndedAt        *time.Time      `json:"ended-at,omitempty"`
}

// StepKey is the idempotency key of the migration's current step: a spoke
// that has done the step under this key answers it again without doing it
// twice.
func (m Migration) StepKey() string {
	return fmt.Sprintf("%s/%s/%d", m.ID, m.Phase, m.Attempt)
}

// MigrationEvent is one entry of a migration's history.
type MigrationEvent struct {
	Seq     int64           `json:"seq"`
	At      time.Time       `json:"at"`
	Kind    string          `json:"kind"` // phase, intent, result, abort
	Phase   migration.Phase `json:"phase"`
	Attempt int             `json:"attempt"`
	Detail  string          `json:"detail,omitempty"`
}

// Event kinds.
const (
	EventPhase  = "phase"
	EventIntent = "intent"
	EventResult = "result"
	EventAbort  = "abort"
)

const migrationCols = `id, model_uuid, model_name, source_controller, target_controller, phase, attempt,
	message, failure, abort_requested, minions, requested_by, started_at, updated_at, ended_at`

func scanMigration(r pgx.CollectableRow) (Migration, error) {
	var m Migration
	var id, model, src, dst uuid.UUID
	var phase string
	err := r.Scan(&id, &model, &m.ModelName, &src, &dst, &phase, &m.Attempt, &m.Message, &m.Failure,
		&m.AbortRequested, &m.Minions, &m.RequestedBy, &m.StartedAt, &m.UpdatedAt, &m.EndedAt)
	m.ID, m.ModelUUID, m.SourceController, m.TargetController = id.String(), model.String(), src.String(), dst.String()
	m.Phase = migration.Phase(phase)
	return m, err
}

// NewMigration is what Start needs.
type NewMigration struct {
	ModelUUID, ModelName               string
	SourceController, TargetController string
	RequestedBy                        string
}

// Start records a new migration in PRECHECK. A model already migrating
// gives ErrAlreadyExists.
func (s *ModelMigrations) Start(ctx context.Context, n NewMigration, now time.Time) (Migration, error) {
	var m Migration
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `INSERT INTO model_migrations (id, model_uuid, model_name, source_controller,
			target_controller, phase, requested_by, started_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8) RETURNING `+migrationCols,
			uuid.New(), n.ModelUUID, n.ModelName, n.SourceController, n.TargetController,
			migration.Precheck, n.RequestedBy, now)
		if err != nil {
			return err
		}
		if m, err = pgx.CollectExactlyOneRow(rows, scanMigration); err != nil {
			return err
		}
		if err := setModelMigrationPhase(ctx, tx, m.ModelUUID, m.Phase); err != nil {
			return err
		}
		return appendMigrationEvent(ctx, tx, m.ID, now, EventPhase, m.Phase, 0, "started by "+n.RequestedBy)
	})
	return m, pgErr("start migration", err)
}

// ByID returns one migration.
func (s *ModelMigrations) ByID(ctx context.Context, id string) (Migration, error) {
	if _, err := uuid.Parse(id); err != nil {
		return Migration{}, fmt.Errorf("migration %q: %w", id, ErrNotFound)
	}
	rows, err := s.pool.Query(ctx, `SELECT `+migrationCols+` FROM model_migrations WHERE id = $1`, id)
	if err != nil {
		return Migration{}, pgErr("migration", err)
	}
	m, err := pgx.CollectExactlyOneRow(rows, scanMigration)
	return m, pgErr("migration", err)
}

// MigrationFilter selects migrations; zero fields match all.
type MigrationFilter struct {
	ModelUUID  string
	Controller string // as source or target
	// Active keeps only migrations still holding their model
	// (migration.Phase.Active).
	Active bool
	Limit  int // 0: 100
}

// List returns the migrations the filter selects, newest first.
func (s *ModelMigrations) List(ctx context.Context, f MigrationFilter) ([]Migration, error) {
	q := `SELECT ` + migrationCols + ` FROM model_migrations WHERE true`
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}
	if f.ModelUUID != "" {
		if _, err := uuid.Parse(f.ModelUUID); err != nil {
			return nil, nil
		}
		q += ` AND model_uuid = ` + arg(f.ModelUUID)
	}
	if f.Controller != "" {
		if _, err := uuid.Parse(f.Controller); err != nil {
			return nil, nil
		}
		a := arg(f.Controller)
		q += ` AND (source_controller = ` + a + ` OR target_controller = ` + a + `)`
	}
	if f.Active {
		q += ` AND phase NOT IN ('DONE', 'ABORTED', 'REAPFAILED')`
	}
	limit := f.Limit
	if limit <= 0 {
		limit = 100
	}
	q += ` ORDER BY started_at DESC, id LIMIT ` + arg(limit)
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, pgErr("list migrations", err)
	}
	ms, err := pgx.CollectRows(rows, scanMigration)
	return ms, pgErr("list migrations", err)
}

// Advance moves migration id from phase from to phase to, with message as
// its progress (and, moving to ABORTING, as its failure), and records the
// change. The change must be an edge of the table (migration.ErrEdge
// otherwise); a migration not in from gives ErrPhaseMoved. The
// step's attempt starts again at 0. A migration whose abort was requested
// does not reach SUCCESS (ErrPhaseMoved): RequestAbort and Advance
// serialise on the row, so an abort either is requested before SUCCESS
// and honoured, or refused. The change is audited in its
// transaction (OpMigrationPhase).
func (s *ModelMigrations) Advance(ctx context.Context, id string, from, to migration.Phase, message string, now time.Time) (Migration, error) {
	if err := migration.Check(from, to); err != nil {
		return Migration{}, err
	}
	var m Migration
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		failure := ""
		if to == migration.Aborting {
			failure = message
		}
		rows, err := tx.Query(ctx, `UPDATE model_migrations SET phase = $3, attempt = 0, message = $4,
			failure = CASE WHEN $5 <> '' THEN $5 ELSE failure END, updated_at = $6,
			ended_at = CASE WHEN $7 THEN $6 ELSE ended_at END
			WHERE id = $1 AND phase = $2 AND NOT ($8 AND abort_requested) RETURNING `+migrationCols,
			id, from, to, clip(message, 4096), clip(failure, 4096), now, !to.Active(), to.Migrated())
		if err != nil {
			return err
		}
		m, err = pgx.CollectExactlyOneRow(rows, scanMigration)
		if errors.Is(err, pgx.ErrNoRows) {
			if _, err := s.byIDTx(ctx, tx, id); err != nil {
				return err
			}
			return fmt.Errorf("migration %s is not in %s, or its abort was requested: %w", id, from, ErrPhaseMoved)
		}
		if err != nil {
			return err
		}
		if err := auditPhase(ctx, tx, m, from, now); err != nil {
			return err
		}
		if err := setModelMigrationPhase(ctx, tx, m.ModelUUID, to); err != nil {
			return err
		}
		return appendMigrationEvent(ctx, tx, id, now, EventPhase, to, 0, message)
	})
	if errors.Is(err, ErrPhaseMoved) {
		return Migration{}, err
	}
	return m, pgErr("advance migration", err)
}

// setModelMigrationPhase records phase on the model's index row (gone
// rows, a model reaped and forgotten, are left alone): the row takes a new
// version, so the federation stream carries the phase.
func setModelMigrationPhase(ctx context.Context, tx pgx.Tx, model string, phase migration.Phase) error {
	_, err := tx.Exec(ctx, `UPDATE models SET migration_phase = $2 WHERE uuid = $1 AND migration_phase <> $2`, model, string(phase))
	return err
}

func (s *ModelMigrations) byIDTx(ctx context.Context, tx pgx.Tx, id string) (Migration, error) {
	rows, err := tx.Query(ctx, `SELECT `+migrationCols+` FROM model_migrations WHERE id = $1`, id)
	if err != nil {
		return Migration{}, err
	}
	return pgx.CollectExactlyOneRow(rows, scanMigration)
}

// Intend records that the driver is about to run the step of phase at
// attempt (the migration must still be in phase, ErrPhaseMoved
// otherwise); it makes attempt the migration's current attempt, and
// detail, when given, its progress.
func (s *ModelMigrations) Intend(ctx context.Context, id string, phase migration.Phase, attempt int, detail string, now time.Time) error {
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE model_migrations SET attempt = $3, updated_at = $4,
			message = CASE WHEN $5 <> '' THEN $5 ELSE message END
			WHERE id = $1 AND phase = $2`, id, phase, attempt, now, clip(detail, 4096))
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			if _, err := s.byIDTx(ctx, tx, id); err != nil {
				return err
			}
			return fmt.Errorf("migration %s is not in %s: %w", id, phase, ErrPhaseMoved)
		}
		return appendMigrationEvent(ctx, tx, id, now, EventIntent, phase, attempt, detail)
	})
	if errors.Is(err, ErrPhaseMoved) {
		return err
	}
	return pgErr("record migration step", err)
}

// Record records a step's result as progress (message) and in the history.
func (s *ModelMigrations) Record(ctx context.Context, id string, phase migration.Phase, attempt int, message string, now time.Time) error {
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `UPDATE model_migrations SET message = $3, updated_at = $4
			WHERE id = $1 AND phase = $2`, id, phase, clip(message, 4096), now); err != nil {
			return err
		}
		return appendMigrationEvent(ctx, tx, id, now, EventResult, phase, attempt, message)
	})
	return pgErr("record migration result", err)
}

// SetMinions stores the agents' latest reports.
func (s *ModelMigrations) SetMinions(ctx context.Context, id string, minions json.RawMessage, now time.Time) error {
	_, err := s.pool.Exec(ctx, `UPDATE model_migrations SET minions = $2, updated_at = $3 WHERE id = $1`, id, minions, now)
	return pgErr("record migration agents", err)
}

// ErrNotAbortable is RequestAbort's answer for a migration past SUCCESS
// (or finished).
var ErrNotAbortable = errors.New("store: the migration is past SUCCESS and cannot be aborted")

// RequestAbort asks the driver to abort migration id, on behalf of by. A
// migration that reached SUCCESS or ended gives ErrNotAbortable; asking
// twice is not an error.
func (s *ModelMigrations) RequestAbort(ctx context.Context, id, by string, now time.Time) (Migration, error) {
	var m Migration
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		if m, err = s.byIDTx(ctx, tx, id); err != nil {
			return err
		}
		if m.Phase == migration.Aborting || m.AbortRequested {
			return nil
		}
		if !m.Phase.Abortable() {
			return fmt.Errorf("migration %s is in %s: %w", id, m.Phase, ErrNotAbortable)
		}
		tag, err := tx.Exec(ctx, `UPDATE model_migrations SET abort_requested = true, updated_at = $2
			WHERE id = $1 AND phase = $3`, id, now, m.Phase)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 { // it moved meanwhile: to SUCCESS, or ABORTING
			return fmt.Errorf("migration %s moved past %s: %w", id, m.Phase, ErrNotAbortable)
		}
		m.AbortRequested, m.UpdatedAt = true, now
		return appendMigrationEvent(ctx, tx, id, now, EventAbort, m.Phase, m.Attempt, "abort requested by "+by)
	})
	if errors.Is(err, ErrNotAbortable) {
		return Migration{}, err
	}
	return m, pgErr("abort migration", err)
}

// Events returns a migration's history in order.
func (s *ModelMigrations) Events(ctx context.Context, id string) ([]MigrationEvent, error) {
	rows, err := s.pool.Query(ctx, `SELECT seq, at, kind, phase, attempt, detail FROM model_migration_events
		WHERE migration_id = $1 ORDER BY seq`, id)
	if err != nil {
		return nil, pgErr("migration events", err)
	}
	evs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (MigrationEvent, error) {
		var e MigrationEvent
		var phase string
		err := r.Scan(&e.Seq, &e.At, &e.Kind, &phase, &e.Attempt, &e.Detail)
		e.Phase = migration.Phase(phase)
		return e, err
	})
	return evs, pgErr("migration events", err)
}

func appendMigrationEvent(ctx context.Context, tx pgx.Tx, id string, at time.Time, kind string, phase migration.Phase, attempt int, detail string) error {
	_, err := tx.Exec(ctx, `INSERT INTO model_migration_events (migration_id, at, kind, phase, attempt, detail)
		VALUES ($1, $2, $3, $4, $5, $6)`, id, at, kind, phase, attempt, clip(detail, 4096))
	return err
}

// clip is s's first n bytes at most, cut on a UTF-8 character boundary:
// a progress text too long for its column is cut, never refused.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
