package store_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"golang.org/x/sync/errgroup"

	"github.com/droverhq/drover/authz"
	"github.com/droverhq/drover/hub/internal/store"
	"github.com/droverhq/drover/tests/testkit"
)

// adoptFixture is a store with organizations acme and globex, a shared
// controller "east" and a person bob in globex.
type adoptFixture struct {
	s    *store.Store
	ctrl string
	bob  store.Identity
}

func newAdoptFixture(t *testing.T) *adoptFixture {
	t.Helper()
	s, _ := newStore(t)
	ctx := t.Context()
	for _, org := range []string{"acme", "globex"} {
		if err := s.Organizations.Ensure(ctx, org); err != nil {
			t.Fatal(err)
		}
	}
	f := &adoptFixture{s: s, ctrl: uuid.NewString()}
	if err := s.Controllers.Upsert(ctx, store.Controller{UUID: f.ctrl, Name: "east", Region: "east"}); err != nil {
		t.Fatal(err)
	}
	var err error
	if f.bob, _, err = s.Identities.Login(ctx, store.Identity{Issuer: "https://idp.test", Subject: "bob", Email: "bob@example.com"}, "globex", time.Now()); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *adoptFixture) adopt(t *testing.T, id, name string, idx uint64) (store.Model, bool) {
	t.Helper()
	m, ok, err := f.s.Models.Adopt(t.Context(), store.Adoption{Model: store.Model{UUID: id, Name: name, Org: "acme",
		ControllerUUID: f.ctrl, Life: "alive", Status: "active", UnitCount: 3, EventIndex: idx},
		ControllerName: "east", SpokeOwner: "admin", At: time.Now()})
	if err != nil {
		t.Fatalf("adopt %s: %v", name, err)
	}
	return m, ok
}

// tuples returns the expected tuples on a model as "user relation".
func (f *adoptFixture) tuples(t *testing.T, id string) []string {
	t.Helper()
	ts, err := f.s.Grants.On(t.Context(), authz.ModelObject(id))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, tu := range ts {
		out = append(out, tu.User+" "+string(tu.Relation))
	}
	slices.Sort(out)
	return out
}

