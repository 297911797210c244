package store_test

import (
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/droverhq/drover/hub/internal/store"
)

// TestIndexHorizonNamesRunningWriters: a transaction that wrote the index
// is among the horizon's writers until it ends, with its version above
// the highest version read before it wrote (the federation stream's
// horizon rests on both); the version it took is visible once it commits.
func TestIndexHorizonNamesRunningWriters(t *testing.T) {
	s, dsn := newStore(t)
	ctx := t.Context()
	if err := s.Organizations.Ensure(ctx, "acme"); err != nil {
		t.Fatal(err)
	}
	ctrl := store.Controller{UUID: uuid.NewString(), Name: "east"}
	if err := s.Controllers.Upsert(ctx, ctrl); err != nil {
		t.Fatal(err)
	}
	before, writers, err := s.IndexHorizon(ctx)
	if err != nil || len(writers) != 0 || before == 0 {
		t.Fatalf("horizon %d writers %v err %v, want a version and no writer", before, writers, err)
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `UPDATE controllers SET region = 'r' WHERE uuid = $1`, ctrl.UUID); err != nil {
		t.Fatal(err)
	}
	hi, writers, err := s.IndexHorizon(ctx)
	if err != nil || len(writers) != 1 || hi <= before {
		t.Fatalf("while a writer runs: horizon %d (before %d) writers %v err %v, want it above and one writer", hi, before, writers, err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	after, writers, err := s.IndexHorizon(ctx)
	if err != nil || len(writers) != 0 || after != hi {
		t.Fatalf("after commit: horizon %d writers %v err %v, want %d and none", after, writers, err, hi)
	}
	c, err := s.Controllers.ByUUID(ctx, ctrl.UUID)
	if err != nil || c.Version != hi {
		t.Fatalf("controller version %d (%v), want %d", c.Version, err, hi)
	}
}

// TestIndexRemovals: deleting a model or a controller records a removal
// with a version; pruning deletes the old ones and all but the newest
// kept, raising the horizon past them.
func TestIndexRemovals(t *testing.T) {
	s, _ := newStore(t)
	ctx := t.Context()
	if err := s.Organizations.Ensure(ctx, "acme"); err != nil {
		t.Fatal(err)
	}
	ctrl := store.Controller{UUID: uuid.NewString(), Name: "east", Org: "acme"}
	if err := s.Controllers.Upsert(ctx, ctrl); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, name := range []string{"a", "b", "c"} {
		m := store.Model{UUID: uuid.NewString(), Name: name, Org: "acme", ControllerUUID: ctrl.UUID}
		if err := s.Models.Insert(ctx, m); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, m.UUID)
	}
	for _, id := range ids {
		if err := s.Models.Delete(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Controllers.Remove(ctx, ctrl.UUID, false); err != nil {
		t.Fatal(err)
	}
	rms, err := s.Removals(ctx, 0, 1<<62)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for i, rm := range rms {
		got = append(got, rm.Kind+":"+rm.ID)
		if rm.Org != "acme" || rm.ControllerUUID != ctrl.UUID || i > 0 && rm.Version <= rms[i-1].Version {
			t.Errorf("removal %+v", rm)
		}
	}
	if want := []string{"model:" + ids[0], "model:" + ids[1], "model:" + ids[2], "controller:east"}; !slices.Equal(got, want) {
		t.Fatalf("removals %v, want %v", got, want)
	}
	if n, err := s.PruneRemovals(ctx, time.Now().Add(-time.Hour), 2); err != nil || n != 2 {
		t.Fatalf("pruned %d (%v), want the two oldest", n, err)
	}
	if h, err := s.RemovalsHorizon(ctx); err != nil || h != rms[1].Version {
		t.Fatalf("horizon %d (%v), want %d", h, err, rms[1].Version)
	}
	if n, err := s.PruneRemovals(ctx, time.Now().Add(time.Hour), 10); err != nil || n != 2 {
		t.Fatalf("pruned %d (%v), want the two older than the hour", n, err)
	}
	if h, err := s.RemovalsHorizon(ctx); err != nil || h != rms[3].Version {
		t.Fatalf("horizon %d (%v), want %d", h, err, rms[3].Version)
	}
}
