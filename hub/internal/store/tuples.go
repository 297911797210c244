package store

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/droverhq/drover/authz"
)

// addTuples records tuples as expected and queues their delivery to
// OpenFGA, inside the caller's transaction. A tuple already expected queues
// nothing.
func addTuples(ctx context.Context, tx pgx.Tx, ts ...authz.Tuple) error {
	for _, t := range ts {
		tag, err := tx.Exec(ctx, `INSERT INTO authz_tuples ("user", relation, object) VALUES ($1, $2, $3)
			ON CONFLICT DO NOTHING`, t.User, string(t.Relation), t.Object)
		if err != nil {
			return pgErr("add tuple", err)
		}
		if tag.RowsAffected() == 0 {
			continue
		}
		if err := enqueue(ctx, tx, "write", t); err != nil {
			return err
		}
	}
	return nil
}

// removeTuples is addTuples' inverse.
func removeTuples(ctx context.Context, tx pgx.Tx, ts ...authz.Tuple) error {
	for _, t := range ts {
		tag, err := tx.Exec(ctx, `DELETE FROM authz_tuples WHERE "user" = $1 AND relation = $2 AND object = $3`,
			t.User, string(t.Relation), t.Object)
		if err != nil {
			return pgErr("remove tuple", err)
		}
		if tag.RowsAffected() == 0 {
			continue
		}
		if err := enqueue(ctx, tx, "delete", t); err != nil {
			return err
		}
	}
	return nil
}

func enqueue(ctx context.Context, tx pgx.Tx, op string, t authz.Tuple) error {
	_, err := tx.Exec(ctx, `INSERT INTO authz_outbox (op, "user", relation, object) VALUES ($1, $2, $3, $4)`,
		op, t.User, string(t.Relation), t.Object)
	return pgErr("enqueue tuple", err)
}

// OutboxEntry is one queued OpenFGA change.
type OutboxEntry struct {
	ID       int64
	Delete   bool
	Tuple    authz.Tuple
	Attempts int
}

// PendingOutbox returns up to limit undelivered entries, oldest first.
func (s *Store) PendingOutbox(ctx context.Context, limit int) ([]OutboxEntry, error) {
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
func (s *Store) MarkDelivered(ctx context.Context, ids []int64, at time.Time) error {
	_, err := s.pool.Exec(ctx, `UPDATE authz_outbox SET delivered_at = $2, attempts = attempts + 1
		WHERE id = ANY($1)`, ids, at)
	if err == nil { // every replica drops the decisions it cached (ListenAuthzChanges)
		_, err = s.pool.Exec(ctx, `SELECT pg_notify($1, '')`, authzChannel)
	}
	return pgErr("mark delivered", err)
}

// authzChannel is the PostgreSQL notification channel on which deliveries
// to OpenFGA are announced.
const authzChannel = "drover_authz_delivered"

// SigningKeysChanged is the payload of the notification NotifySigningKeys
// sends on the channel ListenAuthzChanges follows.
const SigningKeysChanged = "signing-keys"

// NotifySigningKeys tells every replica that the signing keys changed
// (one rotated now, or revoked), so each reloads them at once rather than
// at its next minute's refresh.
func (s *Store) NotifySigningKeys(ctx context.Context) error {
	_, err := s.pool.Exec(ctx, `SELECT pg_notify($1, $2)`, authzChannel, SigningKeysChanged)
	return pgErr("notify signing keys", err)
}

// ListenAuthzChanges calls changed whenever any replica has delivered
// permission changes to OpenFGA (payload "") or changed the signing keys
// (payload SigningKeysChanged), until ctx ends or the connection fails
// (then the caller listens again, and treats the gap as a change of both).
func (s *Store) ListenAuthzChanges(ctx context.Context, listening func(), changed func(payload string)) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return pgErr("listen", err)
	}
	// The connection leaves the pool: LISTEN is a session's state.
	pc := conn.Hijack()
	defer pc.Close(context.WithoutCancel(ctx))
	if _, err := pc.Exec(ctx, "LISTEN "+authzChannel); err != nil {
		return pgErr("listen", err)
	}
	listening()
	for {
		wctx, cancel := context.WithTimeout(ctx, listenPing)
		n, err := pc.WaitForNotification(wctx)
		cancel()
		switch {
		case err == nil:
			changed(n.Payload)
		case ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded):
			// Quiet for a while: make sure the connection still leads
			// to the server. One that died without a word (a network
			// cut, a server gone with its host) would otherwise be
			// waited on for good, every change missed.
			pctx, cancel := context.WithTimeout(ctx, listenPing)
			_, err = pc.Exec(pctx, "SELECT 1")
			cancel()
			if err != nil {
				return pgErr("listen: the connection no longer answers", err)
			}
			listenPings.Add(1)
		default:
			return pgErr("listen", err)
		}
	}
}

