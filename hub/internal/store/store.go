// Package store is the hub's PostgreSQL state: organizations, identities,
// groups, service accounts, controllers, the model index, the audit log,
// sessions, signing keys and the authorization outbox.
//
// Invariants:
//   - The schema is versioned by embedded migrations (migrations/NNNN_*.sql)
//     applied in order in one transaction at start; a database whose version
//     is newer than the binary knows is refused (ErrSchemaTooNew).
//   - Every change to the expected OpenFGA tuples (authz_tuples) is made in
//     the same transaction as the row it belongs to, together with an
//     authz_outbox row, so PostgreSQL and OpenFGA cannot drift for longer
//     than the outbox worker's delay.
//   - Errors are typed (ErrNotFound, ErrAlreadyExists, ErrInvalid, ...),
//     tested with errors.Is.
package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Errors returned by the store's methods.
var (
	ErrNotFound      = errors.New("store: not found")
	ErrAlreadyExists = errors.New("store: already exists")
	ErrInvalid       = errors.New("store: invalid")
	ErrSchemaTooNew  = errors.New("store: database schema is newer than this binary")
)

// DefaultMaxConns is the most connections a store opens when the DSN
// does not say (pool_max_conns=N).
const DefaultMaxConns = 16

// Store is the hub's database. It is safe for concurrent use. It keeps
// the pool, the migrations and what needs a connection of its own
// (advisory locks, the change listener); each part of the hub's state is
// read and written through the field named after it.
type Store struct {
	*db

	Organizations   *Organizations
	Identities      *Identities
	ServiceAccounts *ServiceAccounts
	Groups          *Groups
	Grants          *Grants
	Controllers     *Controllers
	Models          *Models
	Audit           *Audit
	Sessions        *Sessions
	SigningKeys     *SigningKeys
	Throttle        *Throttle
	Outbox          *Outbox
	Migrations      *ModelMigrations
}

// db is what every part of the store shares: the pool, and the bound on
// statements whose context has none.
type db struct {
	pool    *pgxpool.Pool
	timeout time.Duration // StatementTimeout, or WithStatementTimeout's
}

// newStore gives every part of the store the pool.
func newStore(pool *pgxpool.Pool, timeout time.Duration) *Store {
	d := &db{pool: pool, timeout: timeout}
	return &Store{
		db:              d,
		Organizations:   &Organizations{d},
		Identities:      &Identities{d},
		ServiceAccounts: &ServiceAccounts{d},
		Groups:          &Groups{d},
		Grants:          &Grants{d},
		Controllers:     &Controllers{d},
		Models:          &Models{d},
		Audit:           &Audit{d},
		Sessions:        &Sessions{d},
		SigningKeys:     &SigningKeys{d},
		Throttle:        &Throttle{d},
		Outbox:          &Outbox{d},
		Migrations:      &ModelMigrations{d},
	}
}

// Option configures Open.
type Option func(*options)

type options struct {
	statementTimeout time.Duration
}

// WithStatementTimeout replaces StatementTimeout.
func WithStatementTimeout(d time.Duration) Option {
	return func(o *options) { o.statementTimeout = d }
}

