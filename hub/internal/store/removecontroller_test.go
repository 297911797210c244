package store_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/droverhq/drover/authz"
	"github.com/droverhq/drover/hub/internal/store"
)

// TestRemoveController: a controller hosting models is refused, naming
// them; forced, it goes with its models and every tuple on any of them,
// the outbox queueing their deletion; other controllers keep theirs.
func TestRemoveController(t *testing.T) {
	f := newAdoptFixture(t)
	ctx := t.Context()
	west := uuid.NewString()
	if err := f.s.Controllers.Upsert(ctx, store.Controller{UUID: west, Name: "west", Org: "acme", Region: "west"}); err != nil {
		t.Fatal(err)
	}
	onEast, onWest := uuid.NewString(), uuid.NewString()
	for _, m := range []store.Model{
		{UUID: onEast, Name: "prod", Org: "acme", Owner: f.bob.ID, ControllerUUID: f.ctrl},
		{UUID: onWest, Name: "prod", Org: "globex", Owner: f.bob.ID, ControllerUUID: west},
	} {
		if err := f.s.Models.Insert(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	for _, g := range []authz.Tuple{
		{User: authz.UserObject(f.bob.ID), Relation: authz.Administrator, Object: authz.ControllerObject(west)},
		{User: authz.UserObject(f.bob.ID), Relation: authz.Reader, Object: authz.ModelObject(onWest)},
	} {
		if err := f.s.Grants.Add(ctx, g); err != nil {
			t.Fatal(err)
		}
	}
	before := f.expected(t)

	_, err := f.s.Controllers.Remove(ctx, west, false)
	var hosts *store.HostsModelsError
	if !errors.As(err, &hosts) || !slices.Equal(hosts.Models, []string{"bob@example.com/prod"}) {
		t.Fatalf("RemoveController without force: %v, want a refusal naming bob@example.com/prod", err)
	}
	if want := "controller west still hosts 1 model (bob@example.com/prod)"; err.Error() != want {
		t.Errorf("refusal %q, want %q", err, want)
	}
	if got := f.expected(t); !slices.Equal(got, before) {
		t.Errorf("a refused removal changed the tuples:\n%v\nwant\n%v", got, before)
	}

	forgotten, err := f.s.Controllers.Remove(ctx, west, true)
	if err != nil || !slices.Equal(forgotten, []string{"bob@example.com/prod"}) {
		t.Fatalf("forced RemoveController = %v, %v", forgotten, err)
	}
	if _, err := f.s.Controllers.ByUUID(ctx, west); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the controller is still there: %v", err)
	}
	if _, err := f.s.Models.ByUUID(ctx, onWest); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("its model is still indexed: %v", err)
	}
	if _, err := f.s.Models.ByUUID(ctx, onEast); err != nil {
		t.Errorf("another controller's model went too: %v", err)
	}
	for _, tu := range f.expected(t) {
		if strings.Contains(tu, west) || strings.Contains(tu, onWest) {
			t.Errorf("tuple %s survived its controller", tu)
		}
	}
	if got := len(f.expected(t)); got == 0 || got >= len(before) {
		t.Errorf("%d tuples left of %d", got, len(before))
	}
	deletes := 0
	pending, err := f.s.Outbox.Pending(ctx, 1000)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range pending {
		if e.Delete && (strings.Contains(e.Tuple.Object, west) || strings.Contains(e.Tuple.Object, onWest)) {
			deletes++
		}
	}
	if want := len(before) - len(f.expected(t)); deletes != want {
		t.Errorf("%d deletions queued for OpenFGA, want %d", deletes, want)
	}

	if _, err := f.s.Controllers.Remove(ctx, west, true); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("removing it again: %v, want not found", err)
	}
	if _, err := f.s.Controllers.Remove(ctx, f.ctrl, false); !errors.As(err, &hosts) {
		t.Errorf("east hosts acme/prod and was not refused: %v", err)
	}
}

