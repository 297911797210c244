package store_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/droverhq/drover/hub/internal/migration"
	"github.com/droverhq/drover/hub/internal/store"
)

func newMigration(model string) store.NewMigration {
	return store.NewMigration{ModelUUID: model, ModelName: "m1", SourceController: uuid.NewString(),
		TargetController: uuid.NewString(), RequestedBy: "alice"}
}

// TestMigrationPhasesFollowTheEdgeTable: a migration starts in PRECHECK,
// moves only along the edge table, only from the phase the caller read,
// and leaves a history of every change and step.
func TestMigrationPhasesFollowTheEdgeTable(t *testing.T) {
	s, _ := newStore(t)
	ctx := t.Context()
	now := time.Unix(1_800_000_000, 0).UTC()
	m, err := s.Migrations.Start(ctx, newMigration(uuid.NewString()), now)
	if err != nil {
		t.Fatal(err)
	}
	if m.Phase != migration.Precheck || m.Attempt != 0 || m.EndedAt != nil {
		t.Fatalf("started: %+v", m)
	}
	if _, err := s.Migrations.Advance(ctx, m.ID, migration.Precheck, migration.Export, "", now); !errors.Is(err, migration.ErrEdge) {
		t.Fatalf("skipping QUIESCE: %v, want ErrEdge", err)
	}
	if _, err := s.Migrations.Advance(ctx, m.ID, migration.Quiesce, migration.Export, "", now); !errors.Is(err, store.ErrPhaseMoved) {
		t.Fatalf("advancing from a phase it is not in: %v, want ErrPhaseMoved", err)
	}
	if _, err := s.Migrations.Advance(ctx, uuid.NewString(), migration.Precheck, migration.Quiesce, "", now); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("advancing an unknown migration: %v, want ErrNotFound", err)
	}
	if err := s.Migrations.Intend(ctx, m.ID, migration.Precheck, 1, "prechecks", now); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Migrations.ByID(ctx, m.ID); got.StepKey() != m.ID+"/PRECHECK/1" {
		t.Fatalf("step key %q", got.StepKey())
	}
	if err := s.Migrations.Intend(ctx, m.ID, migration.Quiesce, 1, "", now); !errors.Is(err, store.ErrPhaseMoved) {
		t.Fatalf("a step of another phase: %v, want ErrPhaseMoved", err)
	}
	if err := s.Migrations.Record(ctx, m.ID, migration.Precheck, 1, "prechecks passed", now); err != nil {
		t.Fatal(err)
	}
	path := []migration.Phase{migration.Quiesce, migration.Export, migration.Import, migration.Validation,
		migration.Success, migration.LogTransfer, migration.Reap, migration.Done}
	from := migration.Precheck
	for _, to := range path {
		now = now.Add(time.Second)
		got, err := s.Migrations.Advance(ctx, m.ID, from, to, strings.ToLower(string(to)), now)
		if err != nil {
			t.Fatalf("%s to %s: %v", from, to, err)
		}
		if got.Phase != to || got.Attempt != 0 || got.Message != strings.ToLower(string(to)) {
			t.Fatalf("after %s: %+v", to, got)
		}
		from = to
	}
	done, _ := s.Migrations.ByID(ctx, m.ID)
	if done.EndedAt == nil || !done.EndedAt.Equal(now) {
		t.Fatalf("a finished migration's end: %v, want %v", done.EndedAt, now)
	}
	evs, err := s.Migrations.Events(ctx, m.ID)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, e := range evs {
		kinds = append(kinds, e.Kind+":"+string(e.Phase))
	}
	want := "phase:PRECHECK intent:PRECHECK result:PRECHECK phase:QUIESCE phase:EXPORT phase:IMPORT phase:VALIDATION " +
		"phase:SUCCESS phase:LOGTRANSFER phase:REAP phase:DONE"
	if got := strings.Join(kinds, " "); got != want {
		t.Fatalf("history:\n got %s\nwant %s", got, want)
	}
}

// TestOneActiveMigrationPerModel: a model has one active migration; once it
// ends (aborted, done, or only its reap failed) the model may migrate again.
func TestOneActiveMigrationPerModel(t *testing.T) {
	s, _ := newStore(t)
	ctx := t.Context()
	now := time.Unix(1_800_000_000, 0).UTC()
	model := uuid.NewString()
	first, err := s.Migrations.Start(ctx, newMigration(model), now)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Migrations.Start(ctx, newMigration(model), now); !errors.Is(err, store.ErrAlreadyExists) {
		t.Fatalf("a second migration of one model: %v, want ErrAlreadyExists", err)
	}
	if _, err := s.Migrations.Start(ctx, newMigration(uuid.NewString()), now); err != nil {
		t.Fatalf("another model's migration: %v", err)
	}
	if _, err := s.Migrations.Advance(ctx, first.ID, migration.Precheck, migration.Aborting, "target too old", now); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Migrations.Start(ctx, newMigration(model), now); !errors.Is(err, store.ErrAlreadyExists) {
		t.Fatalf("a migration while the first aborts: %v, want ErrAlreadyExists", err)
	}
	ab, err := s.Migrations.Advance(ctx, first.ID, migration.Aborting, migration.Aborted, "aborted", now)
	if err != nil {
		t.Fatal(err)
	}
	if ab.Failure != "target too old" || ab.EndedAt == nil {
		t.Fatalf("aborted: failure %q ended %v", ab.Failure, ab.EndedAt)
	}
	if _, err := s.Migrations.Start(ctx, newMigration(model), now); err != nil {
		t.Fatalf("migrating again after an abort: %v", err)
	}
	active, err := s.Migrations.List(ctx, store.MigrationFilter{ModelUUID: model, Active: true})
	if err != nil || len(active) != 1 || active[0].ID == first.ID {
		t.Fatalf("active migrations of the model: %+v %v", active, err)
	}
	all, err := s.Migrations.List(ctx, store.MigrationFilter{ModelUUID: model})
	if err != nil || len(all) != 2 {
		t.Fatalf("all migrations of the model: %d %v", len(all), err)
	}
	if got, err := s.Migrations.List(ctx, store.MigrationFilter{ModelUUID: "not-a-uuid"}); err != nil || len(got) != 0 {
		t.Fatalf("a bad filter: %v %v", got, err)
	}
}

