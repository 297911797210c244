package store

import (
	"context"

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

func scanTuple(r pgx.CollectableRow) (authz.Tuple, error) {
	var t authz.Tuple
	var rel string
	err := r.Scan(&t.User, &rel, &t.Object)
	t.Relation = authz.Relation(rel)
	return t, err
}

// removeTuplesOn removes every expected tuple whose object is one of
// objects or whose user is one of users, queueing their deletion.
func removeTuplesOn(ctx context.Context, tx pgx.Tx, objects, users []string) error {
	if users == nil {
		users = []string{}
	}
	rows, _ := tx.Query(ctx, `SELECT "user", relation, object FROM authz_tuples WHERE object = ANY($1) OR "user" = ANY($2)`,
		objects, users)
	ts, err := pgx.CollectRows(rows, scanTuple)
	if err != nil {
		return pgErr("tuples", err)
	}
	return removeTuples(ctx, tx, ts...)
}
