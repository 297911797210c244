package hub_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/authz"
	"github.com/droverhq/drover/hub"
	"github.com/droverhq/drover/hub/internal/migration"
	"github.com/droverhq/drover/hub/internal/store"
	"github.com/droverhq/drover/tests/testkit"
)

// faultPlan is the migration driver's fault hook of a test: at the named
// point it runs do once (then the point is passed).
type faultPlan struct {
	mu    sync.Mutex
	point string
	do    func() error
	hit   bool
}

func (f *faultPlan) set(point string, do func() error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.point, f.do, f.hit = point, do, false
}

func (f *faultPlan) fault(point string) error {
	f.mu.Lock()
	if point != f.point || f.hit {
		f.mu.Unlock()
		return nil
	}
	f.hit = true
	do := f.do
	f.mu.Unlock()
	return do()
}

func (f *faultPlan) wasHit() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.hit
}

// errCrash stands for the hub dying at a fault point.
var errCrash = errors.New("the hub died here")

// TestMigrationFaultMatrix moves one model back and forth between two
// real controllers through a real hub, injecting a fault at each phase:
// a user's abort or a hub crash before SUCCESS, a crash from SUCCESS on.
// An abort ends ABORTED with the source model as it was (its record,
// config and applications, taking changes again) and no trace on the
// target, and the model then migrates; a crash is resumed by a restarted
// driver with the same step keys and ends DONE. In every case the hub's
// index names the controller that serves the model.
func TestMigrationFaultMatrix(t *testing.T) {
	plan := &faultPlan{}
	e := newEnv(t, func(c *hub.Config) { c.MigrationFaults = plan.fault })
	ctx := t.Context()
	alice := e.user("alice", "acme")
	ctls := map[string]testSpoke{"east": startNamedSpoke(t, e, "east", "", true), "west": startNamedSpoke(t, e, "west", "", true)}
	e.settle()
	tok := e.token(alice, time.Hour, "")
	model := e.addModel(tok, "shop", "east")
	e.grant(authz.UserObject(alice.ID), authz.Administrator, authz.ModelObject(model))
	e.settle()
	// The model holds an application (its charm travels beside the
	// export) and config of its own.
	east := ctls["east"].Admin
	ch, err := east.UploadCharm(ctx, bytes.NewReader(charmArchive(t, "kvstore")))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := east.Model(model).Deploy(ctx, api.DeployRequest{Application: "kv", CharmSHA256: ch.SHA256, NumUnits: 0,
		Config: map[string]any{"port": 7171}}); err != nil {
		t.Fatal(err)
	}

	// The driver runs until the test restarts it, as a hub replica would.
	var stop func()
	startDriver := func() {
		rctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- e.hub.RunMigrations(rctx) }()
		stop = func() { cancel(); <-done }
	}
	startDriver()
	t.Cleanup(func() { stop() })

	on := "east"
	other := map[string]string{"east": "west", "west": "east"}
	migrate := func() api.Migration {
		t.Helper()
		var m api.Migration
		if err := json.Unmarshal(e.want(t, "migrate", http.StatusCreated, tok, http.MethodPost, "/v1/migrations",
			api.MigrateRequest{Model: model, TargetController: other[on]}), &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	wait := func(id string) migration.Phase {
		t.Helper()
		var phase migration.Phase
		testkit.EventuallyWithin(t, 60*time.Second, func() (bool, error) {
			m, err := e.st.Migrations.ByID(ctx, id)
			phase = m.Phase
			return m.Phase.Final(), err
		}, "migration %s ended", id)
		return phase
	}
	// served checks the model is served by ctl alone, as the index says.
	served := func(ctl string) {
		t.Helper()
		m, err := ctls[ctl].Admin.Model(model).Info(ctx)
		if err != nil || m.Migration != nil || m.Importing() {
			t.Fatalf("the model on %s: %+v, %v (want it served there, migrating no more)", ctl, m, err)
		}
		if _, err := ctls[other[ctl]].Admin.Model(model).Info(ctx); api.CodeOf(err) != api.CodeRedirect && api.CodeOf(err) != api.CodeNotFound {
			t.Fatalf("the model on %s after it was served by %s: %v (want a redirect or nothing)", other[ctl], ctl, err)
		}
		idx, err := e.st.Models.ByUUID(ctx, model)
		if err != nil || idx.ControllerUUID != ctls[ctl].UUID {
			t.Fatalf("the hub's index names controller %s, not %s (%s): %v", idx.ControllerUUID, ctl, ctls[ctl].UUID, err)
		}
	}
	// shape is what an abort must leave as it was on the source.
	shape := func(ctl string) string {
		t.Helper()
		fs, err := ctls[ctl].Admin.Model(model).Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		apps := map[string]any{}
		for name, a := range fs.Applications {
			cfg, err := ctls[ctl].Admin.Model(model).ApplicationConfig(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			apps[name] = []any{a.Charm, a.CharmRev, cfg}
		}
		b, _ := json.Marshal(apps)
		return fmt.Sprintf("%s %s", fs.Model.Name, b)
	}

	for _, phase := range []migration.Phase{migration.Quiesce, migration.Export, migration.Import, migration.Validation} {
		t.Run("abort in "+string(phase), func(t *testing.T) {
			before := shape(on)
			var m api.Migration
			// The driver may reach the fault point before the POST's
			// answer is read here: the hook waits for the migration's id.
			posted := make(chan struct{})
			plan.set("before-call:"+string(phase), func() error {
				select {
				case <-posted:
				case <-ctx.Done():
					return ctx.Err()
				}
				e.want(t, "abort", http.StatusOK, tok, http.MethodPost, "/v1/migrations/"+m.ID+"/abort", nil)
				return nil
			})
			m = migrate()
			close(posted)
			if got := wait(m.ID); got != migration.Aborted || !plan.wasHit() {
				t.Fatalf("a migration aborted in %s ended %s (fault point hit: %v)", phase, got, plan.wasHit())
			}
			served(on)
			if after := shape(on); after != before {
				t.Fatalf("the source model changed in an aborted migration:\nbefore %s\nafter  %s", before, after)
			}
			if _, err := ctls[other[on]].Admin.MigrationModel(ctx, model, m.ID); api.CodeOf(err) != api.CodeNotFound {
				t.Fatalf("the target after the abort: %v (want no trace of the model)", err)
			}
			// The model takes changes again, and migrates.
			if _, err := ctls[on].Admin.Model(model).SetApplicationConfig(ctx, "kv", api.ConfigChange{Set: map[string]any{"port": 7000 + len(phase)}}); err != nil {
				t.Fatalf("a change after the abort: %v", err)
			}
			plan.set("", nil)
			if got := wait(migrate().ID); got != migration.Done {
				t.Fatalf("the migration after the abort ended %s", got)
			}
			on = other[on]
			served(on)
		})
	}

	for _, point := range []string{"after-call", "before-persist", "after-persist"} {
		for _, phase := range []migration.Phase{migration.Quiesce, migration.Export, migration.Import, migration.Validation,
			migration.Success, migration.LogTransfer, migration.Reap} {
			t.Run("hub dies at "+point+":"+string(phase), func(t *testing.T) {
				before := shape(on)
				crashed := make(chan struct{})
				plan.set(point+":"+string(phase), func() error { close(crashed); return errCrash })
				m := migrate()
				<-crashed
				stop()
				startDriver()
				if got := wait(m.ID); got != migration.Done {
					t.Fatalf("a migration whose hub died at %s:%s ended %s", point, phase, got)
				}
				steps, err := e.st.Migrations.Events(ctx, m.ID)
				if err != nil {
					t.Fatal(err)
				}
				if n := countPhase(steps, phase); n != 1 {
					t.Fatalf("phase %s entered %d times", phase, n)
				}
				on = other[on]
				served(on)
				if after := shape(on); after != before {
					t.Fatalf("the model changed in the migration:\nbefore %s\nafter  %s", before, after)
				}
			})
		}
	}
}

// countPhase counts the times a migration entered phase.
func countPhase(events []store.MigrationEvent, phase migration.Phase) int {
	n := 0
	for _, e := range events {
		if e.Kind == store.EventPhase && e.Phase == phase {
			n++
		}
	}
	return n
}
