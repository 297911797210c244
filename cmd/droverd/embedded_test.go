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
	dir = embeddedStateDir(t)
	var deps embeddedDeps
	t.Cleanup(deps.close)
	dsn, err := deps.postgres(t.Context(), dir, "hub", slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	return dsn, dir
}

// embeddedStateDir is a state dir for droverd until the test ends.
func embeddedStateDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "droverd-pg-") // traversable by the postgres user, and a short socket path
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := prepareStateDir(dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

// postmasterPID is the PID the embedded PostgreSQL in state dir dir
// recorded, 0 when there is none.
func postmasterPID(dir string) int {
	b, err := os.ReadFile(filepath.Join(dir, "postgres", "data", "postmaster.pid"))
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
	return pid
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
// the same data, with what was committed before the kill, so the hub comes
// back without a restart of droverd.
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
	postmaster := func() int { return postmasterPID(dir) }
	killed := postmaster()
	if killed == 0 {
		t.Fatalf("no postmaster PID in %s", dir)
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

// TestEmbeddedPostgresOutOfTheTerminalsReach: the embedded PostgreSQL runs
// in a process group of its own, so a terminal's Ctrl-C (SIGINT to the
// foreground group) reaches droverd alone, which stops the hub and then
// the server. Were it to reach the server too, the server would shut down
// under the hub, and droverd would take that for a crash and start it
// again while stopping.
func TestEmbeddedPostgresOutOfTheTerminalsReach(t *testing.T) {
	_, dir := startEmbeddedPostgres(t)
	pid := postmasterPID(dir)
	if pid == 0 {
		t.Fatalf("no postmaster PID in %s", dir)
	}
	pgid, err := syscall.Getpgid(pid)
	if err != nil {
		t.Fatal(err)
	}
	if pgid == syscall.Getpgrp() {
		t.Errorf("the embedded PostgreSQL (pid %d) is in droverd's process group %d", pid, pgid)
	}
}

// TestEmbeddedPostgresStopsCleanly: droverd stops its embedded PostgreSQL
// with a fast shutdown (a checkpoint: the next start needs no crash
// recovery), not the immediate one the tests' throwaway servers get.
func TestEmbeddedPostgresStopsCleanly(t *testing.T) {
	dir := embeddedStateDir(t)
	var deps embeddedDeps
	if _, err := deps.postgres(t.Context(), dir, "hub", slog.New(slog.DiscardHandler)); err != nil {
		deps.close()
		t.Fatal(err)
	}
	deps.close()
	b, err := os.ReadFile(filepath.Join(dir, "postgres", "postgres.log"))
	if err != nil {
		t.Fatal(err)
	}
	if log := string(b); !strings.Contains(log, "received fast shutdown request") || strings.Contains(log, "immediate shutdown") {
		t.Errorf("the embedded PostgreSQL's log on stopping:\n%s", log)
	}
}