// listenPing is how long the permission-change listener waits quietly
// before it checks that its connection still answers, and how long it
// gives that check.
var listenPing = 30 * time.Second

// listenPings counts the checks that found the connection answering.
var listenPings atomic.Int64

// MarkFailed records a failed delivery attempt.
func (s *Store) MarkFailed(ctx context.Context, ids []int64, cause error) error {
	_, err := s.pool.Exec(ctx, `UPDATE authz_outbox SET attempts = attempts + 1, last_error = $2
		WHERE id = ANY($1)`, ids, cause.Error())
	return pgErr("mark failed", err)
}

// PruneOutbox deletes entries delivered before cutoff.
func (s *Store) PruneOutbox(ctx context.Context, cutoff time.Time) (int64, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM authz_outbox WHERE delivered_at < $1`, cutoff)
	return tag.RowsAffected(), pgErr("prune outbox", err)
}

// ExpectedTuples returns every tuple the hub expects OpenFGA to hold.
func (s *Store) ExpectedTuples(ctx context.Context) ([]authz.Tuple, error) {
	rows, err := s.pool.Query(ctx, `SELECT "user", relation, object FROM authz_tuples ORDER BY object, relation, "user"`)
	if err != nil {
		return nil, pgErr("expected tuples", err)
	}
	return pgx.CollectRows(rows, scanTuple)
}

// SampleExpectedTuples returns the first and the last tuple the hub
// expects OpenFGA to hold, in the table's order, or none when it expects
// none: OpenFGA lacking either has not been kept (a new or emptied store).
func (s *Store) SampleExpectedTuples(ctx context.Context) ([]authz.Tuple, error) {
	rows, err := s.pool.Query(ctx, `(SELECT "user", relation, object FROM authz_tuples ORDER BY object, relation, "user" LIMIT 1)
		UNION ALL (SELECT "user", relation, object FROM authz_tuples ORDER BY object DESC, relation DESC, "user" DESC LIMIT 1)`)
	if err != nil {
		return nil, pgErr("sample expected tuples", err)
	}
	return pgx.CollectRows(rows, scanTuple)
}

func scanTuple(r pgx.CollectableRow) (authz.Tuple, error) {
	var t authz.Tuple
	var rel string
	err := r.Scan(&t.User, &rel, &t.Object)
	t.Relation = authz.Relation(rel)
	return t, err
}

// EnqueueRepairs queues the reconciler's repairs: a write for each tuple of
// missing that is still expected and a delete for each tuple of extra that
// is still not expected. Re-checking under the transaction keeps a repair
// from undoing a grant or revoke committed after the reconciler's snapshot;
// the outbox's id order keeps it behind that change's own entry.
func (s *Store) EnqueueRepairs(ctx context.Context, missing, extra []authz.Tuple) (int, error) {
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

// OutboxHead returns the id of the newest outbox entry (0 for none).
func (s *Store) OutboxHead(ctx context.Context) (int64, error) {
	var id int64
	err := s.pool.QueryRow(ctx, `SELECT coalesce(max(id), 0) FROM authz_outbox`).Scan(&id)
	return id, pgErr("outbox head", err)
}

// OutboxUndelivered counts the outbox entries not yet in OpenFGA: how far
// OpenFGA is behind the database.
func (s *Store) OutboxUndelivered(ctx context.Context) (int64, error) {
	var n int64
	err := s.pool.QueryRow(ctx, `SELECT count(*) FROM authz_outbox WHERE delivered_at IS NULL`).Scan(&n)
	return n, pgErr("outbox undelivered", err)
}

// OutboxDeliveredThrough reports whether every outbox entry up to id has
// reached OpenFGA.
func (s *Store) OutboxDeliveredThrough(ctx context.Context, id int64) (bool, error) {
	var pending bool
	err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM authz_outbox WHERE delivered_at IS NULL AND id <= $1)`, id).Scan(&pending)
	return !pending, pgErr("outbox delivered", err)
}
