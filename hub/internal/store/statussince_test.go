package store_test

import (
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/droverhq/drover/hub/internal/store"
)

// TestStatusSinceFollowsStatusChanges: a model's status-since is set when
// it is indexed, moves when a summary brings another status (to the time
// the summary was applied), and stays when a summary keeps the status.
func TestStatusSinceFollowsStatusChanges(t *testing.T) {
	f := newAdoptFixture(t)
	ctx := t.Context()
	m := store.Model{UUID: uuid.NewString(), Name: "prod", Org: "acme", ControllerUUID: f.ctrl, Status: "available"}
	before := time.Now().Add(-time.Second)
	if err := f.s.Models.Insert(ctx, m); err != nil {
		t.Fatal(err)
	}
	since := func() time.Time {
		t.Helper()
		got, err := f.s.Models.DetailByUUID(ctx, m.UUID)
		if err != nil {
			t.Fatal(err)
		}
		if got.StatusSince == nil {
			t.Fatal("no status-since")
		}
		return *got.StatusSince
	}
	if s := since(); s.Before(before) {
		t.Fatalf("status-since of a new model %v, before its insertion (%v)", s, before)
	}

	apply := func(status string, idx uint64, at time.Time) {
		t.Helper()
		sum := m
		sum.Status, sum.EventIndex = status, idx
		if indexed, err := f.s.Models.UpdateSummary(ctx, sum, at); err != nil || !indexed {
			t.Fatalf("summary %s: indexed %v, %v", status, indexed, err)
		}
	}
	blocked := time.Now().Add(time.Hour).Truncate(time.Microsecond)
	apply("blocked", 1, blocked)
	if s := since(); !s.Equal(blocked) {
		t.Fatalf("after the status changed: since %v, want %v", s, blocked)
	}
	apply("blocked", 2, blocked.Add(time.Hour)) // the counts changed, not the status
	if s := since(); !s.Equal(blocked) {
		t.Fatalf("after a summary with the same status: since %v, want %v", s, blocked)
	}
	active := blocked.Add(2 * time.Hour)
	apply("active", 3, active)
	if s := since(); !s.Equal(active) {
		t.Fatalf("after the status changed again: since %v, want %v", s, active)
	}
}

// TestSummariesOnlyFromTheOwningController: a summary a controller sends
// for a model indexed on another controller changes nothing (a rogue or
// confused controller cannot mark another tenant's model dead, nor raise
// its event index past what its own controller will ever send, which
// froze the row), yet counts as indexed, so it is never adopted.
func TestSummariesOnlyFromTheOwningController(t *testing.T) {
	f := newAdoptFixture(t)
	ctx := t.Context()
	other := uuid.NewString()
	if err := f.s.Controllers.Upsert(ctx, store.Controller{UUID: other, Name: "rogue", Region: "east", Org: "globex"}); err != nil {
		t.Fatal(err)
	}
	m := store.Model{UUID: uuid.NewString(), Name: "prod", Org: "acme", ControllerUUID: f.ctrl, Life: "alive", Status: "active"}
	if err := f.s.Models.Insert(ctx, m); err != nil {
		t.Fatal(err)
	}
	forged := m
	forged.ControllerUUID, forged.Life, forged.Status, forged.EventIndex = other, "dead", "error", 1<<40
	if indexed, err := f.s.Models.UpdateSummary(ctx, forged, time.Now()); err != nil || !indexed {
		t.Fatalf("another controller's summary: indexed %v, %v (want indexed: never adopted)", indexed, err)
	}
	got, err := f.s.Models.ByUUID(ctx, m.UUID)
	if err != nil || got.Life != "alive" || got.Status != "active" || got.EventIndex != 0 {
		t.Fatalf("the model after another controller's summary: %+v %v", got, err)
	}
	own := m
	own.Status, own.EventIndex = "blocked", 5
	if _, err := f.s.Models.UpdateSummary(ctx, own, time.Now()); err != nil {
		t.Fatal(err)
	}
	if got, err := f.s.Models.ByUUID(ctx, m.UUID); err != nil || got.Status != "blocked" || got.EventIndex != 5 {
		t.Fatalf("the model after its own controller's summary: %+v %v", got, err)
	}
}
