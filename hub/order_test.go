package hub_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/droverhq/drover/authz"
	"github.com/droverhq/drover/hub/internal/hubtest"
	"github.com/droverhq/drover/hub/internal/store"
)

// TestListingsAreInByteOrderOverHTTP: a hub whose database sorts text as
// en_US.UTF-8 does lists models, organizations and controllers in byte
// order, as a hub on a C database does, so `drover models` and its pages
// read the same on every deployment.
func TestListingsAreInByteOrderOverHTTP(t *testing.T) {
	e := newEnvOn(t, hubtest.EnglishDSN(t))
	ctx := t.Context()
	names := hubtest.OrderNames
	sorted := slices.Sorted(slices.Values(names))
	op := e.user("op", "acme")
	e.grant(authz.UserObject(op.ID), authz.Administrator, authz.HubObject())

	want, err := hubtest.SeedOrder(ctx, e.st, names)
	if err != nil {
		t.Fatal(err)
	}
	e.settle()
	tok := e.token(op, time.Minute, "")

	var models struct{ Models []store.Model }
	e.get("/v1/models", tok, &models)
	if got := hubtest.Names(models.Models, func(m store.Model) string { return m.Org + "/" + m.Name }); !slices.Equal(got, want) {
		t.Errorf("GET /v1/models lists\n %q\nwant byte order\n %q", got, want)
	}
	var orgs struct{ Organizations []store.Organization }
	e.get("/v1/organizations", tok, &orgs)
	got := slices.DeleteFunc(hubtest.Names(orgs.Organizations, func(o store.Organization) string { return o.Name }),
		func(n string) bool { return !slices.Contains(names, n) }) // not the harness's own
	if !slices.Equal(got, sorted) {
		t.Errorf("GET /v1/organizations lists %q, want byte order %q", got, sorted)
	}
	var cs struct{ Controllers []store.Controller }
	e.get("/v1/controllers", tok, &cs)
	if got := hubtest.Names(cs.Controllers, func(c store.Controller) string { return c.Name }); !slices.Equal(got, sorted) {
		t.Errorf("GET /v1/controllers lists %q, want byte order %q", got, sorted)
	}
}

// get GETs path with token and decodes the 200 answer into v.
func (e *env) get(path, token string, v any) {
	e.t.Helper()
	code, body := e.do(http.MethodGet, path, token, nil)
	if code != http.StatusOK {
		e.t.Fatalf("GET %s = %d %s", path, code, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		e.t.Fatalf("GET %s: %v", path, err)
	}
}
