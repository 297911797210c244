package hub_test

import (
	"encoding/csv"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/authz"
	"github.com/droverhq/drover/hub/internal/store"
	"github.com/droverhq/drover/tests/testkit"
)

// TestAccessReviewScope: the hub's administrators review every grant, an
// organization's administrators the grants on its objects, others
// nobody's; names come with the grants; the CSV is safe to open; every
// review is audited.
func TestAccessReviewScope(t *testing.T) {
	f := newFixture(t)
	evil := f.user("=evil", "acme")
	f.grant(authz.UserObject(evil.ID), authz.Reader, authz.ModelObject(f.model.UUID))
	f.settle()
	review := func(tok, query string) []api.ReviewedGrant {
		t.Helper()
		var out api.AccessReview
		f.get("/v1/compliance/access?"+query, tok, &out)
		return out.Grants
	}
	has := func(gs []api.ReviewedGrant, subject, relation, objectName string) bool {
		return slices.ContainsFunc(gs, func(g api.ReviewedGrant) bool {
			return g.SubjectName == subject && g.Relation == relation && g.ObjectName == objectName && !g.Since.IsZero()
		})
	}
	alice := f.token(f.alice, time.Minute, "")
	acme := review(alice, "")
	for _, g := range acme {
		if g.Org != "acme" {
			t.Errorf("acme's administrator reviews another's grant: %+v", g)
		}
	}
	if !has(acme, "rita@example.com", "reader", "prod") || !has(acme, "will@example.com", "writer", "prod") ||
		!has(acme, "alice@example.com", "administrator", "acme") || !has(acme, "rita@example.com", "reader", "east") {
		t.Errorf("acme's review: %+v", acme)
	}
	globex := review(f.token(f.olga, time.Minute, ""), "")
	if len(globex) == 0 || slices.ContainsFunc(globex, func(g api.ReviewedGrant) bool { return g.Org != "globex" }) ||
		!has(globex, "olga@example.com", "administrator", "globex") {
		t.Errorf("globex's review: %+v", globex)
	}
	root := f.hubAdmin()
	all := review(root, "")
	if !has(all, "olga@example.com", "administrator", "globex") || !has(all, "rita@example.com", "reader", "prod") ||
		!has(all, "root@example.com", "administrator", "hub") {
		t.Errorf("the hub's review: %+v", all)
	}
	if only := review(root, "org=globex"); len(only) != len(globex) {
		t.Errorf("the hub's review of globex: %d grants, globex's own %d", len(only), len(globex))
	}
	for _, c := range []struct {
		tok, query string
		code       int
	}{
		{f.token(f.rita, time.Minute, ""), "", http.StatusForbidden},
		{alice, "org=globex", http.StatusForbidden},
		{alice, "format=xml", http.StatusBadRequest},
	} {
		if code, b := f.do(http.MethodGet, "/v1/compliance/access?"+c.query, c.tok, nil); code != c.code {
			t.Errorf("review %q: %d %s, want %d", c.query, code, b, c.code)
		}
	}

	acme = review(alice, "") // root is acme's member now
	code, h, b := f.fetch("/v1/compliance/access?format=csv", alice)
	if code != http.StatusOK || !regexp.MustCompile(`^attachment; filename="drover-access-\d{8}T\d{6}Z\.csv"$`).MatchString(h.Get("Content-Disposition")) {
		t.Fatalf("csv review: %d %v %s", code, h, b)
	}
	rows, err := csv.NewReader(strings.NewReader(string(b))).ReadAll()
	if err != nil || len(rows) != len(acme)+1 || rows[0][1] != "subject_name" {
		t.Fatalf("csv review: %q %v", rows, err)
	}
	if !slices.ContainsFunc(rows, func(r []string) bool { return r[1] == "'=evil@example.com" }) {
		t.Errorf("csv review without the guarded name: %q", rows)
	}

	var audited struct{ Entries []store.AuditEntry }
	f.get("/v1/audit?operation=access-review-export", root, &audited)
	results := map[string]int{}
	for _, e := range audited.Entries {
		results[e.Actor+" "+e.Result]++
	}
	if results["alice@example.com ok"] != 3 || results["alice@example.com denied"] != 1 || results["rita@example.com denied"] != 1 {
		t.Errorf("the reviews' audit: %v", results)
	}
}

