package main

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/droverhq/drover/tests/testkit"
)

// startEmbeddedPostgres starts droverd's embedded PostgreSQL in a state
// dir of its own until the test ends, and returns its database's DSN and
// the state dir.
func startEmbeddedPostgres(t *testing.T) (dsn, dir string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "droverd-pg-") // traversable by the postgres user, and a short socket path
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := prepareStateDir(dir); err != nil {
		t.Fatal(err)
	}
	var deps embeddedDeps
	t.Cleanup(deps.close)
	dsn, err = deps.postgres(t.Context(), dir, "hub", slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	return dsn, dir
}

// TestEmbeddedPostgresIsDurable: the PostgreSQL droverd keeps in its state
// dir (droverd hub without --dsn, droverd dev) runs crash-safe, unlike the
// tests' throwaway servers: the hub's state and audit trail outlive a
// crash of the host.
func TestEmbeddedPostgresIsDurable(t *testing.T) {
	dsn, _ := startEmbeddedPostgres(t)
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	for _, setting := range []string{"fsync", "synchronous_commit", "full_page_writes"} {
		var v string
		if err := conn.QueryRow(t.Context(), "SHOW "+setting).Scan(&v); err != nil {
			t.Fatal(err)
		}
		if v != "on" {
			t.Errorf("%s = %s, want on", setting, v)
		}
	}
}

// TestEmbeddedPostgresRestarts: the embedded PostgreSQL killed under
// droverd (as the kernel's out-of-memory killer would) is started again on
// the same data, with what was committed before; it used to stay down,
// and the hub with it, until droverd was restarted.
func TestEmbeddedPostgresRestarts(t *testing.T) {
	dsn, dir := startEmbeddedPostgres(t)
	kept := func() (n int, err error) {
		conn, err := pgx.Connect(t.Context(), dsn)
		if err != nil {
			return 0, err
		}
		defer conn.Close(context.Background())
		err = conn.QueryRow(t.Context(), "SELECT count(*) FROM kept WHERE v = 'before'").Scan(&n)
		return n, err
	}
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(t.Context(), "CREATE TABLE kept (v text); INSERT INTO kept VALUES ('before')"); err != nil {
		t.Fatal(err)
	}
	conn.Close(context.Background())
	pidFile := filepath.Join(dir, "postgres", "data", "postmaster.pid")
	postmaster := func() int {
		b, err := os.ReadFile(pidFile)
		if err != nil {
			return 0
		}
		pid, _ := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
		return pid
	}
	killed := postmaster()
	if killed == 0 {
		t.Fatalf("no postmaster PID in %s", pidFile)
	}
	if err := syscall.Kill(killed, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var n int
	testkit.EventuallyWithin(t, 2*time.Minute, func() (bool, error) {
		if pid := postmaster(); pid == killed || pid == 0 {
			return false, nil
		}
		var err error
		n, err = kept()
		return err == nil, nil
	}, "the embedded PostgreSQL started again after it was killed")
	if n != 1 {
		t.Errorf("the row committed before the kill: %d copies after the restart, want 1", n)
	}
}
