package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// SigningKeys are the hub's JWT signing keys.
type SigningKeys struct{ *db }

// SigningKey is one of the hub's JWT signing keys.
type SigningKey struct {
	KID        string
	Alg        string
	PrivatePEM string
	CreatedAt  time.Time
	RetiredAt  *time.Time
}

// Insert stores a new key.
func (s *SigningKeys) Insert(ctx context.Context, k SigningKey) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO signing_keys (kid, alg, private_pem, created_at) VALUES ($1, $2, $3, $4)`,
		k.KID, k.Alg, k.PrivatePEM, k.CreatedAt)
	return pgErr("signing key", err)
}

// RetireExcept marks every unretired key except keep as retired.
func (s *SigningKeys) RetireExcept(ctx context.Context, keep string, now time.Time) error {
	_, err := s.pool.Exec(ctx, `UPDATE signing_keys SET retired_at = $2 WHERE kid <> $1 AND retired_at IS NULL`, keep, now)
	return pgErr("retire signing keys", err)
}

// Reseal stores kid's key as sealed, if the row still holds was:
// replicas sealing the same plain key at once keep one of the two.
func (s *SigningKeys) Reseal(ctx context.Context, kid, was, sealed string) error {
	_, err := s.pool.Exec(ctx, `UPDATE signing_keys SET private_pem = $3 WHERE kid = $1 AND private_pem = $2`, kid, was, sealed)
	return pgErr("reseal signing key", err)
}

// DeleteExcept deletes every key but keep (revoking them: what
// they signed is accepted nowhere once replicas and controllers reload the
// keys), and returns their kids.
func (s *SigningKeys) DeleteExcept(ctx context.Context, keep string) ([]string, error) {
	rows, err := s.pool.Query(ctx, `DELETE FROM signing_keys WHERE kid <> $1 RETURNING kid`, keep)
	if err != nil {
		return nil, pgErr("revoke signing keys", err)
	}
	kids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return kids, pgErr("revoke signing keys", err)
}

// Prune deletes the keys retired before cutoff: nothing signed
// with them is accepted any more, so they are kept nowhere.
func (s *SigningKeys) Prune(ctx context.Context, cutoff time.Time) (int64, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM signing_keys WHERE retired_at < $1`, cutoff)
	if err != nil {
		return 0, pgErr("prune signing keys", err)
	}
	return tag.RowsAffected(), nil
}

// List returns keys not retired before since, newest first.
func (s *SigningKeys) List(ctx context.Context, since time.Time) ([]SigningKey, error) {
	rows, err := s.pool.Query(ctx, `SELECT kid, alg, private_pem, created_at, retired_at FROM signing_keys
		WHERE retired_at IS NULL OR retired_at > $1 ORDER BY created_at DESC, kid`, since)
	if err != nil {
		return nil, pgErr("signing keys", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (SigningKey, error) {
		var k SigningKey
		return k, r.Scan(&k.KID, &k.Alg, &k.PrivatePEM, &k.CreatedAt, &k.RetiredAt)
	})
}

// Notify tells every replica that the signing keys changed
// (one rotated now, or revoked), so each reloads them at once rather than
// at its next minute's refresh.
func (s *SigningKeys) Notify(ctx context.Context) error {
	_, err := s.pool.Exec(ctx, `SELECT pg_notify($1, $2)`, authzChannel, Change{Kind: ChangeSigningKeys}.Payload())
	return pgErr("notify signing keys", err)
}