// expected is every expected tuple as "user relation object", sorted.
func (f *adoptFixture) expected(t *testing.T) []string {
	t.Helper()
	ts, err := f.s.Outbox.ExpectedTuples(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, tu := range ts {
		out = append(out, tu.String())
	}
	slices.Sort(out)
	return out
}

// TestForgottenModelsComeBack: a model forgotten with its controller comes
// back, when the controller is registered again, with its organization,
// name, owner, creation time and grants, but a grant to an identity removed
// meanwhile; registered again by another organization, or with another CA
// (another server claiming its UUID), its models are adopted afresh
// (owner-less), and what was kept of them dropped; what is kept is
// pruned.
func TestForgottenModelsComeBack(t *testing.T) {
	x := newForgottenFixture(t)
	ctx := t.Context()
	before := x.onShop(t)
	if _, err := x.s.Controllers.Remove(ctx, x.ctl.UUID, true); err != nil {
		t.Fatal(err)
	}
	if err := x.s.Identities.Remove(ctx, x.dave.ID); err != nil {
		t.Fatal(err)
	}
	x.register(t, x.ctl)
	if m := x.readopt(t, x.shop, "shop"); m.Owner != x.bob.ID || m.Org != "globex" || m.Name != "shop" {
		t.Errorf("restored: %+v", m)
	}
	var want []string
	for _, tu := range before {
		if !strings.Contains(tu, x.dave.ID) {
			want = append(want, tu)
		}
	}
	if got := x.onShop(t); !slices.Equal(got, want) || len(want) != len(before)-1 {
		t.Errorf("the restored model's tuples:\n%q\nwant\n%q", got, want)
	}

	// The same UUID registered with another CA (another server claiming
	// it, now that it is free): ops is adopted afresh, handed to nobody.
	if _, err := x.s.Controllers.Remove(ctx, x.ctl.UUID, true); err != nil {
		t.Fatal(err)
	}
	x.register(t, store.Controller{UUID: x.ctl.UUID, Name: "west", Org: "globex", Region: "west", CACert: "another CA"})
	if m := x.readopt(t, x.ops, "ops"); m.Owner != "" {
		t.Errorf("adopted by a server with another CA: %+v", m)
	}
	// Registered again by another organization: lab is adopted afresh.
	if _, err := x.s.Controllers.Remove(ctx, x.ctl.UUID, true); err != nil {
		t.Fatal(err)
	}
	x.ctl.Org = "acme"
	x.register(t, x.ctl)
	if m := x.readopt(t, x.lab, "lab"); m.Owner != "" {
		t.Errorf("adopted by a controller of another organization: %+v", m)
	}
	// Left: shop's record (forgotten again with the second removal) and
	// ops's (with the third); lab's went with its adoption.
	if n, err := x.s.Models.PruneForgotten(ctx, time.Now().Add(time.Minute)); err != nil || n != 2 {
		t.Errorf("pruned %d (%v), want 2", n, err)
	}
}

// forgottenFixture is TestForgottenModelsComeBack's: controller west of
// globex hosting bob's models shop, lab and ops, created two days ago;
// shop granted to carol (reader) and dave (writer).
type forgottenFixture struct {
	*adoptFixture
	ctl            store.Controller
	created        time.Time
	dave           store.Identity
	shop, lab, ops string
}

func newForgottenFixture(t *testing.T) *forgottenFixture {
	ctx := t.Context()
	x := &forgottenFixture{adoptFixture: newAdoptFixture(t),
		ctl: store.Controller{UUID: uuid.NewString(), Name: "west", Org: "globex", Region: "west", CACert: "the controller's CA"}}
	login := func(name string) store.Identity {
		id, _, err := x.s.Identities.Login(ctx, store.Identity{Issuer: "https://idp.test", Subject: name, Email: name + "@example.com"}, "globex", time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	carol, dave := login("carol"), login("dave")
	x.dave = dave
	x.shop, x.lab, x.ops = uuid.NewString(), uuid.NewString(), uuid.NewString()
	x.register(t, x.ctl)
	x.created = time.Now().Add(-48 * time.Hour).Truncate(time.Microsecond)
	for _, m := range []store.Model{
		{UUID: x.shop, Name: "shop", Org: "globex", Owner: x.bob.ID, ControllerUUID: x.ctl.UUID},
		{UUID: x.lab, Name: "lab", Org: "globex", Owner: x.bob.ID, ControllerUUID: x.ctl.UUID},
		{UUID: x.ops, Name: "ops", Org: "globex", Owner: x.bob.ID, ControllerUUID: x.ctl.UUID},
	} {
		if err := x.s.Models.Insert(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	for _, g := range []authz.Tuple{
		{User: authz.UserObject(carol.ID), Relation: authz.Reader, Object: authz.ModelObject(x.shop)},
		{User: authz.UserObject(dave.ID), Relation: authz.Writer, Object: authz.ModelObject(x.shop)},
	} {
		if err := x.s.Grants.Add(ctx, g); err != nil {
			t.Fatal(err)
		}
	}
	return x
}

// register registers controller c (again).
func (x *forgottenFixture) register(t *testing.T, c store.Controller) {
	t.Helper()
	if err := x.s.Controllers.Upsert(t.Context(), c); err != nil {
		t.Fatal(err)
	}
}

// onShop returns the expected tuples on shop.
func (x *forgottenFixture) onShop(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, tu := range x.expected(t) {
		if strings.HasSuffix(tu, authz.ModelObject(x.shop)) {
			out = append(out, tu)
		}
	}
	return out
}

// readopt adopts model id, named name, from west, as created when it was
// first indexed.
func (x *forgottenFixture) readopt(t *testing.T, id, name string) store.Model {
	t.Helper()
	m, ok, err := x.s.Models.Adopt(t.Context(), store.Adoption{Model: store.Model{UUID: id, Name: name, Org: "globex",
		ControllerUUID: x.ctl.UUID, Life: "alive", CreatedAt: x.created}, ControllerName: "west", At: time.Now()})
	if err != nil || !ok {
		t.Fatalf("adopt %s: %v %v", name, ok, err)
	}
	return m
}
