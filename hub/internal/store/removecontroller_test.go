package store_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

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
	if err := f.s.UpsertController(ctx, store.Controller{UUID: west, Name: "west", Org: "acme", Region: "west"}); err != nil {
		t.Fatal(err)
	}
	onEast, onWest := uuid.NewString(), uuid.NewString()
	for _, m := range []store.Model{
		{UUID: onEast, Name: "prod", Org: "acme", Owner: f.bob.ID, ControllerUUID: f.ctrl},
		{UUID: onWest, Name: "prod", Org: "globex", Owner: f.bob.ID, ControllerUUID: west},
	} {
		if err := f.s.InsertModel(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	for _, g := range []authz.Tuple{
		{User: authz.UserObject(f.bob.ID), Relation: authz.Administrator, Object: authz.ControllerObject(west)},
		{User: authz.UserObject(f.bob.ID), Relation: authz.Reader, Object: authz.ModelObject(onWest)},
	} {
		if err := f.s.Grant(ctx, g); err != nil {
			t.Fatal(err)
		}
	}
	before := f.expected(t)

	_, err := f.s.RemoveController(ctx, west, false)
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

	forgotten, err := f.s.RemoveController(ctx, west, true)
	if err != nil || !slices.Equal(forgotten, []string{"bob@example.com/prod"}) {
		t.Fatalf("forced RemoveController = %v, %v", forgotten, err)
	}
	if _, err := f.s.ControllerByUUID(ctx, west); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the controller is still there: %v", err)
	}
	if _, err := f.s.ModelByUUID(ctx, onWest); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("its model is still indexed: %v", err)
	}
	if _, err := f.s.ModelByUUID(ctx, onEast); err != nil {
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
	pending, err := f.s.PendingOutbox(ctx, 1000)
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

	if _, err := f.s.RemoveController(ctx, west, true); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("removing it again: %v, want not found", err)
	}
	if _, err := f.s.RemoveController(ctx, f.ctrl, false); !errors.As(err, &hosts) {
		t.Errorf("east hosts acme/prod and was not refused: %v", err)
	}
}

// expected is every expected tuple as "user relation object", sorted.
func (f *adoptFixture) expected(t *testing.T) []string {
	t.Helper()
	ts, err := f.s.ExpectedTuples(t.Context())
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
