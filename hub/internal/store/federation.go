package store

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/droverhq/drover/authz"
)

// DeleteModel removes a model from the index with every tuple on it (the
// model is gone from its controller).
func (s *Store) DeleteModel(ctx context.Context, id string) error {
	if _, err := uuid.Parse(id); err != nil {
		return fmt.Errorf("model %q: %w", id, ErrNotFound)
	}
	return s.inTx(ctx, func(tx pgx.Tx) error {
		rows, _ := tx.Query(ctx, `SELECT "user", relation, object FROM authz_tuples WHERE object = $1`, authz.ModelObject(id))
		ts, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (authz.Tuple, error) {
			var t authz.Tuple
			var rel string
			err := r.Scan(&t.User, &rel, &t.Object)
			t.Relation = authz.Relation(rel)
			return t, err
		})
		if err != nil {
			return pgErr("model tuples", err)
		}
		if err := removeTuples(ctx, tx, ts...); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `DELETE FROM models WHERE uuid = $1`, id)
		return pgErr("model "+id, err)
	})
}

// ModelCounts returns the number of live indexed models per controller.
func (s *Store) ModelCounts(ctx context.Context) (map[string]int, error) {
	rows, err := s.pool.Query(ctx, `SELECT controller_uuid::text, count(*) FROM models WHERE life <> 'dead' GROUP BY 1`)
	if err != nil {
		return nil, pgErr("model counts", err)
	}
	out := map[string]int{}
	defer rows.Close()
	for rows.Next() {
		var id string
		var n int
		if err := rows.Scan(&id, &n); err != nil {
			return nil, pgErr("model counts", err)
		}
		out[id] = n
	}
	return out, pgErr("model counts", rows.Err())
}

// ModelByName returns the model named name in org.
func (s *Store) ModelByName(ctx context.Context, org, name string) (Model, error) {
	rows, _ := s.pool.Query(ctx, `SELECT `+modelCols+` FROM `+modelFrom+` WHERE m.org = $1 AND m.name = $2`, org, name)
	m, err := pgx.CollectExactlyOneRow(rows, scanModel)
	return m, pgErr("model "+org+"/"+name, err)
}

// ControllerModelUUIDs returns the UUIDs of the indexed models of one
// controller (to find those a reset frame no longer lists).
func (s *Store) ControllerModelUUIDs(ctx context.Context, controllerUUID string) ([]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT uuid::text FROM models WHERE controller_uuid = $1`, controllerUUID)
	if err != nil {
		return nil, pgErr("controller models", err)
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// TryAdvisoryLock takes a session-level advisory lock on a dedicated
// connection; the returned release ends it. ok is false when another
// session holds it. Leader-only hub workers run while they hold one.
func (s *Store) TryAdvisoryLock(ctx context.Context, key int64) (release func(), ok bool, err error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, false, pgErr("advisory lock", err)
	}
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, key).Scan(&ok); err != nil || !ok {
		conn.Release()
		return nil, false, pgErr("advisory lock", err)
	}
	return func() {
		// Closing the connection drops the lock even if the unlock fails.
		_ = conn.Conn().Close(context.WithoutCancel(ctx))
		conn.Release()
	}, true, nil
}
