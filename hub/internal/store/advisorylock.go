package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// AdvisoryLock is a session-level advisory lock held on a dedicated
// connection (TryAdvisoryLock).
type AdvisoryLock struct {
	conn    *pgxpool.Conn
	timeout time.Duration
}

// TryAdvisoryLock takes a session-level advisory lock on a dedicated
// connection; ok is false when another session holds it. Leader-only hub
// workers run while they hold one, and check it is still held (Held):
// the lock ends with its session, which a restart of PostgreSQL, or an
// administrator's pg_terminate_backend, ends without a word to the holder.
func (s *Store) TryAdvisoryLock(ctx context.Context, key int64) (l *AdvisoryLock, ok bool, err error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, false, pgErr("advisory lock", err)
	}
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, key).Scan(&ok); err != nil || !ok {
		conn.Release()
		return nil, false, pgErr("advisory lock", err)
	}
	return &AdvisoryLock{conn: conn, timeout: s.timeout}, true, nil
}

// Held returns an error once the lock's session has ended (the lock with
// it), nil while it lasts.
func (l *AdvisoryLock) Held(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, l.timeout)
	defer cancel()
	if err := l.conn.Ping(ctx); err != nil {
		return pgErr("the advisory lock's session", err)
	}
	return nil
}

// Release ends the lock's session, which drops the lock even where an
// unlock would fail.
func (l *AdvisoryLock) Release(ctx context.Context) {
	_ = l.conn.Conn().Close(context.WithoutCancel(ctx))
	l.conn.Release()
}
