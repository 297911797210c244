package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// ListModelsSQL and ListModelKeysSQL are Models.Visible's and
// Models.VisibleKeys's queries, for tests that EXPLAIN them.
const (
	ListModelsSQL    = listModels
	ListModelKeysSQL = listModelKeys
)

// MigrateDSNTo brings the database at dsn to schema version v (and no
// further), for tests of a migration over rows written before it.
func MigrateDSNTo(ctx context.Context, dsn string, v int) error {
	ms, err := migrations()
	if err != nil {
		return err
	}
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		return err
	}
	defer pool.Close()
	return (&db{pool: pool}).migrateTo(ctx, ms[:v])
}

// SetListenPing changes how long the permission-change listener waits
// quietly before it checks its connection, until the test ends.
func SetListenPing(t interface{ Cleanup(func()) }, d time.Duration) {
	old := listenPing
	listenPing = d
	t.Cleanup(func() { listenPing = old })
}

// ListenPings returns how many of those checks found the connection
// answering.
func ListenPings() int64 { return listenPings.Load() }