func (f *adoptFixture) adoptions(t *testing.T, id string) int {
	t.Helper()
	es, _, err := f.s.Audit.Query(t.Context(), store.AuditQuery{All: true, Operation: store.OpModelAdopted, ModelUUID: id, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	return len(es)
}

func TestAdoptModelNamesOwnerTuplesAndAudit(t *testing.T) {
	f := newAdoptFixture(t)
	ctx := t.Context()
	id := uuid.NewString()
	m, ok := f.adopt(t, id, "web", 7)
	if !ok || m.Name != "web" || m.Org != "acme" || m.Owner != "" || m.UnitCount != 3 || m.EventIndex != 7 {
		t.Fatalf("adopted: %+v %v", m, ok)
	}
	if d, err := f.s.Models.DetailByUUID(ctx, id); err != nil || d.StatusSince == nil || !d.StatusSince.Equal(m.UpdatedAt) {
		t.Fatalf("status of an adopted model since %v (%v), want the adoption's time %v", d.StatusSince, err, m.UpdatedAt)
	}
	want := []string{"controller:" + f.ctrl + " controller", "organization:acme organization"}
	if got := f.tuples(t, id); !slices.Equal(got, want) {
		t.Fatalf("tuples of an adopted model: %q, want only the structural %q", got, want)
	}
	es, _, err := f.s.Audit.Query(ctx, store.AuditQuery{All: true, Operation: store.OpModelAdopted, Limit: 10})
	if err != nil || len(es) != 1 {
		t.Fatalf("audit: %+v, %v", es, err)
	}
	if e := es[0]; e.Actor != "hub" || e.ModelUUID != id || e.ControllerUUID != f.ctrl || e.Org != "acme" ||
		e.Result != store.ResultOK || e.IdentityID != "" || e.Details["spoke-owner"] != "admin" {
		t.Fatalf("audit entry: %+v", e)
	}

	// Idempotent: adopting again changes nothing and records nothing.
	if _, ok := f.adopt(t, id, "web", 9); ok {
		t.Fatal("second adoption reported a change")
	}
	if n := f.adoptions(t, id); n != 1 {
		t.Fatalf("%d audit entries after a repeated adoption, want 1", n)
	}

	// Name collisions: NAME, NAME-CONTROLLER, NAME-<8 hex of the UUID>.
	second, third := uuid.NewString(), uuid.NewString()
	if m, _ := f.adopt(t, second, "web", 8); m.Name != "web-east" {
		t.Fatalf("first fallback: %q, want web-east", m.Name)
	}
	if m, _ := f.adopt(t, third, "web", 9); m.Name != "web-"+third[:8] {
		t.Fatalf("second fallback: %q, want web-%s", m.Name, third[:8])
	}
	es, _, _ = f.s.Audit.Query(ctx, store.AuditQuery{All: true, ModelUUID: third, Limit: 10})
	if len(es) != 1 || es[0].Details["spoke-name"] != "web" || es[0].Details["name"] != "web-"+third[:8] {
		t.Fatalf("audit of a renamed adoption: %+v", es)
	}
	// Every name taken: refused, nothing written.
	fourth := uuid.NewString()
	for _, name := range store.AdoptionNames("api", "east", fourth) {
		f.adopt(t, uuid.NewString(), name, 10)
	}
	_, ok, err = f.s.Models.Adopt(ctx, store.Adoption{Model: store.Model{UUID: fourth, Name: "api", Org: "acme", ControllerUUID: f.ctrl},
		ControllerName: "east", At: time.Now()})
	if !errors.Is(err, store.ErrAlreadyExists) || ok {
		t.Fatalf("adoption with every name taken: %v %v, want ErrAlreadyExists", ok, err)
	}
	if _, err := f.s.Models.ByUUID(ctx, fourth); !errors.Is(err, store.ErrNotFound) || f.adoptions(t, fourth) != 0 {
		t.Fatalf("a refused adoption left a row (%v) or an audit entry", err)
	}

	// Adopting creates the organization when it does not exist yet (a
	// hub's default organization before anyone logged in).
	m, _, err = f.s.Models.Adopt(ctx, store.Adoption{Model: store.Model{UUID: uuid.NewString(), Name: "x", Org: "fresh",
		ControllerUUID: f.ctrl}, ControllerName: "east", At: time.Now()})
	if err != nil || m.Org != "fresh" {
		t.Fatalf("adopt into a new organization: %+v %v", m, err)
	}

	// Removal takes the tuples with it.
	if err := f.s.Models.Delete(ctx, id); err != nil {
		t.Fatal(err)
	}
	if got := f.tuples(t, id); len(got) != 0 {
		t.Fatalf("tuples left after removing an adopted model: %q", got)
	}
}

// placed is what the hub's placement inserts for bob.
func (f *adoptFixture) placed(id, name string) store.Model {
	return store.Model{UUID: id, Name: name, Org: "globex", Owner: f.bob.ID, ControllerUUID: f.ctrl, Life: "alive", Status: "available"}
}

// checkPlaced asserts that the placement's view of a model won.
func (f *adoptFixture) checkPlaced(t *testing.T, id, name string) store.Model {
	t.Helper()
	m, err := f.s.Models.ByUUID(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	if m.Owner != f.bob.ID || m.Org != "globex" || m.Name != name {
		t.Fatalf("model after placement and adoption: %+v, want bob's globex/%s", m, name)
	}
	want := []string{"controller:" + f.ctrl + " controller", "organization:globex organization", "user:" + f.bob.ID + " administrator"}
	slices.Sort(want)
	if got := f.tuples(t, id); !slices.Equal(got, want) {
		t.Fatalf("tuples: %q, want %q", got, want)
	}
	return m
}

// TestPlacementWinsOverAdoption: the hub creates a model on a controller,
// then indexes it; the controller's event for it may be applied before or
// after. Either way the row is the placement's (owner, organization,
// name, grants), once, and neither side fails.
func TestPlacementWinsOverAdoption(t *testing.T) {
	f := newAdoptFixture(t)
	ctx := t.Context()

	t.Run("event first", func(t *testing.T) { placeAfterEvent(ctx, t, f) })
	t.Run("claimed", func(t *testing.T) { placeClaimed(ctx, t, f) })
	t.Run("insert first", func(t *testing.T) { placeBeforeEvent(ctx, t, f) })
	t.Run("only an adopted row is taken over", func(t *testing.T) { placeTwice(ctx, t, f) })
	t.Run("event during the insert", func(t *testing.T) { placeDuringEvent(ctx, t, f) })
	t.Run("concurrent", func(t *testing.T) { placeConcurrently(ctx, t, f) })
}

// placeAfterEvent: the controller's event is applied first, adopting the
// model; the placement's insert takes the row over, keeping its summary.
func placeAfterEvent(ctx context.Context, t *testing.T, f *adoptFixture) {
	id := uuid.NewString()
	// The adopting organization (acme) already has a "prod": the
	// adoption falls back to prod-east; placement renames it back.
	f.adopt(t, uuid.NewString(), "prod", 1)
	if m, ok := f.adopt(t, id, "prod", 5); !ok || m.Name != "prod-east" {
		t.Fatalf("adopt: %+v %v", m, ok)
	}
	if err := f.s.Models.Insert(ctx, f.placed(id, "prod")); err != nil {
		t.Fatalf("placement after adoption: %v", err)
	}
	m := f.checkPlaced(t, id, "prod")
	if m.UnitCount != 3 || m.EventIndex != 5 || m.Status != "active" {
		t.Fatalf("the takeover dropped the summary the indexer applied: %+v", m)
	}
	// A later event changes nothing about ownership.
	if _, ok := f.adopt(t, id, "prod", 6); ok {
		t.Fatal("adopted a placed model")
	}
	f.checkPlaced(t, id, "prod")
}

// placeClaimed: the hub claims the model before creating it on the controller: an
// event that comes before the insert leaves it alone, so it never
// belongs to another organization, even for a moment.
func placeClaimed(ctx context.Context, t *testing.T, f *adoptFixture) {
	id := uuid.NewString()
	if err := f.s.Models.ClaimPlacement(ctx, f.ctrl, "claimed", "bob@example.com", time.Minute); err != nil {
		t.Fatal(err)
	}
	sum := store.Adoption{Model: store.Model{UUID: id, Name: "claimed", Org: "acme", ControllerUUID: f.ctrl, Life: "alive",
		EventIndex: 2}, ControllerName: "east", SpokeOwner: "bob@example.com", At: time.Now()}
	if _, ok, err := f.s.Models.Adopt(ctx, sum); err != nil || ok {
		t.Fatalf("adopting a claimed model: %v %v", ok, err)
	}
	if _, err := f.s.Models.ByUUID(ctx, id); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a claimed model was indexed by the adoption: %v", err)
	}
	// Another owner's model of the same name is not claimed.
	other := sum
	other.Model.UUID, other.SpokeOwner = uuid.NewString(), "admin"
	if _, ok, err := f.s.Models.Adopt(ctx, other); err != nil || !ok {
		t.Fatalf("adopting a model the claim does not name: %v %v", ok, err)
	}
	if err := f.s.Models.Insert(ctx, f.placed(id, "claimed")); err != nil {
		t.Fatal(err)
	}
	if err := f.s.Models.ReleasePlacement(ctx, f.ctrl, "claimed", "bob@example.com"); err != nil {
		t.Fatal(err)
	}
	f.checkPlaced(t, id, "claimed")
	if f.adoptions(t, id) != 0 {
		t.Fatal("a claimed model was audited as adopted")
	}
	// An expired claim does not hold adoption back.
	late := uuid.NewString()
	if err := f.s.Models.ClaimPlacement(ctx, f.ctrl, "late", "bob@example.com", -time.Second); err != nil {
		t.Fatal(err)
	}
	if _, ok := f.adopt(t, late, "late", 3); !ok {
		t.Fatal("an expired claim held the adoption back")
	}
}

// placeBeforeEvent: the placement's insert comes first; the event only
// applies its summary.
func placeBeforeEvent(ctx context.Context, t *testing.T, f *adoptFixture) {
	id := uuid.NewString()
	if err := f.s.Models.Insert(ctx, f.placed(id, "stage")); err != nil {
		t.Fatal(err)
	}
	if _, ok := f.adopt(t, id, "stage", 3); ok {
		t.Fatal("adopted a placed model")
	}
	if m := f.checkPlaced(t, id, "stage"); m.EventIndex != 3 || m.UnitCount != 3 {
		t.Fatalf("the event's summary was not applied to the placed model: %+v", m)
	}
	if n := f.adoptions(t, id); n != 0 {
		t.Fatalf("%d adoption audit entries for a placed model", n)
	}
}

// placeTwice: only an adopted row is taken over; a second placement of
// the same model is ErrAlreadyExists.
func placeTwice(ctx context.Context, t *testing.T, f *adoptFixture) {
	id := uuid.NewString()
	if err := f.s.Models.Insert(ctx, f.placed(id, "once")); err != nil {
		t.Fatal(err)
	}
	again := f.placed(id, "twice")
	if err := f.s.Models.Insert(ctx, again); !errors.Is(err, store.ErrAlreadyExists) {
		t.Fatalf("second insert of a placed model: %v, want ErrAlreadyExists", err)
	}
	f.checkPlaced(t, id, "once")
}

// placeDuringEvent: the placement's transaction has inserted the row but not committed
// when the event is applied: the summary update does not see the row,
// the adoption waits for it, then applies the summary to it.
func placeDuringEvent(ctx context.Context, t *testing.T, f *adoptFixture) {
	id := uuid.NewString()
	tx, err := f.s.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `INSERT INTO models (uuid, name, org, owner, controller_uuid) VALUES ($1, 'held', 'globex', $2, $3)`,
		id, f.bob.ID, f.ctrl); err != nil {
		t.Fatal(err)
	}
	sum := store.Model{UUID: id, Name: "held", Org: "acme", ControllerUUID: f.ctrl, Life: "alive", Status: "active",
		UnitCount: 3, EventIndex: 4}
	if indexed, err := f.s.Models.UpdateSummary(ctx, sum, time.Now()); err != nil || indexed {
		t.Fatalf("summary of a model inserted by an open transaction: %v %v, want not indexed", indexed, err)
	}
	type result struct {
		ok  bool
		err error
	}
	done := make(chan result, 1)
	go func() {
		_, ok, err := f.s.Models.Adopt(ctx, store.Adoption{Model: sum, ControllerName: "east", At: time.Now()})
		done <- result{ok, err}
	}()
	testkit.EventuallyWithin(t, 30*time.Second, func() (bool, error) {
		select {
		case r := <-done: // it must wait for the insert, not finish first
			t.Fatalf("adoption finished while the insert was open: %v %v", r.ok, r.err)
		default:
		}
		var waiting bool
		err := f.s.Pool().QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE 'INSERT INTO models%')`).Scan(&waiting)
		return waiting, err
	}, "the adoption waits for the open insert")
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if r := <-done; r.err != nil || r.ok {
		t.Fatalf("adoption after the insert committed: %v %v, want not adopted", r.ok, r.err)
	}
	m, err := f.s.Models.ByUUID(ctx, id)
	if err != nil || m.Owner != f.bob.ID || m.Org != "globex" || m.EventIndex != 4 || m.UnitCount != 3 {
		t.Fatalf("placed model after a concurrent event: %+v %v", m, err)
	}
}

// placeConcurrently: the insert and the event race; the placement wins.
func placeConcurrently(ctx context.Context, t *testing.T, f *adoptFixture) {
	for i := range 20 {
		id, name := uuid.NewString(), fmt.Sprintf("race-%d", i)
		g, gctx := errgroup.WithContext(ctx)
		g.Go(func() error { return f.s.Models.Insert(gctx, f.placed(id, name)) })
		g.Go(func() error {
			_, _, err := f.s.Models.Adopt(gctx, store.Adoption{Model: store.Model{UUID: id, Name: name, Org: "acme",
				ControllerUUID: f.ctrl, Life: "alive"}, ControllerName: "east", At: time.Now()})
			return err
		})
		if err := g.Wait(); err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
		f.checkPlaced(t, id, name)
	}
}
