package store_test

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/droverhq/drover/authz"
	"github.com/droverhq/drover/hub/internal/store"
	"github.com/droverhq/drover/tests/testkit"
)

var (
	pgOnce sync.Once
	pg     *testkit.Postgres
	pgDir  string // the server's data, removed after the tests
	pgErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if pg != nil {
		pg.Stop()
	}
	if pgDir != "" {
		os.RemoveAll(pgDir) // each run left 60 MB in /tmp until 2026-11-23
	}
	os.Exit(code)
}

// newStore gives the test its own database cloned from the migrated template.
func newStore(t testing.TB) (*store.Store, string) {
	t.Helper()
	return newStoreFrom(t, "hub_template")
}

// newStoreFrom gives the test its own database cloned from template,
// migrated once and created with opts (its locale, for one).
func newStoreFrom(t testing.TB, template string, opts ...testkit.DatabaseOption) (*store.Store, string) {
	t.Helper()
	pgOnce.Do(func() {
		dir, err := os.MkdirTemp("", "hub-store-pg-")
		if err != nil {
			pgErr = err
			return
		}
		pgDir = dir
		pg, pgErr = testkit.StartPostgresServer(t.Context(), dir)
	})
	if pgErr != nil {
		t.Fatal(pgErr)
	}
	tmpl, err := pg.MigratedTemplate(t.Context(), template, store.MigrateDSN, opts...)
	if err != nil {
		t.Fatal(err)
	}
	dsn := pg.NewDatabase(t, tmpl)
	s, err := store.Open(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s, dsn
}

func TestMigrateIsIdempotentAndRefusesNewerSchema(t *testing.T) {
	s, dsn := newStore(t)
	if err := s.Migrate(t.Context()); err != nil {
		t.Fatalf("second migrate: %v", err)
	}
	if _, err := s.Pool().Exec(t.Context(), `INSERT INTO schema_migrations (version, name) VALUES ($1, 'future')`,
		store.SchemaVersion()+1); err != nil {
		t.Fatal(err)
	}
	_, err := store.Open(t.Context(), dsn)
	if !errors.Is(err, store.ErrSchemaTooNew) {
		t.Fatalf("open newer schema: got %v, want ErrSchemaTooNew", err)
	}
}

func TestLoginCreatesIdentityOrgAndMembershipTuples(t *testing.T) {
	s, _ := newStore(t)
	ctx := t.Context()
	now := time.Now()
	in := store.Identity{Issuer: "https://idp", Subject: "alice", Email: "alice@example.com"}
	a, created, err := s.Identities.Login(ctx, in, "acme", now)
	if err != nil || !created {
		t.Fatalf("first login: %v created=%v", err, created)
	}
	in.DisplayName = "Alice"
	b, created, err := s.Identities.Login(ctx, in, "other", now)
	if err != nil || created || b.ID != a.ID || b.Org != "acme" || b.DisplayName != "Alice" {
		t.Fatalf("second login: %+v created=%v err=%v", b, created, err)
	}
	want := map[authz.Tuple]bool{
		{User: authz.HubObject(), Relation: authz.RelHub, Object: authz.OrgObject("acme")}:      true,
		{User: authz.UserObject(a.ID), Relation: authz.Member, Object: authz.OrgObject("acme")}: true,
	}
	got, err := s.Outbox.ExpectedTuples(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("tuples %v, want %v", got, want)
	}
	for _, tu := range got {
		if !want[tu] {
			t.Fatalf("unexpected tuple %v", tu)
		}
	}
	pending, err := s.Outbox.Pending(ctx, 10)
	if err != nil || len(pending) != 2 {
		t.Fatalf("outbox %v %v", pending, err)
	}
}

func TestTypedErrors(t *testing.T) {
	s, _ := newStore(t)
	ctx := t.Context()
	if _, err := s.Identities.ByID(ctx, "not-a-uuid"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("bad id: %v", err)
	}
	if _, err := s.Groups.Create(ctx, "nope", "g"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("group in missing org: %v", err)
	}
	if err := s.Organizations.Ensure(ctx, "acme"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Groups.Create(ctx, "acme", "Bad Name"); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("bad group name: %v", err)
	}
	if _, err := s.Groups.Create(ctx, "acme", "ops"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Groups.Create(ctx, "acme", "ops"); !errors.Is(err, store.ErrAlreadyExists) {
		t.Fatalf("duplicate group: %v", err)
	}
	tu := authz.Tuple{User: authz.UserObject("x"), Relation: authz.Reader, Object: authz.ModelObject("m")}
	if err := s.Grants.Revoke(ctx, []authz.Tuple{tu}, nil); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("revoke missing: %v", err)
	}
}

func TestAuditQueryScopesFiltersAndPages(t *testing.T) {
	s, _ := newStore(t)
	ctx := t.Context()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 5 {
		org := "a"
		if i%2 == 1 {
			org = "b"
		}
		if err := s.Audit.Append(ctx, store.AuditEntry{At: base.Add(time.Duration(i) * time.Minute), Org: org,
			Operation: "op", Result: store.ResultOK, Actor: "x"}); err != nil {
			t.Fatal(err)
		}
	}
	page, next, err := s.Audit.Query(ctx, store.AuditQuery{Orgs: []string{"a"}, Limit: 2})
	if err != nil || len(page) != 2 || next.IsZero() {
		t.Fatalf("page 1: %v next=%v err=%v", page, next, err)
	}
	rest, next2, err := s.Audit.Query(ctx, store.AuditQuery{Orgs: []string{"a"}, Limit: 2, After: next})
	if err != nil || len(rest) != 1 || !next2.IsZero() {
		t.Fatalf("page 2: %v next=%v err=%v", rest, next2, err)
	}
	for _, e := range append(page, rest...) {
		if e.Org != "a" {
			t.Fatalf("entry of another org: %+v", e)
		}
	}
	n, err := s.Audit.DeleteBefore(ctx, base.Add(2*time.Minute))
	if err != nil || n != 2 {
		t.Fatalf("retention deleted %d, %v", n, err)
	}
}

// TestPoolSize: a hub's pool may open DefaultMaxConns connections, where
// pgx's default on a 2-core machine is 4 (two of which the hub holds for
// good); a DSN's pool_max_conns still decides.
func TestPoolSize(t *testing.T) {
	s, dsn := newStore(t)
	if got := s.Pool().Config().MaxConns; got < store.DefaultMaxConns {
		t.Errorf("MaxConns %d, want at least %d", got, store.DefaultMaxConns)
	}
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	s2, err := store.Open(t.Context(), dsn+sep+"pool_max_conns=3")
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if got := s2.Pool().Config().MaxConns; got != 3 {
		t.Errorf("MaxConns with pool_max_conns=3: %d", got)
	}
}

// TestUnavailable: the failures that mean the database is out of reach
// or out of resources (answered 503, worth trying again) are told from
// its answers about the data.
func TestUnavailable(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{&pgconn.PgError{Code: "57P01"}, true},  // admin_shutdown: the server is stopping
		{&pgconn.PgError{Code: "57P03"}, true},  // cannot_connect_now: starting up
		{&pgconn.PgError{Code: "08006"}, true},  // connection_failure
		{&pgconn.PgError{Code: "53100"}, true},  // disk_full
		{&pgconn.PgError{Code: "53300"}, true},  // too_many_connections
		{&pgconn.PgError{Code: "58030"}, true},  // io_error
		{&pgconn.PgError{Code: "23505"}, false}, // unique_violation: an answer
		{&pgconn.PgError{Code: "22P02"}, false}, // invalid_text_representation
		{fmt.Errorf("list models: %w", &pgconn.PgError{Code: "57P01"}), true},
		{store.ErrNotFound, false},
		{errors.New("something else"), false},
		{nil, false},
	} {
		if got := store.Unavailable(c.err); got != c.want {
			t.Errorf("Unavailable(%v) = %v, want %v", c.err, got, c.want)
		}
	}
	// A server that is not there at all: a connect error.
	_, err := store.Open(t.Context(), "postgres://postgres@127.0.0.1:1/nowhere?sslmode=disable&connect_timeout=2")
	if !store.Unavailable(err) {
		t.Errorf("Unavailable(%v) = false for a server that does not answer", err)
	}
}

