package testkit

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

func TestPostgresTemplateDatabases(t *testing.T) {
	CheckLeaks(t)
	pg := StartPostgres(t)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()

	migrations := 0
	migrate := func(ctx context.Context, dsn string) error {
		migrations++
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			return err
		}
		_, err = conn.Exec(ctx, `CREATE TABLE models (name text PRIMARY KEY); INSERT INTO models VALUES ('seed')`)
		return errors.Join(err, conn.Close(ctx))
	}
	tmpl, err := pg.MigratedTemplate(ctx, "models_tmpl", migrate)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := pg.MigratedTemplate(ctx, "models_tmpl", migrate); err != nil || again != tmpl || migrations != 1 {
		t.Fatalf("second MigratedTemplate = %q, %v after %d migrations; want cached %q", again, err, migrations, tmpl)
	}

	// Two databases from one template are independent copies.
	var dsns []string
	for range 2 {
		dsns = append(dsns, pg.NewDatabase(t, tmpl))
	}
	conn, err := pgx.Connect(ctx, dsns[0])
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `INSERT INTO models VALUES ('only-in-first')`); err != nil {
		t.Fatal(err)
	}
	for i, want := range []int{2, 1} {
		c, err := pgx.Connect(ctx, dsns[i])
		if err != nil {
			t.Fatal(err)
		}
		var n int
		err = c.QueryRow(ctx, `SELECT count(*) FROM models`).Scan(&n)
		if cerr := c.Close(ctx); err == nil {
			err = cerr
		}
		if err != nil || n != want {
			t.Fatalf("database %d: count = %d, %v; want %d", i, n, err, want)
		}
	}
}

func TestPostgresTCPAndCreateDatabase(t *testing.T) {
	CheckLeaks(t)
	pg := StartPostgres(t, WithTCP(0))
	if pg.Host() != "127.0.0.1" || pg.Port() == 0 {
		t.Fatalf("host:port = %s:%d, want 127.0.0.1:<free>", pg.Host(), pg.Port())
	}
	ctx := t.Context()
	if err := pg.CreateDatabase(ctx, "plain"); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, pg.DSN("plain"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var db string
	if err := conn.QueryRow(ctx, `SELECT current_database()`).Scan(&db); err != nil || db != "plain" {
		t.Fatalf("current_database = %q, %v", db, err)
	}
}

func TestPostgresServerRestartKeepsData(t *testing.T) {
	CheckLeaks(t)
	dir, err := os.MkdirTemp("", "testkit-pg-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	ctx := t.Context()
	pg, err := StartPostgresServer(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	fsync := showFsync(t, pg)
	err = errors.Join(pg.CreateDatabase(ctx, "kept"), pg.Stop())
	if err != nil {
		t.Fatal(err)
	}
	if fsync != "off" {
		t.Errorf("a test's server runs with fsync %q, want off", fsync)
	}
	// Started again as droverd starts the one it keeps: crash-safe.
	pg, err = StartPostgresServer(ctx, dir, Durable())
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Stop()
	if err := pg.Exec(ctx, "kept", "SELECT 1"); err != nil {
		t.Fatalf("database lost across restart: %v", err)
	}
	if fsync := showFsync(t, pg); fsync != "on" {
		t.Errorf("a durable server runs with fsync %q, want on", fsync)
	}
}

func showFsync(t *testing.T, pg *Postgres) string {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), pg.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var v string
	if err := conn.QueryRow(t.Context(), "SHOW fsync").Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestPostgresICULocaleTemplate: a template made WithICULocale, and its
// copies, sort by that locale, which disagrees with byte order (the
// server's C) the way glibc's en_US.UTF-8 does.
func TestPostgresICULocaleTemplate(t *testing.T) {
	CheckLeaks(t)
	pg := StartPostgres(t)
	ctx := t.Context()
	noop := func(context.Context, string) error { return nil }
	tmpl, err := pg.MigratedTemplate(ctx, "en_tmpl", noop, WithICULocale(EnglishICULocale))
	if err != nil {
		t.Fatal(err)
	}
	for db, want := range map[string]string{pg.NewDatabase(t, tmpl): "a1 ab a-c", pg.NewDatabase(t, ""): "a-c a1 ab"} {
		conn, err := pgx.Connect(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		var got string
		err = conn.QueryRow(ctx, `SELECT string_agg(n, ' ' ORDER BY n) FROM unnest('{ab,a-c,a1}'::text[]) n`).Scan(&got)
		if cerr := conn.Close(ctx); err == nil {
			err = cerr
		}
		if err != nil || got != want {
			t.Errorf("%s sorts %q, %v; want %q", db, got, err, want)
		}
	}
}
