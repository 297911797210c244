package pgserver

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// startIn starts a server in a fresh directory, removed when the test ends.
func startIn(t *testing.T, opts ...Option) (*Server, string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "pgserver-") // short: socket paths are limited to 107 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	s, err := Start(ctx, dir, opts...)
	if errors.Is(err, ErrNoPostgres) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return s, dir
}

func show(t *testing.T, s *Server, setting string) string {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), s.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.WithoutCancel(t.Context()))
	var v string
	if err := conn.QueryRow(t.Context(), "SHOW "+setting).Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestDurableServerKeepsDataAndStopsFast: a durable server (droverd's) runs
// with fsync on, keeps a database across a restart on its directory, and
// stops with a fast shutdown.
func TestDurableServerKeepsDataAndStopsFast(t *testing.T) {
	s, dir := startIn(t, Durable())
	if v := show(t, s, "fsync"); v != "on" {
		t.Errorf("fsync = %s, want on", v)
	}
	if err := s.EnsureDatabase(t.Context(), "kept"); err != nil {
		t.Fatal(err)
	}
	if err := s.EnsureDatabase(t.Context(), "kept"); err != nil {
		t.Fatalf("EnsureDatabase on an existing database: %v", err)
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.Exited():
	default:
		t.Fatal("Exited not closed after Stop")
	}
	b, err := os.ReadFile(s.LogPath())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "received fast shutdown request") {
		t.Errorf("log on stopping:\n%s", b)
	}
	again, err := Start(t.Context(), dir, Durable())
	if err != nil {
		t.Fatal(err)
	}
	defer again.Stop()
	if err := again.Exec(t.Context(), "kept", "SELECT 1"); err != nil {
		t.Fatalf("database lost across restart: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "data", "PG_VERSION")); err != nil {
		t.Fatal(err)
	}
}

// TestThrowawayServerOverTCP: a server that is not durable runs without
// fsync, and WithTCP(0) listens on a free loopback port.
func TestThrowawayServerOverTCP(t *testing.T) {
	s, _ := startIn(t, WithTCP(0))
	defer s.Stop()
	if s.Host() != "127.0.0.1" || s.Port() == 0 {
		t.Fatalf("host:port = %s:%d", s.Host(), s.Port())
	}
	if v := show(t, s, "fsync"); v != "off" {
		t.Errorf("fsync = %s, want off", v)
	}
}

// TestStartRefusesADirTheServerCannotEnter: as root the server runs as the
// postgres user; a dir under a parent that user cannot traverse (0700,
// owned by root) is an *AccessError naming that parent at once, not a
// start that times out with a permission error in the server's log.
func TestStartRefusesADirTheServerCannotEnter(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the server runs as the postgres user only as root")
	}
	parent, err := os.MkdirTemp("", "pgserver-private-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(parent) })
	if err := os.Chmod(parent, 0o700); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(parent, "state", "postgres")
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	s, err := Start(ctx, dir)
	if errors.Is(err, ErrNoPostgres) {
		t.Skip(err)
	}
	if err == nil {
		s.Stop()
		t.Fatalf("the server started in %s, under a 0700 root directory", dir)
	}
	var ae *AccessError
	if !errors.As(err, &ae) || ae.Blocked != parent || ae.User != "postgres" {
		t.Fatalf("Start under a 0700 root directory: %v, want an AccessError naming %s", err, parent)
	}
	if !strings.Contains(err.Error(), "chmod o+x "+parent) {
		t.Errorf("the message says no remedy: %v", err)
	}
}
