package embedded_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"golang.org/x/sync/errgroup"

	"github.com/droverhq/drover/authz"
	"github.com/droverhq/drover/authz/embedded"
	"github.com/droverhq/drover/tests/testkit"
)

// TestSeveralServersInOneProcess starts two servers side by side (Run's
// global tracer and signal handler must not get in the way), checks both
// answer, and that Stop really stops them and may be repeated.
func TestSeveralServersInOneProcess(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	var servers []*embedded.Server
	for range 2 {
		s, err := embedded.Start(ctx, embedded.Config{})
		if err != nil {
			t.Fatal(err)
		}
		servers = append(servers, s)
	}
	if servers[0].URL() == servers[1].URL() {
		t.Fatalf("both servers on %s", servers[0].URL())
	}
	for _, s := range servers {
		resp, err := http.Get(s.URL() + "/stores")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s/stores: %s", s.URL(), resp.Status)
		}
	}
	for _, s := range servers {
		if err := s.Stop(); err != nil {
			t.Fatal(err)
		}
		if err := s.Stop(); err != nil {
			t.Fatalf("second Stop: %v", err)
		}
		if resp, err := http.Get(s.URL() + "/healthz"); err == nil {
			resp.Body.Close()
			t.Fatalf("%s still answers after Stop", s.URL())
		}
	}
}

// TestPostgres: servers sharing one database, started together, migrate
// it one at a time into their own schema, and each sees what the other
// writes (hub replicas, each with its own embedded OpenFGA).
func TestPostgres(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	pg := testkit.StartPostgres(t)
	if err := pg.CreateDatabase(ctx, "hub"); err != nil {
		t.Fatal(err)
	}
	dsn := pg.DSN("hub")
	servers := make([]*embedded.Server, 2)
	var g errgroup.Group
	for i := range servers {
		g.Go(func() (err error) {
			servers[i], err = embedded.Start(ctx, embedded.Config{Engine: embedded.EnginePostgres, URI: dsn, Schema: "openfga", MaxOpenConns: 4})
			return err
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	for _, s := range servers {
		t.Cleanup(func() { _ = s.Stop() })
	}
	a, err := authz.New(ctx, servers[0].URL(), "drover")
	if err != nil {
		t.Fatal(err)
	}
	b, err := authz.New(ctx, servers[1].URL(), "drover")
	if err != nil {
		t.Fatal(err)
	}
	if a.StoreID() != b.StoreID() {
		t.Fatalf("two stores named drover: %s and %s", a.StoreID(), b.StoreID())
	}
	tu := authz.Tuple{User: authz.UserObject("alice"), Relation: authz.Reader, Object: authz.ModelObject("m1")}
	if err := a.Write(ctx, []authz.Tuple{tu}, nil); err != nil {
		t.Fatal(err)
	}
	if ok, err := b.Has(ctx, tu); err != nil || !ok {
		t.Fatalf("the other server has the tuple: %v %v", ok, err)
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var where []string
	rows, _ := conn.Query(ctx, `SELECT table_schema FROM information_schema.tables WHERE table_name = 'tuple'`)
	if where, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil || len(where) != 1 || where[0] != "openfga" {
		t.Errorf("OpenFGA's tuple table is in schemas %v (%v), want openfga alone", where, err)
	}
}

func TestConfigErrors(t *testing.T) {
	ctx := t.Context()
	if _, err := embedded.Start(ctx, embedded.Config{Engine: "mysql"}); err == nil {
		t.Error("unsupported engine accepted")
	}
	if _, err := embedded.Start(ctx, embedded.Config{Engine: embedded.EnginePostgres}); err == nil {
		t.Error("postgres without URI accepted")
	}
	// A postgres server that is not there: Start fails, bounded by
	// StartTimeout, instead of hanging.
	_, err := embedded.Start(ctx, embedded.Config{
		Engine:       embedded.EnginePostgres,
		URI:          "postgres://nobody@127.0.0.1:1/none?sslmode=disable&connect_timeout=1",
		StartTimeout: 3 * time.Second,
	})
	if err == nil {
		t.Fatal("start against a missing postgres succeeded")
	}
	if errors.Is(err, context.Canceled) {
		t.Fatalf("unexpected cancel: %v", err)
	}
}
