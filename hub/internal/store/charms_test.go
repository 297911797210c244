package store_test

import (
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/droverhq/drover/hub/internal/store"
)

// TestModelCharms: a summary's charms are written with it (an adoption's
// too), a summary without them leaves them, the index's summaries carry
// them, and ListCharms answers the models in scope.
func TestModelCharms(t *testing.T) {
	f := newAdoptFixture(t)
	ctx := t.Context()
	prod, adopted := uuid.NewString(), uuid.NewString()
	if err := f.s.Models.Insert(ctx, store.Model{UUID: prod, Name: "prod", Org: "acme", Owner: f.bob.ID, ControllerUUID: f.ctrl}); err != nil {
		t.Fatal(err)
	}
	kv := store.Charm{Application: "kv", Charm: "kvstore", Revision: 2, SHA256: "aa", Units: 3}
	web := store.Charm{Application: "web", Charm: "webapp", Revision: 0, SHA256: "bb", Units: 1}
	sum := store.Model{UUID: prod, ControllerUUID: f.ctrl, Life: "alive", ApplicationCount: 2, EventIndex: 10}
	if _, err := f.s.Models.Summarize(ctx, store.Summary{Model: sum, Charms: []store.Charm{web, kv}}, time.Now()); err != nil {
		t.Fatal(err)
	}
	sum.EventIndex, sum.Status = 11, "blocked"
	if _, err := f.s.Models.UpdateSummary(ctx, sum, time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := f.s.Models.Adopt(ctx, store.Adoption{Model: store.Model{UUID: adopted, Name: "dev", Org: "globex",
		ControllerUUID: f.ctrl, Life: "alive", EventIndex: 12}, ControllerName: "east", Charms: []store.Charm{kv}, At: time.Now()}); err != nil || !ok {
		t.Fatalf("adopt: %v %v", ok, err)
	}
	known, err := f.s.Controllers.ModelSummaries(ctx, f.ctrl)
	if err != nil || !slices.Equal(known[prod].Charms, []store.Charm{web, kv}) || !slices.Equal(known[adopted].Charms, []store.Charm{kv}) {
		t.Fatalf("summaries %+v, %v", known, err)
	}
	str := func(scope store.CharmScope) []string {
		t.Helper()
		ps, err := f.s.Models.ListCharms(ctx, scope)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, p := range ps {
			out = append(out, p.Charm.Charm+" "+p.Org+"/"+p.Model+" "+p.Application+" "+p.Controller)
		}
		return out
	}
	if got, want := str(store.CharmScope{All: true}), []string{"kvstore acme/prod kv east", "kvstore globex/dev kv east", "webapp acme/prod web east"}; !slices.Equal(got, want) {
		t.Errorf("all: %q, want %q", got, want)
	}
	if got, want := str(store.CharmScope{All: true, Org: "globex"}), []string{"kvstore globex/dev kv east"}; !slices.Equal(got, want) {
		t.Errorf("globex: %q, want %q", got, want)
	}
	if got, want := str(store.CharmScope{Models: []store.ModelKey{{UUID: uuid.MustParse(prod)}}}), []string{"kvstore acme/prod kv east", "webapp acme/prod web east"}; !slices.Equal(got, want) {
		t.Errorf("prod: %q, want %q", got, want)
	}
	if got := str(store.CharmScope{}); len(got) != 0 {
		t.Errorf("no model: %q", got)
	}
	sum.EventIndex = 13
	if _, err := f.s.Models.Summarize(ctx, store.Summary{Model: sum, Charms: []store.Charm{}}, time.Now()); err != nil {
		t.Fatal(err)
	}
	if got := str(store.CharmScope{All: true, Org: "acme"}); len(got) != 0 {
		t.Errorf("prod's charms after its applications are gone: %q", got)
	}
}