// TestRefreshTokenReuse: a renewal keeps the token it took as used; that
// token again within RefreshReuseGrace is only refused, and after it ends
// the session; pruning forgets used tokens, which are then only refused.
func TestRefreshTokenReuse(t *testing.T) {
	s, _ := newStore(t)
	ctx := t.Context()
	now := time.Now()
	id, _, err := s.Identities.Login(ctx, store.Identity{Issuer: "https://idp", Subject: "alice", Email: "alice@example.com"}, "acme", now)
	if err != nil {
		t.Fatal(err)
	}
	session := func(first string) string {
		sid := uuid.NewString()
		if err := s.Sessions.Create(ctx, store.Session{ID: sid, IdentityID: id.ID, RefreshHash: []byte(first), ExpiresAt: now.Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		return sid
	}
	rotate := func(old, next string, at time.Time) error {
		_, err := s.Sessions.Rotate(ctx, []byte(old), []byte(next), now.Add(time.Hour), at)
		return err
	}
	session("a1")
	if err := rotate("a1", "a2", now); err != nil {
		t.Fatal(err)
	}
	if err := rotate("a1", "x", now.Add(time.Second)); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a1 again within the grace: %v, want not found", err)
	}
	if err := rotate("a2", "a3", now.Add(2*time.Second)); err != nil {
		t.Fatalf("the session after a refused retry: %v", err)
	}
	var reused *store.ReusedRefreshError
	if err := rotate("a1", "x", now.Add(time.Hour/2)); !errors.As(err, &reused) || reused.IdentityID != id.ID {
		t.Fatalf("a1 again past the grace: %v, want a reuse", err)
	}
	if err := rotate("a3", "a4", now.Add(time.Hour/2)); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the session's current token after a reuse: %v, want not found", err)
	}

	session("b1")
	if err := rotate("b1", "b2", now); err != nil {
		t.Fatal(err)
	}
	if n, err := s.Sessions.PruneUsedRefreshTokens(ctx, now.Add(time.Minute)); err != nil || n < 1 {
		t.Fatalf("pruned %d used tokens: %v", n, err)
	}
	if err := rotate("b1", "x", now.Add(time.Hour/2)); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a pruned used token again: %v, want not found", err)
	}
	if err := rotate("b2", "b3", now.Add(time.Hour/2)); err != nil {
		t.Fatalf("the session after a pruned token came back: %v", err)
	}
}
