package testkit

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/droverhq/drover/internal/pgserver"
)

// pgStartTimeout bounds starting a test's server; generous because CI
// machines are small.
const pgStartTimeout = 30 * time.Second

// Errors of starting and running a server.
var (
	ErrNoPostgres     = pgserver.ErrNoPostgres
	ErrPostgresExited = pgserver.ErrPostgresExited
)

// Postgres is a private PostgreSQL server for tests: a pgserver.Server and
// the template databases made on it.
type Postgres struct {
	*pgserver.Server

	mu        sync.Mutex
	templates map[string]*migratedTemplate
}

// PostgresOption configures a server started by StartPostgres or
// StartPostgresServer.
type PostgresOption = pgserver.Option

// Durable keeps the server's crash safety (see pgserver.Durable).
func Durable() PostgresOption { return pgserver.Durable() }

// WithTCP makes the server also listen on 127.0.0.1:port; port 0 picks a
// free port. DSN then uses TCP.
func WithTCP(port int) PostgresOption { return pgserver.WithTCP(port) }

// StartPostgres starts a private server for the test in a fresh temporary
// directory and stops it, removing the directory, when the test ends.
// It fails the test if PostgreSQL is not installed.
func StartPostgres(t testing.TB, opts ...PostgresOption) *Postgres {
	t.Helper()
	dir, err := os.MkdirTemp("", "testkit-pg-") // short: socket paths are limited to 107 bytes
	if err != nil {
		t.Fatalf("pgserver: %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), pgStartTimeout)
	defer cancel()
	p, err := StartPostgresServer(ctx, dir, opts...)
	if err != nil {
		os.RemoveAll(dir)
		t.Fatalf("%v", err)
	}
	t.Cleanup(func() {
		if err := p.Stop(); err != nil {
			t.Errorf("%v", err)
		}
		if err := os.RemoveAll(dir); err != nil {
			t.Errorf("pgserver: remove %s: %v", dir, err)
		}
	})
	return p
}

// StartPostgresServer starts a server whose data lives in dir/data (see
// pgserver.Start). The caller must call Stop; dir is left in place.
func StartPostgresServer(ctx context.Context, dir string, opts ...PostgresOption) (*Postgres, error) {
	s, err := pgserver.Start(ctx, dir, opts...)
	if err != nil {
		return nil, err
	}
	return &Postgres{Server: s, templates: make(map[string]*migratedTemplate)}, nil
}
