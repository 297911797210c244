package store_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/droverhq/drover/authz"
	"github.com/droverhq/drover/hub/internal/hubtest"
	"github.com/droverhq/drover/hub/internal/store"
	"github.com/droverhq/drover/tests/testkit"
)

// orderNames sort differently in byte order and under en_US.UTF-8.
var orderNames = hubtest.OrderNames

// newEnglishStore gives the test a database whose default collation is
// English (testkit.EnglishICULocale), as on a deployment initialised with
// en_US.UTF-8, and checks that it really disagrees with byte order on
// orderNames: otherwise an order test on it would prove nothing.
func newEnglishStore(t *testing.T) *store.Store {
	t.Helper()
	s, _ := newStoreFrom(t, "hub_template_en", testkit.WithICULocale(testkit.EnglishICULocale))
	var dbOrder []string
	if err := s.Pool().QueryRow(t.Context(), `SELECT array_agg(n ORDER BY n) FROM unnest($1::text[]) n`,
		orderNames).Scan(&dbOrder); err != nil {
		t.Fatal(err)
	}
	if slices.Equal(dbOrder, slices.Sorted(slices.Values(orderNames))) {
		t.Fatalf("the database's collation sorts %q in byte order; the test needs one that does not", dbOrder)
	}
	return s
}

// TestListingsAreInByteOrder: on a database whose default collation is not
// byte order, the model, organization and controller listings are still
// in byte order (Go's string order), as on a database created with C, and
// the unique and foreign keys on those columns still hold.
func TestListingsAreInByteOrder(t *testing.T) {
	s := newEnglishStore(t)
	ctx := t.Context()
	sorted := slices.Sorted(slices.Values(orderNames))

	want, err := hubtest.SeedOrder(ctx, s, orderNames)
	if err != nil {
		t.Fatal(err)
	}

	// The keys rebuilt under "C" still hold: (org, name) is unique and org
	// names an organization.
	ctrls, err := s.Controllers.List(ctx, nil, true)
	if err != nil || len(ctrls) == 0 {
		t.Fatalf("controllers: %v %v", ctrls, err)
	}
	dup := store.Model{UUID: uuid.NewString(), Name: "a-c", Org: "ab", ControllerUUID: ctrls[0].UUID}
	if err := s.Models.Insert(ctx, dup); !errors.Is(err, store.ErrAlreadyExists) {
		t.Fatalf("duplicate (org, name): %v, want ErrAlreadyExists", err)
	}
	dup.Org = "a"
	if err := s.Models.Insert(ctx, dup); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("model in a missing organization: %v, want ErrNotFound", err)
	}

	var got []string
	v := store.Visibility{Orgs: orderNames, Subjects: []string{}, Relations: []authz.Relation{}}
	if err := s.Models.Visible(ctx, v, func(m *store.ModelRow) error {
		got = append(got, string(m.Org)+"/"+string(m.Name))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Errorf("VisibleModels lists\n %q\nwant byte order\n %q", got, want)
	}

	orgs, err := s.Organizations.List(ctx, orderNames)
	if err != nil {
		t.Fatal(err)
	}
	if got := hubtest.Names(orgs, func(o store.Organization) string { return o.Name }); !slices.Equal(got, sorted) {
		t.Errorf("ListOrganizations lists %q, want byte order %q", got, sorted)
	}
	cs, err := s.Controllers.List(ctx, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	if got := hubtest.Names(cs, func(c store.Controller) string { return c.Name }); !slices.Equal(got, sorted) {
		t.Errorf("ListControllers lists %q, want byte order %q", got, sorted)
	}
}

// TestModelListingReadsIndexInOrder: on a database whose default collation
// is not byte order, the listing queries (whole rows and keys) still read models in the order of
// its (org, name) index, with no Sort over 10,000 rows, as it does for an
// organization administrator (BenchmarkVisibleModels).
func TestModelListingReadsIndexInOrder(t *testing.T) {
	s := newEnglishStore(t)
	ctx := t.Context()
	if err := s.Organizations.Ensure(ctx, "bench"); err != nil {
		t.Fatal(err)
	}
	c := store.Controller{UUID: uuid.NewString(), Name: "c", Org: "bench", APIAddresses: []string{"127.0.0.1:1"}}
	if err := s.Controllers.Upsert(ctx, c); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pool().Exec(ctx, `INSERT INTO models (uuid, name, org, controller_uuid)
		SELECT gen_random_uuid(), 'm-' || i, 'bench', $1 FROM generate_series(1, 10000) AS i`, c.UUID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pool().Exec(ctx, `ANALYZE`); err != nil {
		t.Fatal(err)
	}
	for name, q := range map[string]string{"VisibleModels": store.ListModelsSQL, "VisibleModelKeys": store.ListModelKeysSQL} {
		rows, err := s.Pool().Query(ctx, `EXPLAIN (COSTS OFF) `+q, []string{"bench"}, []uuid.UUID{uuid.MustParse(c.UUID)},
			[]string{"user:x", authz.Everyone}, []string{string(authz.Reader), string(authz.Writer), string(authz.Administrator)})
		if err != nil {
			t.Fatal(err)
		}
		var plan strings.Builder
		var line string
		var indexScan, sorts bool
		if _, err := pgx.ForEachRow(rows, []any{&line}, func() error {
			fmt.Fprintln(&plan, line)
			indexScan = indexScan || strings.Contains(line, "Index Scan using models_org_name_key on models")
			sorts = sorts || strings.Contains(line, "Sort")
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s plan:\n%s", name, plan.String())
		if !indexScan || sorts {
			t.Errorf("%s does not read models in (org, name) index order without sorting:\n%s", name, plan.String())
		}
	}
}
