package store

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

type schemaMigration struct {
	version int
	name    string
	sql     string
}

// migrations returns the embedded migrations sorted by version; versions
// must be 1..N without gaps.
func migrations() ([]schemaMigration, error) {
	entries, err := fs.ReadDir(migrationFS, "migrations")
	if err != nil {
		return nil, err
	}
	var out []schemaMigration
	for _, e := range entries {
		n, _, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(n)
		if !ok || err != nil {
			return nil, fmt.Errorf("store: bad migration name %q", e.Name())
		}
		b, err := migrationFS.ReadFile(path.Join("migrations", e.Name()))
		if err != nil {
			return nil, err
		}
		out = append(out, schemaMigration{version: v, name: e.Name(), sql: string(b)})
	}
	slices.SortFunc(out, func(a, b schemaMigration) int { return a.version - b.version })
	for i, m := range out {
		if m.version != i+1 {
			return nil, fmt.Errorf("store: migration %s out of sequence", m.name)
		}
	}
	return out, nil
}

// SchemaVersion is the newest schema version this binary knows.
func SchemaVersion() int {
	ms, err := migrations()
	if err != nil {
		return 0
	}
	return len(ms)
}

// migrationLock is the advisory lock key that serialises migrations between
// hub replicas starting together.
const migrationLock = 0x64726f766572 // "drover"

// Migrate applies pending migrations in one transaction. It refuses a
// database whose version is newer than the binary's (ErrSchemaTooNew).
func (s *Store) Migrate(ctx context.Context) error {
	ms, err := migrations()
	if err != nil {
		return err
	}
	return s.migrateTo(ctx, ms)
}

// migrateTo applies those of ms the database has not had yet.
func (s *db) migrateTo(ctx context.Context, ms []schemaMigration) error {
	return s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", migrationLock); err != nil {
			return fmt.Errorf("store: migration lock: %w", err)
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
			return fmt.Errorf("store: schema_migrations: %w", err)
		}
		var have int
		if err := tx.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM schema_migrations").Scan(&have); err != nil {
			return fmt.Errorf("store: read schema version: %w", err)
		}
		if have > len(ms) {
			return fmt.Errorf("%w: database at version %d, binary knows %d", ErrSchemaTooNew, have, len(ms))
		}
		for _, m := range ms[have:] {
			if _, err := tx.Exec(ctx, m.sql); err != nil {
				return fmt.Errorf("store: migration %s: %w", m.name, err)
			}
			if _, err := tx.Exec(ctx, "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", m.version, m.name); err != nil {
				return fmt.Errorf("store: record migration %s: %w", m.name, err)
			}
		}
		return nil
	})
}
