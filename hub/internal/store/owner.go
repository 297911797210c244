package store

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/droverhq/drover/authz"
)

// SetModelOwner makes identity owner the owner of model id and grants it
// administrator on the model, in one transaction. Whoever owned it before
// keeps the access they hold (revoked as any grant is); previous is their
// identity id, "" for a model nobody owned (adopted from its controller).
// Setting the current owner again changes nothing.
func (s *Store) SetModelOwner(ctx context.Context, id, owner string) (previous string, err error) {
	if _, err := uuid.Parse(id); err != nil {
		return "", fmt.Errorf("model %q: %w", id, ErrNotFound)
	}
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `SELECT coalesce(owner::text, '') FROM models WHERE uuid = $1 FOR UPDATE`, id).Scan(&previous); err != nil {
			return pgErr("model "+id, err)
		}
		if previous == owner {
			return nil
		}
		if _, err := tx.Exec(ctx, `UPDATE models SET owner = $2, updated_at = now() WHERE uuid = $1`, id, owner); err != nil {
			return pgErr("model "+id, err)
		}
		return addTuples(ctx, tx, authz.Tuple{User: authz.UserObject(owner), Relation: authz.Administrator, Object: authz.ModelObject(id)})
	})
	return previous, err
}
