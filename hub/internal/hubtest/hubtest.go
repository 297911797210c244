// Package hubtest runs the real things hub tests need: one private
// PostgreSQL server and one embedded OpenFGA server per test binary, one
// database (cloned from a migrated template) and one OpenFGA store per test.
package hubtest

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"

	"github.com/droverhq/drover/authz"
	"github.com/droverhq/drover/authz/embedded"
	"github.com/droverhq/drover/hub/internal/store"
	"github.com/droverhq/drover/tests/testkit"
)

var (
	pg     *testkit.Postgres
	fgaURL string
	seq    atomic.Int64
)

// Main starts the servers, runs the tests and stops the servers.
func Main(m *testing.M) int {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "hubtest-pg-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if pg, err = testkit.StartPostgresServer(ctx, dir); err != nil {
		fmt.Fprintln(os.Stderr, "start postgres:", err)
		return 1
	}
	defer pg.Stop()
	fga, err := embedded.Start(ctx, embedded.Config{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "start openfga:", err)
		return 1
	}
	defer fga.Stop()
	fgaURL = fga.URL()
	return m.Run()
}

// Postgres is the shared server.
func Postgres() *testkit.Postgres { return pg }

// OpenFGAURL is the shared OpenFGA server's URL.
func OpenFGAURL() string { return fgaURL }

// DSN returns a fresh migrated database for the test.
func DSN(t testing.TB) string {
	t.Helper()
	return newDatabase(t, "hub_template")
}

// EnglishDSN returns a fresh migrated database whose default collation is
// English (testkit.EnglishICULocale) rather than the server's C, as on a
// deployment initialised with en_US.UTF-8: for tests that hold an order
// that must not depend on the deployment.
func EnglishDSN(t testing.TB) string {
	t.Helper()
	return newDatabase(t, "hub_template_en", testkit.WithICULocale(testkit.EnglishICULocale))
}

// newDatabase copies template, made with opts and migrated once.
func newDatabase(t testing.TB, template string, opts ...testkit.DatabaseOption) string {
	t.Helper()
	tmpl, err := pg.MigratedTemplate(t.Context(), template, store.MigrateDSN, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return pg.NewDatabase(t, tmpl)
}

// Store opens a fresh migrated database for the test.
func Store(t testing.TB) *store.Store {
	t.Helper()
	s, err := store.Open(t.Context(), DSN(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// StoreName returns an OpenFGA store name no other test uses.
func StoreName() string { return fmt.Sprintf("hubtest-%d", seq.Add(1)) }

// Authz returns a client of a fresh OpenFGA store.
func Authz(t testing.TB) *authz.Client {
	t.Helper()
	c, err := authz.New(t.Context(), fgaURL, StoreName())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// OrderNames sort differently in byte order ("a-c" < "a1" < "ab", "m-10" <
// "m-9" < "m10") and under en_US.UTF-8 ("a1" < "ab" < "a-c", "m-10" <
// "m10" < "m-9"): listing-order tests use them.
var OrderNames = []string{"ab", "m10", "a-c", "m-9", "a1", "m-10"}

// SeedOrder creates an organization and a controller named after each of
// names, and a model of every name in every organization, spread over the
// controllers. It returns the models' "org/name" in byte order.
func SeedOrder(ctx context.Context, st *store.Store, names []string) ([]string, error) {
	var ctrls []string
	for _, n := range names {
		if err := st.Organizations.Ensure(ctx, n); err != nil {
			return nil, err
		}
		c := store.Controller{UUID: uuid.NewString(), Name: n, APIAddresses: []string{"127.0.0.1:1"}}
		if err := st.Controllers.Upsert(ctx, c); err != nil {
			return nil, err
		}
		ctrls = append(ctrls, c.UUID)
	}
	for i, org := range names {
		for j, name := range names {
			m := store.Model{UUID: uuid.NewString(), Name: name, Org: org, ControllerUUID: ctrls[(i+j)%len(ctrls)]}
			if err := st.Models.Insert(ctx, m); err != nil {
				return nil, err
			}
		}
	}
	sorted := slices.Sorted(slices.Values(names))
	var want []string
	for _, org := range sorted {
		for _, name := range sorted {
			want = append(want, org+"/"+name)
		}
	}
	return want, nil
}

// Names returns name(x) for each of xs, in order: what a listing test
// compares with the order it wants.
func Names[T any](xs []T, name func(T) string) []string {
	out := make([]string, 0, len(xs))
	for _, x := range xs {
		out = append(out, name(x))
	}
	return out
}
