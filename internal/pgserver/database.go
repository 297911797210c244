package pgserver

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

// DSN returns a pgx-compatible connection string for database db as the
// postgres superuser.
func (p *Server) DSN(db string) string {
	q := url.Values{}
	q.Set("host", p.host)
	q.Set("port", strconv.Itoa(p.port))
	q.Set("user", "postgres")
	q.Set("sslmode", "disable")
	return (&url.URL{Scheme: "postgres", Path: "/" + db, RawQuery: q.Encode()}).String()
}

// Exec runs one statement on database db in a short-lived connection.
func (p *Server) Exec(ctx context.Context, db, sql string, args ...any) error {
	conn, err := pgx.Connect(ctx, p.DSN(db))
	if err != nil {
		return fmt.Errorf("pgserver: connect to %s: %w", db, err)
	}
	_, err = conn.Exec(ctx, sql, args...)
	if err != nil {
		err = fmt.Errorf("pgserver: %s: %w", sql, err)
	}
	return errors.Join(err, conn.Close(ctx))
}

// DatabaseOption configures a database made by CreateDatabase.
type DatabaseOption func(*dbOptions)

type dbOptions struct {
	icuLocale string // "": the server's locale (C)
}

// WithICULocale gives the database the ICU locale as its default
// collation instead of the server's C, so a test can hold an order that
// must not depend on the deployment's collation (PostgreSQL 15 or later).
func WithICULocale(locale string) DatabaseOption {
	return func(o *dbOptions) { o.icuLocale = locale }
}

// CreateDatabase creates an empty database name (from template1, or
// template0 with WithICULocale).
func (p *Server) CreateDatabase(ctx context.Context, name string, opts ...DatabaseOption) error {
	var o dbOptions
	for _, opt := range opts {
		opt(&o)
	}
	sql := "CREATE DATABASE " + pgx.Identifier{name}.Sanitize()
	if o.icuLocale != "" {
		// A locale other than the template's needs template0.
		sql += " TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE '" + strings.ReplaceAll(o.icuLocale, "'", "''") + "'"
	}
	return p.Exec(ctx, "postgres", sql)
}

// EnsureDatabase creates database name unless it exists.
func (p *Server) EnsureDatabase(ctx context.Context, name string) error {
	conn, err := pgx.Connect(ctx, p.DSN("postgres"))
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var exists bool
	if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, name).Scan(&exists); err != nil {
		return err
	}
	if exists {
		return nil
	}
	_, err = conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
	return err
}

// DropDatabase drops name, disconnecting any sessions still using it.
func (p *Server) DropDatabase(ctx context.Context, name string) error {
	return p.Exec(ctx, "postgres", "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
}
