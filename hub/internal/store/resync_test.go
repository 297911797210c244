package store_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/droverhq/drover/authz"
	"github.com/droverhq/drover/hub/internal/store"
)

// TestForgottenByAResetComeBack: models a controller's reset no longer
// lists are forgotten, not deleted: one that the controller shows again
// (a node that lagged, a history restored) is restored with its owner and
// grants. Only the named controller's models are touched.
func TestForgottenByAResetComeBack(t *testing.T) {
	f := newAdoptFixture(t)
	ctx := t.Context()
	west := uuid.NewString()
	if err := f.s.Controllers.Upsert(ctx, store.Controller{UUID: west, Name: "west", Region: "west"}); err != nil {
		t.Fatal(err)
	}
	shop, other := uuid.NewString(), uuid.NewString()
	for _, m := range []store.Model{
		{UUID: shop, Name: "shop", Org: "acme", Owner: f.bob.ID, ControllerUUID: f.ctrl},
		{UUID: other, Name: "other", Org: "acme", Owner: f.bob.ID, ControllerUUID: west},
	} {
		if err := f.s.Models.Insert(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	grant := authz.Tuple{User: authz.UserObject(f.bob.ID), Relation: authz.Writer, Object: authz.ModelObject(shop)}
	if err := f.s.Grants.Add(ctx, grant); err != nil {
		t.Fatal(err)
	}
	// The model on another controller is not this controller's to forget.
	got, err := f.s.Models.Forget(ctx, f.ctrl, []string{shop, other}, time.Now())
	if err != nil || !slices.Equal(got, []string{shop}) {
		t.Fatalf("forgot %v, %v: want only %s", got, err, shop)
	}
	if _, err := f.s.Models.ByUUID(ctx, other); err != nil {
		t.Errorf("the other controller's model: %v", err)
	}
	if _, err := f.s.Models.ByUUID(ctx, shop); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the forgotten model: %v, want it gone from the index", err)
	}
	if slices.Contains(f.expected(t), grant.String()) {
		t.Errorf("the forgotten model's grant is still expected")
	}
	es, _, err := f.s.Audit.Query(ctx, store.AuditQuery{All: true, Operation: store.OpModelForgotten, Limit: 10})
	if err != nil || len(es) != 1 || es[0].ModelUUID != shop || es[0].Model != "shop" || es[0].Org != "acme" || es[0].Actor != "hub" {
		t.Fatalf("audit: %+v, %v", es, err)
	}
	m, ok := f.adopt(t, shop, "shop", 9)
	if !ok || m.Owner != f.bob.ID || m.Org != "acme" {
		t.Errorf("the model shown again: %+v (adopted %v), want it restored to its owner", m, ok)
	}
	if !slices.Contains(f.expected(t), grant.String()) {
		t.Errorf("the restored model's grant is not expected again")
	}
}

// TestRewindController: a controller's history set back takes its event
// index and its models' with it (once, audited), so that summaries from
// its new history apply; a later index is no rewind.
func TestRewindController(t *testing.T) {
	f := newAdoptFixture(t)
	ctx := t.Context()
	id := uuid.NewString()
	f.adopt(t, id, "shop", 0)
	if _, err := f.s.Models.UpdateSummary(ctx, store.Model{UUID: id, ControllerUUID: f.ctrl, Life: "alive", ApplicationCount: 2, EventIndex: 500}, time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := f.s.Controllers.SetHealth(ctx, f.ctrl, "connected", nil, 500, "7.1", time.Now()); err != nil {
		t.Fatal(err)
	}
	summary := func(apps int) store.Model {
		t.Helper()
		if _, err := f.s.Models.UpdateSummary(ctx, store.Model{UUID: id, ControllerUUID: f.ctrl, Life: "alive", ApplicationCount: apps, EventIndex: 120}, time.Now()); err != nil {
			t.Fatal(err)
		}
		m, err := f.s.Models.ByUUID(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	if m := summary(0); m.ApplicationCount != 2 {
		t.Fatalf("an older summary applied before the rewind: %+v", m)
	}
	for _, idx := range []uint64{120, 120, 130} {
		if err := f.s.Controllers.Rewind(ctx, f.ctrl, idx, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	if m := summary(0); m.ApplicationCount != 0 || m.EventIndex != 120 {
		t.Errorf("the summary at index 120 after the rewind: %+v", m)
	}
	c, err := f.s.Controllers.ByUUID(ctx, f.ctrl)
	if err != nil || c.EventIndex != 120 || c.EventMark != "" {
		t.Errorf("the controller after the rewind: index %d mark %q, %v (want 120, and the old history's mark gone)", c.EventIndex, c.EventMark, err)
	}
	// The mark is the one of the highest index heard; a lower index, or
	// none (disconnected), leaves it.
	for _, h := range []struct {
		index uint64
		mark  string
	}{{120, "9.5"}, {110, "4.2"}, {0, ""}} {
		if err := f.s.Controllers.SetHealth(ctx, f.ctrl, "connected", nil, h.index, h.mark, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	if c, err := f.s.Controllers.ByUUID(ctx, f.ctrl); err != nil || c.EventIndex != 120 || c.EventMark != "9.5" {
		t.Errorf("the controller's position: index %d mark %q, %v (want 120, 9.5)", c.EventIndex, c.EventMark, err)
	}
	es, _, err := f.s.Audit.Query(ctx, store.AuditQuery{All: true, Operation: store.OpControllerRewound, Limit: 10})
	if err != nil || len(es) != 1 || es[0].ControllerUUID != f.ctrl || es[0].Details["from"] != float64(500) || es[0].Details["to"] != float64(120) {
		t.Fatalf("audit: %+v, %v (want one entry, from 500 to 120)", es, err)
	}
}
