package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/droverhq/drover/authz"
	"github.com/droverhq/drover/hub/internal/migration"
)

// Audit operations of the migration driver.
const (
	// OpMigrationPhase is a migration's phase change (ModelMigrations.Advance).
	OpMigrationPhase = "migration phase"
	// OpModelMigrated is the index naming a migrated model's target
	// controller (ModelMigrations.SwitchController).
	OpModelMigrated = "model migrated"
)

// auditPhase records a phase change of m in the audit log, inside the
// change's transaction: no phase changes unaudited.
func auditPhase(ctx context.Context, tx pgx.Tx, m Migration, from migration.Phase, now time.Time) error {
	details := map[string]any{"migration": m.ID, "from": string(from), "to": string(m.Phase),
		"source-controller": m.SourceController, "target-controller": m.TargetController}
	if m.Message != "" {
		details["message"] = m.Message
	}
	if m.Failure != "" {
		details["failure"] = m.Failure
	}
	_, err := appendAudit(ctx, tx, AuditEntry{At: now, Actor: "hub", Operation: OpMigrationPhase,
		ModelUUID: m.ModelUUID, Model: m.ModelName, ControllerUUID: m.SourceController, Result: ResultOK, Details: details})
	return err
}

// ErrNotMigrated is SwitchController's answer for a migration that has not
// reached SUCCESS.
var ErrNotMigrated = errors.New("store: the migration has not reached SUCCESS")

// SwitchController makes the index name migration m's target controller
// as its model's, in one transaction with the authorization change: the
// tuple model:<uuid>#controller@controller:<source> is replaced by
// ...@controller:<target> through the outbox, and the model's event index
// starts again at 0, so that the target's summaries apply from now on and
// the source's (the indexer applies a controller's summaries only to its
// own models) are ignored. The model keeps its UUID, name, owner and every
// other grant. Switching a model the index names on the target already
// changes nothing. m must be migrated (ErrNotMigrated otherwise); a model
// gone from the index gives ErrNotFound.
func (s *ModelMigrations) SwitchController(ctx context.Context, m Migration, now time.Time) error {
	if !m.Phase.Migrated() {
		return fmt.Errorf("migration %s is in %s: %w", m.ID, m.Phase, ErrNotMigrated)
	}
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var on string
		if err := tx.QueryRow(ctx, `SELECT controller_uuid::text FROM models WHERE uuid = $1 FOR UPDATE`,
			m.ModelUUID).Scan(&on); err != nil {
			return err
		}
		if on == m.TargetController {
			return nil
		}
		if on != m.SourceController {
			return fmt.Errorf("model %s is on controller %s, neither the migration's source nor its target: %w",
				m.ModelUUID, on, ErrInvalid)
		}
		if _, err := tx.Exec(ctx, `UPDATE models SET controller_uuid = $2, event_index = 0, updated_at = $3
			WHERE uuid = $1`, m.ModelUUID, m.TargetController, now); err != nil {
			return err
		}
		obj := authz.ModelObject(m.ModelUUID)
		if err := removeTuples(ctx, tx, authz.Tuple{User: authz.ControllerObject(m.SourceController),
			Relation: authz.RelController, Object: obj}); err != nil {
			return err
		}
		if err := addTuples(ctx, tx, authz.Tuple{User: authz.ControllerObject(m.TargetController),
			Relation: authz.RelController, Object: obj}); err != nil {
			return err
		}
		_, err := appendAudit(ctx, tx, AuditEntry{At: now, Actor: "hub", Operation: OpModelMigrated,
			ModelUUID: m.ModelUUID, Model: m.ModelName, ControllerUUID: m.TargetController, Result: ResultOK,
			Details: map[string]any{"migration": m.ID, "source-controller": m.SourceController,
				"target-controller": m.TargetController}})
		return err
	})
	if errors.Is(err, ErrInvalid) {
		return err
	}
	return pgErr("switch model "+m.ModelUUID, err)
}

// Progress records migration id's progress within its step in phase: the
// message and, when not nil, the agents' summary; not in the history (the
// step's intent and result are). A migration in another phase is left
// as it is.
func (s *ModelMigrations) Progress(ctx context.Context, id string, phase migration.Phase, message string, minions []byte, now time.Time) error {
	var agents any // NULL keeps the stored summary
	if minions != nil {
		agents = json.RawMessage(minions)
	}
	_, err := s.pool.Exec(ctx, `UPDATE model_migrations SET message = $3, minions = coalesce($4::jsonb, minions), updated_at = $5
		WHERE id = $1 AND phase = $2`, id, phase, clip(message, 4096), agents, now)
	return pgErr("record migration progress", err)
}
