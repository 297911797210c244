package testkit

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/droverhq/drover/internal/pgserver"
)

// pgCleanupTimeout bounds dropping a test database at cleanup, when the
// test's own context is already cancelled.
const pgCleanupTimeout = 30 * time.Second

// dbSeq makes database names unique within the process.
var dbSeq atomic.Int64

// DatabaseOption configures a database made by CreateDatabase or
// MigratedTemplate.
type DatabaseOption = pgserver.DatabaseOption

// EnglishICULocale is an ICU locale that sorts like glibc's en_US.UTF-8:
// punctuation is ignored at first ("a1" < "ab" < "a-c", "m10" < "m-9"),
// where byte order puts '-' first ("a-c" < "a1" < "ab"). ICU's root locale
// ("und") would not do: on [a-z0-9-] it agrees with byte order.
const EnglishICULocale = "en-US-u-ka-shifted"

// WithICULocale gives the database the ICU locale as its default
// collation instead of the server's C (PostgreSQL 15 or later).
func WithICULocale(locale string) DatabaseOption { return pgserver.WithICULocale(locale) }

// NewDatabase creates a fresh database for the test as a copy of template
// ("" means template1), drops it when the test ends, and returns its DSN.
// Copying a migrated template (see MigratedTemplate) gives every test its own
// schema in milliseconds.
func (p *Postgres) NewDatabase(t testing.TB, template string) string {
	t.Helper()
	if template == "" {
		template = "template1"
	}
	name := testDBName(t.Name())
	sql := "CREATE DATABASE " + pgx.Identifier{name}.Sanitize() + " TEMPLATE " + pgx.Identifier{template}.Sanitize()
	if err := p.Exec(t.Context(), "postgres", sql); err != nil {
		t.Fatalf("%v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), pgCleanupTimeout)
		defer cancel()
		if err := p.DropDatabase(ctx, name); err != nil {
			t.Errorf("%v", err)
		}
	})
	return p.DSN(name)
}

var nonIdent = regexp.MustCompile(`[^a-z0-9_]+`)

// testDBName derives a legal, unique, recognisable database name from a test
// name; PostgreSQL truncates identifiers at 63 bytes, so the unique part
// comes first.
func testDBName(testName string) string {
	base := nonIdent.ReplaceAllString(strings.ToLower(testName), "_")
	name := fmt.Sprintf("t%d_%s", dbSeq.Add(1), base)
	if len(name) > 63 {
		name = name[:63]
	}
	return name
}

// migratedTemplate is one template database; mu serialises its creation so
// concurrent callers wait for the first instead of racing it.
type migratedTemplate struct {
	mu    sync.Mutex
	ready bool
}

// MigratedTemplate creates database name (with opts), runs migrate
// against it once per server, and marks it as a template; it returns name
// for NewDatabase, whose copies keep its locale. A failed migration drops
// the database and is retried on the next call. migrate must close its
// connections before returning, since PostgreSQL cannot copy a database
// that has sessions.
func (p *Postgres) MigratedTemplate(ctx context.Context, name string, migrate func(ctx context.Context, dsn string) error, opts ...DatabaseOption) (string, error) {
	p.mu.Lock()
	mt, ok := p.templates[name]
	if !ok {
		mt = &migratedTemplate{}
		p.templates[name] = mt
	}
	p.mu.Unlock()

	mt.mu.Lock()
	defer mt.mu.Unlock()
	if mt.ready {
		return name, nil
	}
	if err := p.CreateDatabase(ctx, name, opts...); err != nil {
		return "", err
	}
	if err := migrate(ctx, p.DSN(name)); err != nil {
		return "", errors.Join(fmt.Errorf("testkit: migrate template %s: %w", name, err), p.DropDatabase(ctx, name))
	}
	// Drop sessions migrate left behind (pools closing asynchronously), then
	// refuse new connections: a session on the template would make copies fail.
	if err := p.Exec(ctx, "postgres",
		"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()", name); err != nil {
		return "", err
	}
	if err := p.Exec(ctx, "postgres", "ALTER DATABASE "+pgx.Identifier{name}.Sanitize()+" WITH IS_TEMPLATE true ALLOW_CONNECTIONS false"); err != nil {
		return "", err
	}
	mt.ready = true
	return name, nil
}
