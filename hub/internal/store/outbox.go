package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/droverhq/drover/authz"
)

// Outbox is the queue of changes to the expected tuples on their way to
// OpenFGA, and the expected tuples the reconciler compares OpenFGA with.
type Outbox struct{ *db }

// OutboxEntry is one queued OpenFGA change.
type OutboxEntry struct {
	ID       int64
	Delete   bool
	Tuple    authz.Tuple
	Attempts int
}

// Pending returns up to limit undelivered entries, oldest first.
func (s *Outbox) Pending(ctx context.Context, limit int) ([]OutboxEntry, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, op, "user", relation, object, attempts FROM authz_outbox
		WHERE delivered_at IS NULL ORDER BY id LIMIT $1`, limit)
	if err != nil {
		return nil, pgErr("pending outbox", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (OutboxEntry, error) {
		var e OutboxEntry
		var op, rel string
		err := r.Scan(&e.ID, &op, &e.Tuple.User, &rel, &e.Tuple.Object, &e.Attempts)
		e.Delete, e.Tuple.Relation = op == "delete", authz.Relation(rel)
		return e, err
	})
}

// MarkDelivered records that entries reached OpenFGA.
func (s *Outbox) MarkDelivered(ctx context.Context, ids []int64, at time.Time) error {
	_, err := s.pool.Exec(ctx, `UPDATE authz_outbox SET delivered_at = $2, attempts = attempts + 1
		WHERE id = ANY($1)`, ids, at)
	if err == nil { // every replica drops the decisions it cached (ListenAuthzChanges)
		_, err = s.pool.Exec(ctx, `SELECT pg_notify($1, '')`, authzChannel)
	}
	return pgErr("mark delivered", err)
}

// MarkFailed records a failed delivery attempt.
func (s *Outbox) MarkFailed(ctx context.Context, ids []int64, cause error) error {
	_, err := s.pool.Exec(ctx, `UPDATE authz_outbox SET attempts = attempts + 1, last_error = $2
		WHERE id = ANY($1)`, ids, cause.Error())
	return pgErr("mark failed", err)
}

// Prune deletes entries delivered before cutoff.
func (s *Outbox) Prune(ctx context.Context, cutoff time.Time) (int64, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM authz_outbox WHERE delivered_at < $1`, cutoff)
	return tag.RowsAffected(), pgErr("prune outbox", err)
}

// ExpectedTuples returns every tuple the hub expects OpenFGA to hold.
func (s *Outbox) ExpectedTuples(ctx context.Context) ([]authz.Tuple, error) {
	rows, err := s.pool.Query(ctx, `SELECT "user", relation, object FROM authz_tuples ORDER BY object, relation, "user"`)
	if err != nil {
		return nil, pgErr("expected tuples", err)
	}
	return pgx.CollectRows(rows, scanTuple)
}

// SampleExpectedTuples returns the first and the last tuple the hub
// expects OpenFGA to hold, in the table's order, or none when it expects
// none: OpenFGA lacking either has not been kept (a new or emptied store).
func (s *Outbox) SampleExpectedTuples(ctx context.Context) ([]authz.Tuple, error) {
	rows, err := s.pool.Query(ctx, `(SELECT "user", relation, object FROM authz_tuples ORDER BY object, relation, "user" LIMIT 1)
		UNION ALL (SELECT "user", relation, object FROM authz_tuples ORDER BY object DESC, relation DESC, "user" DESC LIMIT 1)`)
	if err != nil {
		return nil, pgErr("sample expected tuples", err)
	}
	return pgx.CollectRows(rows, scanTuple)
}

// EnqueueRepairs queues the reconciler's repairs: a write for each tuple of
// missing that is still expected and a delete for each tuple of extra that
// is still not expected. Re-checking under the transaction keeps a repair
// from undoing a grant or revoke committed after the reconciler's snapshot;
// the outbox's id order keeps it behind that change's own entry.
func (s *Outbox) EnqueueRepairs(ctx context.Context, missing, extra []authz.Tuple) (int, error) {
	n := 0
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		n = 0
		for _, t := range missing {
			tag, err := tx.Exec(ctx, `INSERT INTO authz_outbox (op, "user", relation, object)
				SELECT 'write', $1, $2, $3 WHERE EXISTS (SELECT 1 FROM authz_tuples
				WHERE "user" = $1 AND relation = $2 AND object = $3)`, t.User, string(t.Relation), t.Object)
			if err != nil {
				return pgErr("enqueue repair", err)
			}
			n += int(tag.RowsAffected())
		}
		for _, t := range extra {
			tag, err := tx.Exec(ctx, `INSERT INTO authz_outbox (op, "user", relation, object)
				SELECT 'delete', $1, $2, $3 WHERE NOT EXISTS (SELECT 1 FROM authz_tuples
				WHERE "user" = $1 AND relation = $2 AND object = $3)`, t.User, string(t.Relation), t.Object)
			if err != nil {
				return pgErr("enqueue repair", err)
			}
			n += int(tag.RowsAffected())
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("store: repairs: %w", err)
	}
	return n, nil
}

// Head returns the id of the newest outbox entry (0 for none).
func (s *Outbox) Head(ctx context.Context) (int64, error) {
	var id int64
	err := s.pool.QueryRow(ctx, `SELECT coalesce(max(id), 0) FROM authz_outbox`).Scan(&id)
	return id, pgErr("outbox head", err)
}

// Undelivered counts the outbox entries not yet in OpenFGA: how far
// OpenFGA is behind the database.
func (s *Outbox) Undelivered(ctx context.Context) (int64, error) {
	var n int64
	err := s.pool.QueryRow(ctx, `SELECT count(*) FROM authz_outbox WHERE delivered_at IS NULL`).Scan(&n)
	return n, pgErr("outbox undelivered", err)
}

// DeliveredThrough reports whether every outbox entry up to id has
// reached OpenFGA.
func (s *Outbox) DeliveredThrough(ctx context.Context, id int64) (bool, error) {
	var pending bool
	err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM authz_outbox WHERE delivered_at IS NULL AND id <= $1)`, id).Scan(&pending)
	return !pending, pgErr("outbox delivered", err)
}
