package main

import (
	"context"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestEmbeddedPostgresIsDurable: the PostgreSQL droverd keeps in its state
// dir (droverd hub without --dsn, droverd dev) runs crash-safe, unlike the
// tests' throwaway servers: the hub's state and audit trail outlive a
// crash of the host.
func TestEmbeddedPostgresIsDurable(t *testing.T) {
	dir, err := os.MkdirTemp("", "droverd-pg-") // traversable by the postgres user, and a short socket path
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := prepareStateDir(dir); err != nil {
		t.Fatal(err)
	}
	var deps embeddedDeps
	defer deps.close()
	dsn, err := deps.postgres(t.Context(), dir, "hub")
	if err != nil {
		t.Fatal(err)
	}
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
