package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// Throttle is the login throttle's token buckets, shared by every replica.
type Throttle struct{ *db }

// ThrottleRate is a token bucket's size and refill: burst tokens, one
// more every Every.
type ThrottleRate struct {
	Burst float64
	Every time.Duration
}

// Charge takes one token from the bucket of kind and addr, shared
// by every replica, after refilling it up to now, and returns what is
// left. A bucket may owe up to a burst (replicas charging at once), so
// that all of them together let through no more than its rate.
func (s *Throttle) Charge(ctx context.Context, kind, addr string, r ThrottleRate, now time.Time) (float64, error) {
	var tokens float64
	err := s.pool.QueryRow(ctx, `INSERT INTO login_throttle (kind, addr, tokens, at) VALUES ($1, $2, $3::float8 - 1, $5::timestamptz)
		ON CONFLICT (kind, addr) DO UPDATE SET
			tokens = greatest(-$3::float8, least($3::float8,
				login_throttle.tokens + greatest(0, extract(epoch FROM $5::timestamptz - login_throttle.at)::float8) / $4::float8) - 1),
			at = greatest(login_throttle.at, $5::timestamptz)
		RETURNING tokens`, kind, addr, r.Burst, r.Every.Seconds(), now).Scan(&tokens)
	return tokens, pgErr("login throttle", err)
}

// Tokens returns what the bucket of kind and addr holds at now (a
// full burst if it is not kept).
func (s *Throttle) Tokens(ctx context.Context, kind, addr string, r ThrottleRate, now time.Time) (float64, error) {
	var tokens float64
	err := s.pool.QueryRow(ctx, `SELECT least($3::float8, tokens + greatest(0, extract(epoch FROM $5::timestamptz - at)::float8) / $4::float8)
		FROM login_throttle WHERE kind = $1 AND addr = $2`, kind, addr, r.Burst, r.Every.Seconds(), now).Scan(&tokens)
	if err == pgx.ErrNoRows {
		return r.Burst, nil
	}
	return tokens, pgErr("login throttle", err)
}

// Prune deletes the buckets last charged before cutoff (full again
// by then).
func (s *Throttle) Prune(ctx context.Context, cutoff time.Time) error {
	_, err := s.pool.Exec(ctx, `DELETE FROM login_throttle WHERE at < $1`, cutoff)
	return pgErr("prune login throttle", err)
}
