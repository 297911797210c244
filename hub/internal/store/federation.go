package store

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// indexChannel is the notification channel on which every statement that
// writes controllers or models is announced, at its commit
// (migrations/0022_index_versions.sql).
const indexChannel = "drover_index_changed"

// ListenIndexChanges calls changed after each committed write to the
// index of controllers and models on any replica, until ctx ends or the
// connection fails (then the caller listens again, and treats the gap as
// a change of anything).
func (s *Store) ListenIndexChanges(ctx context.Context, listening, changed func()) error {
	return s.listen(ctx, indexChannel, listening, func(string) { changed() })
}

// IndexHorizon returns the highest index version taken and the running
// transactions that took one (virtual transaction ids): every version up
// to hi that no transaction of writers took is committed, or never will
// be, and visible to the next statement. The sequence is read before the
// writers: a transaction takes its lock before its first version, so one
// that took a version up to hi is either among writers or over.
func (s *Store) IndexHorizon(ctx context.Context) (hi int64, writers []string, err error) {
	var called bool
	if err := s.pool.QueryRow(ctx, `SELECT last_value, is_called FROM model_versions`).Scan(&hi, &called); err != nil {
		return 0, nil, pgErr("index horizon", err)
	}
	if !called {
		hi = 0
	}
	rows, err := s.pool.Query(ctx, `SELECT virtualtransaction FROM pg_locks
		WHERE locktype = 'advisory' AND classid = 1146244950 AND objid = 1229215776 AND objsubid = 2 AND granted
		AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`)
	if err != nil {
		return 0, nil, pgErr("index horizon", err)
	}
	writers, err = pgx.CollectRows(rows, pgx.RowTo[string])
	return hi, writers, pgErr("index horizon", err)
}

// VisibleChanged calls each with the indexed models v describes whose
// version is in (after, upto], and those on the controllers ctrls
// whatever their version, in no particular order.
func (s *Models) VisibleChanged(ctx context.Context, v Visibility, after, upto int64, ctrls [][16]byte, each func(*ModelRow) error) error {
	if ctrls == nil {
		ctrls = [][16]byte{}
	}
	args := append(v.args(), after, upto, ctrls)
	return s.modelRows(ctx, "read changed models", `SELECT `+listCols+` FROM models m WHERE `+visibleModel+`
		AND ((m.version > $5 AND m.version <= $6) OR m.controller_uuid = ANY($7::uuid[]))`, args, each)
}

// Removal is a controller or model gone from the index: Kind "model" (ID
// its UUID) or "controller" (ID its name); Org and ControllerUUID say
// where it was.
type Removal struct {
	Version        int64
	Kind, ID, Org  string
	ControllerUUID string
	RemovedAt      time.Time
}

// Removals returns the removals with versions in (after, upto], in order.
func (s *Store) Removals(ctx context.Context, after, upto int64) ([]Removal, error) {
	rows, err := s.pool.Query(ctx, `SELECT version, kind, id, coalesce(org, ''), controller_uuid, removed_at
		FROM index_removals WHERE version > $1 AND version <= $2 ORDER BY version`, after, upto)
	if err != nil {
		return nil, pgErr("index removals", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Removal, error) {
		var rm Removal
		var ctrl *uuid.UUID
		err := r.Scan(&rm.Version, &rm.Kind, &rm.ID, &rm.Org, &ctrl, &rm.RemovedAt)
		if ctrl != nil {
			rm.ControllerUUID = ctrl.String()
		}
		return rm, err
	})
}

// RemovalsHorizon returns the highest version of a removal pruned
// (PruneRemovals): the removals after it are all kept.
func (s *Store) RemovalsHorizon(ctx context.Context) (int64, error) {
	var v int64
	err := s.pool.QueryRow(ctx, `SELECT version FROM index_removals_horizon`).Scan(&v)
	return v, pgErr("index removals horizon", err)
}

// PruneRemovals deletes the removals made before t, and all but the keep
// newest, raising the horizon past them; it returns how many went.
func (s *Store) PruneRemovals(ctx context.Context, t time.Time, keep int) (int64, error) {
	var n int64
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var top *int64
		err := tx.QueryRow(ctx, `WITH gone AS (DELETE FROM index_removals WHERE removed_at < $1
			OR version <= (SELECT version FROM index_removals ORDER BY version DESC OFFSET $2 LIMIT 1)
			RETURNING version) SELECT count(*), max(version) FROM gone`, t, keep).Scan(&n, &top)
		if err != nil || top == nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE index_removals_horizon SET version = greatest(version, $1)`, *top)
		return err
	})
	return n, pgErr("prune index removals", err)
}
