package store_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/droverhq/drover/authz"
	"github.com/droverhq/drover/hub/internal/migration"
	"github.com/droverhq/drover/hub/internal/store"
)

// TestSwitchControllerMovesIndexAndTupleTogether: switching a migrated
// model changes its controller in the index, resets its event index, and
// replaces the controller tuple through the outbox, together; the other
// tuples stay; switching again changes nothing; a model on neither
// controller is refused with nothing changed.
func TestSwitchControllerMovesIndexAndTupleTogether(t *testing.T) {
	s, _ := newStore(t)
	ctx := t.Context()
	now := time.Unix(1_800_000_000, 0).UTC()
	if err := s.Organizations.Ensure(ctx, "acme"); err != nil {
		t.Fatal(err)
	}
	east, west, north := uuid.NewString(), uuid.NewString(), uuid.NewString()
	for name, id := range map[string]string{"east": east, "west": west, "north": north} {
		if err := s.Controllers.Upsert(ctx, store.Controller{UUID: id, Name: name}); err != nil {
			t.Fatal(err)
		}
	}
	model := uuid.NewString()
	if err := s.Models.Insert(ctx, store.Model{UUID: model, Name: "shop", Org: "acme", ControllerUUID: east, EventIndex: 42}); err != nil {
		t.Fatal(err)
	}
	n := newMigration(model)
	n.SourceController, n.TargetController = east, west
	m, err := s.Migrations.Start(ctx, n, now)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Migrations.SwitchController(ctx, m, now); !errors.Is(err, store.ErrNotMigrated) {
		t.Fatalf("switching in PRECHECK: %v, want ErrNotMigrated", err)
	}
	m.Phase = migration.Success
	before, _ := s.Outbox.Head(ctx)
	if err := s.Migrations.SwitchController(ctx, m, now); err != nil {
		t.Fatal(err)
	}
	got, err := s.Models.ByUUID(ctx, model)
	if err != nil {
		t.Fatal(err)
	}
	if got.ControllerUUID != west || got.EventIndex != 0 || got.Name != "shop" || got.Org != "acme" {
		t.Fatalf("model after the switch: %+v", got)
	}
	obj := authz.ModelObject(model)
	ts, _ := s.Outbox.ExpectedTuples(ctx)
	oldT := authz.Tuple{User: authz.ControllerObject(east), Relation: authz.RelController, Object: obj}
	newT := authz.Tuple{User: authz.ControllerObject(west), Relation: authz.RelController, Object: obj}
	orgT := authz.Tuple{User: authz.OrgObject("acme"), Relation: authz.RelOrganization, Object: obj}
	if slices.Contains(ts, oldT) || !slices.Contains(ts, newT) || !slices.Contains(ts, orgT) {
		t.Fatalf("expected tuples after the switch: %v", ts)
	}
	pending, _ := s.Outbox.Pending(ctx, 1000)
	var queued []store.OutboxEntry
	for _, e := range pending {
		if e.ID > before {
			queued = append(queued, e)
		}
	}
	if len(queued) != 2 || !queued[0].Delete || queued[0].Tuple != oldT || queued[1].Delete || queued[1].Tuple != newT {
		t.Fatalf("outbox after the switch: %+v", queued)
	}
	// The source's summaries are ignored from now on, the target's applied
	// from its first index.
	if _, err := s.Models.UpdateSummary(ctx, store.Model{UUID: model, ControllerUUID: east, Life: "alive", Status: "from east",
		EventIndex: 1000}, now); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Models.UpdateSummary(ctx, store.Model{UUID: model, ControllerUUID: west, Life: "alive", Status: "from west",
		EventIndex: 3}, now); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Models.ByUUID(ctx, model); got.Status != "from west" || got.EventIndex != 3 {
		t.Fatalf("after summaries from both controllers: %+v", got)
	}
	head, _ := s.Outbox.Head(ctx)
	if err := s.Migrations.SwitchController(ctx, m, now); err != nil {
		t.Fatalf("switching again: %v", err)
	}
	if again, _ := s.Outbox.Head(ctx); again != head {
		t.Fatalf("switching again queued tuples: head %d, was %d", again, head)
	}
	// A model on neither controller: refused, nothing changed.
	m.SourceController, m.TargetController = north, east
	if err := s.Migrations.SwitchController(ctx, m, now); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("switching a model on neither controller: %v, want ErrInvalid", err)
	}
	if got, _ := s.Models.ByUUID(ctx, model); got.ControllerUUID != west {
		t.Fatalf("the refused switch moved the model to %s", got.ControllerUUID)
	}
	if again, _ := s.Outbox.Head(ctx); again != head {
		t.Fatal("the refused switch queued tuples")
	}
}

// TestPhaseChangesAreAudited: each Advance writes an audit entry naming
// the migration, both phases and the controllers.
func TestPhaseChangesAreAudited(t *testing.T) {
	s, _ := newStore(t)
	ctx := t.Context()
	now := time.Unix(1_800_000_000, 0).UTC()
	model := uuid.NewString()
	m, err := s.Migrations.Start(ctx, newMigration(model), now)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Migrations.Advance(ctx, m.ID, migration.Precheck, migration.Aborting, "the target is too old", now); err != nil {
		t.Fatal(err)
	}
	es, _, err := s.Audit.Query(ctx, store.AuditQuery{All: true, ModelUUID: model, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 1 || es[0].Operation != store.OpMigrationPhase || es[0].Details["migration"] != m.ID ||
		es[0].Details["from"] != "PRECHECK" || es[0].Details["to"] != "ABORTING" ||
		es[0].Details["target-controller"] != m.TargetController || es[0].Details["failure"] != "the target is too old" {
		t.Fatalf("audit entries: %+v", es)
	}
}

// TestAbortRequestedBlocksSuccess: a migration whose abort was requested
// in VALIDATION does not reach SUCCESS.
func TestAbortRequestedBlocksSuccess(t *testing.T) {
	s, _ := newStore(t)
	ctx := t.Context()
	now := time.Unix(1_800_000_000, 0).UTC()
	m, err := s.Migrations.Start(ctx, newMigration(uuid.NewString()), now)
	if err != nil {
		t.Fatal(err)
	}
	path := []migration.Phase{migration.Precheck, migration.Quiesce, migration.Export, migration.Import, migration.Validation}
	for i := 1; i < len(path); i++ {
		if _, err := s.Migrations.Advance(ctx, m.ID, path[i-1], path[i], "", now); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Migrations.RequestAbort(ctx, m.ID, "alice", now); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Migrations.Advance(ctx, m.ID, migration.Validation, migration.Success, "", now); !errors.Is(err, store.ErrPhaseMoved) {
		t.Fatalf("SUCCESS after an abort request: %v, want ErrPhaseMoved", err)
	}
	if _, err := s.Migrations.Advance(ctx, m.ID, migration.Validation, migration.Aborting, "aborted", now); err != nil {
		t.Fatal(err)
	}
}
