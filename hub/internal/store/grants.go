package store

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/droverhq/drover/authz"
)

// Grants are the permissions people give: the expected tuples a grant or
// a revoke changes, each change queued for OpenFGA in its transaction.
type Grants struct{ *db }

// Add records a permission tuple (a grant made by a person) and queues it
// for OpenFGA; granting twice is not an error. A grant to a group that is
// gone (removed meanwhile) is ErrNotFound.
func (s *Grants) Add(ctx context.Context, t authz.Tuple) error {
	return s.inTx(ctx, func(tx pgx.Tx) error {
		if err := lockSubject(ctx, tx, t.User); err != nil {
			return err
		}
		return addTuples(ctx, tx, t)
	})
}

// Revoke removes the grants in remove that exist and, if there was one,
// grants leave (a lower level the revoke leaves the user with), in one
// transaction; ErrNotFound when none of remove exists.
func (s *Grants) Revoke(ctx context.Context, remove []authz.Tuple, leave *authz.Tuple) error {
	return s.inTx(ctx, func(tx pgx.Tx) error {
		if leave != nil {
			if err := lockSubject(ctx, tx, leave.User); err != nil {
				return err
			}
		}
		held := 0
		for _, t := range remove {
			var n int
			if err := tx.QueryRow(ctx, `SELECT count(*) FROM authz_tuples WHERE "user" = $1 AND relation = $2 AND object = $3`,
				t.User, string(t.Relation), t.Object).Scan(&n); err != nil {
				return pgErr("revoke", err)
			}
			held += n
		}
		if held == 0 {
			return fmt.Errorf("grant %v: %w", remove, ErrNotFound)
		}
		if err := removeTuples(ctx, tx, remove...); err != nil {
			return err
		}
		if leave != nil {
			return addTuples(ctx, tx, *leave)
		}
		return nil
	})
}

// On returns the tuples whose object is object.
func (s *Grants) On(ctx context.Context, object string) ([]authz.Tuple, error) {
	rows, err := s.pool.Query(ctx, `SELECT "user", relation, object FROM authz_tuples WHERE object = $1
		ORDER BY relation, "user"`, object)
	if err != nil {
		return nil, pgErr("grants", err)
	}
	return pgx.CollectRows(rows, scanTuple)
}

// lockSubject holds, until the transaction ends, the row of what subject
// names: a group (group:<ID>#member), so that Groups.Remove cannot remove it
// between here and the commit, or an identity (user:<ID>), so that
// Identities.Remove cannot; ErrNotFound when it is gone. Other subjects
// (everyone) need nothing.
func lockSubject(ctx context.Context, tx pgx.Tx, subject string) error {
	if id, ok := strings.CutPrefix(subject, authz.TypeUser+":"); ok && uuid.Validate(id) == nil {
		return lockRow(ctx, tx, "identities", "identity", id)
	}
	rest, group := strings.CutPrefix(subject, authz.TypeGroup+":")
	id, members := strings.CutSuffix(rest, "#"+string(authz.Member))
	if !group || !members || uuid.Validate(id) != nil {
		return nil
	}
	return lockRow(ctx, tx, "groups", "group", id)
}

// lockRow takes a key-share lock on the row id of table (groups or
// identities): it cannot be deleted before the transaction ends.
func lockRow(ctx context.Context, tx pgx.Tx, table, what, id string) error {
	var one int
	err := tx.QueryRow(ctx, `SELECT 1 FROM `+table+` WHERE id = $1 FOR KEY SHARE`, id).Scan(&one)
	return pgErr(what+" "+id, err)
}