// TestCharmInventoryFollowsTheSpoke: a deploy on a real controller
// reaches the hub's index through its event stream, and so do a scale
// and a refresh;
// GET /v1/compliance/charms answers from the index to those who may read
// the model, and a model's listing is unchanged by its charms.
func TestCharmInventoryFollowsTheSpoke(t *testing.T) {
	f := newProxyFixture(t)
	runIndexer(t, f.env)
	alice := f.token(f.alice, 5*time.Minute, "")
	mp := "/v1/models/" + f.model
	f.want(t, "deploy kv", http.StatusCreated, alice, http.MethodPost, mp+"/applications",
		map[string]any{"application": "kv", "charm-sha256": f.charmSHA, "num-units": 1})
	inventory := func(tok string) []api.CharmPlacement {
		t.Helper()
		var out api.CharmInventory
		f.get("/v1/compliance/charms", tok, &out)
		return out.Charms
	}
	rita := f.token(f.rita, 5*time.Minute, "")
	waitFor := func(units int, sha string, revision int) {
		t.Helper()
		testkit.EventuallyWithin(t, time.Minute, func() (bool, error) {
			cs := inventory(rita)
			if len(cs) != 1 {
				return false, nil
			}
			c := cs[0]
			if c.Application != "kv" || c.Charm != "kvstore" ||
				c.ModelUUID != f.model || c.Model != "prod" || c.Org != "acme" || c.Controller != "east" || c.Region != "east" ||
				c.ControllerUUID != f.spoke.UUID {
				return false, fmt.Errorf("inventory %+v", c)
			}
			return c.Units == units && c.SHA256 == sha && c.Revision == revision, nil
		}, "kv with %d units of %s (revision %d) in the inventory", units, sha, revision)
	}
	waitFor(1, f.charmSHA, 0)
	f.want(t, "scale kv", http.StatusOK, alice, http.MethodPost, mp+"/applications/kv/scale", map[string]any{"scale": 3})
	waitFor(3, f.charmSHA, 0)
	f.want(t, "refresh kv", http.StatusOK, alice, http.MethodPost, mp+"/applications/kv/charm", map[string]any{"charm-sha256": f.kv2SHA})
	waitFor(3, f.kv2SHA, 1)

	if cs := inventory(f.token(f.olga, time.Minute, "")); len(cs) != 0 {
		t.Errorf("another organization's administrator sees acme's charms: %+v", cs)
	}
	if cs := inventory(f.hubAdmin()); len(cs) != 1 {
		t.Errorf("the hub's administrator: %+v", cs)
	}
	var acmeOnly, globexOnly api.CharmInventory
	f.get("/v1/compliance/charms?org=acme", rita, &acmeOnly)
	f.get("/v1/compliance/charms?org=globex", rita, &globexOnly)
	if len(acmeOnly.Charms) != 1 || len(globexOnly.Charms) != 0 {
		t.Errorf("by organization: acme %+v, globex %+v", acmeOnly, globexOnly)
	}
	code, b := f.do(http.MethodGet, "/v1/models", rita, nil)
	if code != http.StatusOK || strings.Contains(string(b), "charm") {
		t.Errorf("the listing carries charms: %d %s", code, b)
	}
}

// TestResyncRepairsCharms: charms the index holds wrong, with every count
// right, are repaired by the indexer's periodic reset as any other drift.
func TestResyncRepairsCharms(t *testing.T) {
	e, admin, m := resyncingModel(t)
	ctx := t.Context()
	indexed := indexedModel(t, e, admin, m.UUID)
	wrong := []store.Charm{{Application: "ghost", Charm: "ghost", SHA256: "00"}}
	if _, err := e.st.Models.Summarize(ctx, store.Summary{Model: indexed, Charms: wrong}, time.Now()); err != nil {
		t.Fatal(err)
	}
	if cs, err := e.st.Models.ListCharms(ctx, store.CharmScope{All: true}); err != nil || len(cs) != 1 {
		t.Fatalf("the wrong charms written: %+v %v", cs, err)
	}
	testkit.EventuallyWithin(t, 30*time.Second, func() (bool, error) {
		cs, err := e.st.Models.ListCharms(ctx, store.CharmScope{All: true})
		return err == nil && len(cs) == 0, err
	}, "the charms repaired")
}