// Open connects to dsn, applies pending migrations and returns the store.
func Open(ctx context.Context, dsn string, opts ...Option) (*Store, error) {
	o := options{statementTimeout: StatementTimeout}
	for _, opt := range opts {
		opt(&o)
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("store: parse dsn: %w", err)
	}
	if !strings.Contains(dsn, "pool_max_conns") {
		// pgx's default (4 on a small machine) is too few for a server:
		// the permission-change listener and the indexer's lock hold one
		// each for good, and every change writes its audit entry first.
		cfg.MaxConns = max(cfg.MaxConns, DefaultMaxConns)
	}
	cfg.ConnConfig.Tracer = boundedTracer{timeout: o.statementTimeout}
	if cfg.ConnConfig.ConnectTimeout == 0 { // the DSN's connect_timeout, else this
		cfg.ConnConfig.ConnectTimeout = o.statementTimeout
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("store: connect: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("store: ping: %w", err)
	}
	s := newStore(pool, o.statementTimeout)
	// Migrations may rewrite big tables, and wait for another replica's.
	mctx, cancel := context.WithTimeout(ctx, time.Hour)
	defer cancel()
	if err := s.Migrate(mctx); err != nil {
		pool.Close()
		return nil, err
	}
	return s, nil
}

// Close releases every connection.
func (s *Store) Close() { s.pool.Close() }

// Ping checks the database answers (for /readyz).
func (s *Store) Ping(ctx context.Context) error { return s.pool.Ping(ctx) }

// Pool exposes the pool to the hub's own packages (advisory locks).
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// MigrateDSN opens dsn, migrates it and closes it: the helper tests give to
// testkit.MigratedTemplate.
func MigrateDSN(ctx context.Context, dsn string) error {
	s, err := Open(ctx, dsn)
	if err != nil {
		return err
	}
	s.Close()
	return nil
}

// inTx runs fn in a transaction, committing when fn returns nil.
func (s *db) inTx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, s.pool, fn)
}

// pgErr maps PostgreSQL constraint violations to the package's errors.
func pgErr(what string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("%s: %w", what, ErrNotFound)
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case "23505": // unique_violation
			return fmt.Errorf("%s: %w", what, ErrAlreadyExists)
		case "23503": // foreign_key_violation
			return fmt.Errorf("%s: %w: %s", what, ErrNotFound, pe.Detail)
		case "23514", "22P02": // check_violation, invalid_text_representation
			return fmt.Errorf("%s: %w: %s", what, ErrInvalid, pe.Message)
		case "22021", "22P05": // character_not_in_repertoire, untranslatable_character
			return fmt.Errorf("%s: %w: text with a NUL byte or that is not UTF-8", what, ErrInvalid)
		case "22001": // string_data_right_truncation
			return fmt.Errorf("%s: %w: too long", what, ErrInvalid)
		}
	}
	if errors.Is(err, context.DeadlineExceeded) && !pgconn.Timeout(err) {
		// Out of time waiting for a connection (StatementTimeout): told
		// from other dependencies' timeouts, which are not the database's.
		return fmt.Errorf("%s: %w: %w", what, errNoConnection, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// errNoConnection marks a wait for a pooled connection that ran out of
// time: every connection is taken by statements the database has not
// answered.
var errNoConnection = errors.New("no database connection in time")

// Unavailable reports whether err is the database being out of reach or
// out of resources: a connection that could not be made or was lost (the
// server stopped, restarted or is starting up), a full disk, an I/O error,
// rather than an answer about the data: the hub answers 503, and the
// caller may try again.
func Unavailable(err error) bool {
	if err == nil {
		return false
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return true
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case strings.HasPrefix(pe.Code, "08"): // connection_exception
			return true
		case pe.Code == "57P01", pe.Code == "57P02", pe.Code == "57P03": // admin_shutdown, crash_shutdown, cannot_connect_now
			return true
		case strings.HasPrefix(pe.Code, "53"): // insufficient_resources: disk full, out of memory, too many connections
			return true
		case strings.HasPrefix(pe.Code, "58"): // system_error: an I/O error
			return true
		case pe.Code == "25006": // read_only_sql_transaction: a standby, or a primary being failed over
			return true
		}
		return false
	}
	// No answer in time (StatementTimeout, or the caller's deadline): a
	// database that hangs.
	if pgconn.Timeout(err) || errors.Is(err, errNoConnection) {
		return true
	}
	// Lost mid-query, or the connection closed: pgconn's own failures
	// (as opposed to the server's answers) are the ones that say whether
	// they may be retried.
	var conn interface{ SafeToRetry() bool }
	return errors.As(err, &conn)
}
