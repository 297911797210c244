package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/droverhq/drover/authz"
)

// Audit operations of the index following a controller's history.
const (
	// OpControllerRewound is Controllers.Rewind's.
	OpControllerRewound = "controller rewound"
	// OpModelForgotten is Models.Forget's.
	OpModelForgotten = "model forgotten"
)

// Rewind records that controller id's history went back to
// index: the controller's state was restored from an older backup, or
// rebuilt with its UUID, so its events now carry indexes the hub has
// passed. The controller's event index and its models' are set back to
// index, so that what the controller now reports is applied (summaries
// are applied only over older ones), with one audit entry (actor hub,
// details from and to).
func (s *Controllers) Rewind(ctx context.Context, id string, index uint64, at time.Time) error {
	return s.inTx(ctx, func(tx pgx.Tx) error {
		var org string
		var was int64
		if err := tx.QueryRow(ctx, `SELECT coalesce(org, ''), event_index FROM controllers WHERE uuid = $1 FOR UPDATE`, id).Scan(&org, &was); err != nil {
			return pgErr("controller "+id, err)
		}
		if uint64(was) <= index {
			return nil
		}
		if _, err := tx.Exec(ctx, `UPDATE controllers SET event_index = $2, event_mark = '' WHERE uuid = $1`, id, int64(index)); err != nil {
			return pgErr("controller "+id, err)
		}
		if _, err := tx.Exec(ctx, `UPDATE models SET event_index = $2 WHERE controller_uuid = $1 AND event_index > $2`, id, int64(index)); err != nil {
			return pgErr("controller models", err)
		}
		_, err := appendAudit(ctx, tx, AuditEntry{At: at, Actor: "hub", Org: org, Operation: OpControllerRewound,
			ControllerUUID: id, Result: ResultOK, Details: map[string]any{"from": was, "to": int64(index)}})
		return err
	})
}

// Forget removes from the index the models of controller id that
// its reset frame no longer lists (models whose removal the hub missed, or
// that a rewound controller never had), with every tuple on them. What
// the index knew of each is kept, as for a controller removed with force:
// a model that comes back on the same controller (a node that lagged, a
// history that was rewound and restored again) is restored by Models.Adopt
// with its owner and grants, not adopted as nobody's. One audit entry per
// model (actor hub). Models no longer on controller id are left alone.
func (s *Models) Forget(ctx context.Context, id string, models []string, at time.Time) (forgotten []string, err error) {
	if len(models) == 0 {
		return nil, nil
	}
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		forgotten = nil
		type gone struct{ uuid, org, name, owner string }
		rows, _ := tx.Query(ctx, `SELECT uuid::text, org, name, owner_name FROM models
			WHERE controller_uuid = $1 AND uuid = ANY($2::uuid[]) ORDER BY uuid FOR UPDATE`, id, models)
		var gs []gone
		var g gone
		if _, err := pgx.ForEachRow(rows, []any{&g.uuid, &g.org, &g.name, &g.owner}, func() error {
			gs = append(gs, g)
			return nil
		}); err != nil {
			return pgErr("forget models", err)
		}
		if len(gs) == 0 {
			return nil
		}
		if err := rememberForgotten(ctx, tx, id, models); err != nil {
			return err
		}
		objects := make([]string, len(gs))
		for i, g := range gs {
			objects[i] = authz.ModelObject(g.uuid)
		}
		if err := removeTuplesOn(ctx, tx, objects, nil); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM models WHERE controller_uuid = $1 AND uuid = ANY($2::uuid[])`, id, models); err != nil {
			return pgErr("forget models", err)
		}
		for _, g := range gs {
			details := map[string]any{"name": g.name}
			if g.owner != "" {
				details["owner"] = g.owner
			}
			if _, err := appendAudit(ctx, tx, AuditEntry{At: at, Actor: "hub", Org: g.org, Operation: OpModelForgotten,
				ModelUUID: g.uuid, Model: g.name, ControllerUUID: id, Result: ResultOK, Details: details}); err != nil {
				return err
			}
			forgotten = append(forgotten, g.uuid)
		}
		return nil
	})
	return forgotten, err
}

// CountModels is how many models the index holds for
// controller id (the adoption bound's count).
func (s *Controllers) CountModels(ctx context.Context, id string) (int, error) {
	var n int
	err := s.pool.QueryRow(ctx, `SELECT count(*) FROM models WHERE controller_uuid = $1`, id).Scan(&n)
	return n, pgErr("count controller models", err)
}

// ModelSummaries returns the summary the index holds of each model on
// controller id (UUID, life, status, counts, charms), by UUID.
func (s *Controllers) ModelSummaries(ctx context.Context, id string) (map[string]Summary, error) {
	rows, _ := s.pool.Query(ctx, `SELECT uuid::text, life, status, application_count, unit_count, machine_count, charms
		FROM models WHERE controller_uuid = $1`, id)
	out := map[string]Summary{}
	var m Summary
	_, err := pgx.ForEachRow(rows, []any{&m.UUID, &m.Life, &m.Status, &m.ApplicationCount, &m.UnitCount, &m.MachineCount, &m.Charms}, func() error {
		out[m.UUID] = m
		m.Charms = nil
		return nil
	})
	return out, pgErr("controller models", err)
}