// TestAbortOnlyBeforeSuccess: an abort is recorded as a request the driver
// acts on; past SUCCESS it is refused.
func TestAbortOnlyBeforeSuccess(t *testing.T) {
	s, _ := newStore(t)
	ctx := t.Context()
	now := time.Unix(1_800_000_000, 0).UTC()
	m, err := s.Migrations.Start(ctx, newMigration(uuid.NewString()), now)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Migrations.RequestAbort(ctx, m.ID, "bob", now)
	if err != nil || !got.AbortRequested {
		t.Fatalf("abort in PRECHECK: %+v %v", got, err)
	}
	if _, err := s.Migrations.RequestAbort(ctx, m.ID, "bob", now); err != nil {
		t.Fatalf("asking twice: %v", err)
	}
	n, err := s.Migrations.Start(ctx, newMigration(uuid.NewString()), now)
	if err != nil {
		t.Fatal(err)
	}
	from := migration.Precheck
	for _, to := range []migration.Phase{migration.Quiesce, migration.Export, migration.Import, migration.Validation, migration.Success} {
		if _, err := s.Migrations.Advance(ctx, n.ID, from, to, "", now); err != nil {
			t.Fatal(err)
		}
		from = to
	}
	if _, err := s.Migrations.RequestAbort(ctx, n.ID, "bob", now); !errors.Is(err, store.ErrNotAbortable) {
		t.Fatalf("abort in SUCCESS: %v, want ErrNotAbortable", err)
	}
	evs, _ := s.Migrations.Events(ctx, m.ID)
	if len(evs) != 2 || evs[1].Kind != store.EventAbort || evs[1].Detail != "abort requested by bob" {
		t.Fatalf("history of the aborted one: %+v", evs)
	}
}

// TestMigrationEventsAreAppendOnly: the history cannot be changed, even by
// a statement outside the store's methods.
func TestMigrationEventsAreAppendOnly(t *testing.T) {
	s, _ := newStore(t)
	ctx := t.Context()
	m, err := s.Migrations.Start(ctx, newMigration(uuid.NewString()), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`UPDATE model_migration_events SET detail = 'rewritten' WHERE migration_id = $1`,
		`DELETE FROM model_migration_events WHERE migration_id = $1`,
	} {
		if _, err := s.Pool().Exec(ctx, q, m.ID); err == nil || !strings.Contains(err.Error(), "append-only") {
			t.Errorf("%s: %v, want refused as append-only", q, err)
		}
	}
	if _, err := s.Pool().Exec(ctx, `UPDATE model_migrations SET phase = 'SOMEWHERE' WHERE id = $1`, m.ID); err == nil {
		t.Error("a phase outside the table was stored")
	}
}

// TestMigrationPhaseOnTheModelsRow: starting a migration and each phase
// change write the phase on the model's index row, which takes a new
// version each time (the federation stream carries the row).
func TestMigrationPhaseOnTheModelsRow(t *testing.T) {
	f := newAdoptFixture(t)
	ctx := t.Context()
	id := uuid.New()
	if err := f.s.Models.Insert(ctx, store.Model{UUID: id.String(), Name: "prod", Org: "acme", Owner: f.bob.ID, ControllerUUID: f.ctrl}); err != nil {
		t.Fatal(err)
	}
	row := func() (phase string, version int64) {
		t.Helper()
		err := f.s.Models.RowsByUUID(ctx, [][16]byte{id}, func(m *store.ModelRow) error {
			phase, version = string(m.MigrationPhase), m.Version
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return phase, version
	}
	if p, _ := row(); p != "" {
		t.Fatalf("a model never migrated has migration phase %q", p)
	}
	_, v0 := row()
	m, err := f.s.Migrations.Start(ctx, newMigration(id.String()), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	p1, v1 := row()
	if p1 != string(migration.Precheck) || v1 <= v0 {
		t.Fatalf("after the start: phase %q version %d (was %d)", p1, v1, v0)
	}
	if _, err := f.s.Migrations.Advance(ctx, m.ID, migration.Precheck, migration.Quiesce, "", time.Now()); err != nil {
		t.Fatal(err)
	}
	if p2, v2 := row(); p2 != string(migration.Quiesce) || v2 <= v1 {
		t.Fatalf("after QUIESCE: phase %q version %d (was %d)", p2, v2, v1)
	}
}
