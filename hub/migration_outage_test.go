package hub_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/authz"
	"github.com/droverhq/drover/hub"
	"github.com/droverhq/drover/hub/internal/migration"
	"github.com/droverhq/drover/spoke"
	"github.com/droverhq/drover/tests/testkit"
)

// outageSpoke is an in-process controller registered with the test hub
// that a test stops and starts again on the same data, as an outage of
// its only node.
type outageSpoke struct {
	t      *testing.T
	cfg    spoke.Config
	cancel context.CancelFunc
	done   chan error
	Admin  *api.Client
	UUID   string
}

func startOutageSpoke(t *testing.T, e *env, name string) *outageSpoke {
	t.Helper()
	s := &outageSpoke{t: t, cfg: spoke.Config{DataDir: t.TempDir(), Listen: testkit.FreeAddr(t), RaftListen: testkit.FreeAddr(t),
		Name: name, Bootstrap: true, RaftHeartbeat: 100 * time.Millisecond, RaftElection: 100 * time.Millisecond,
		Logger: slog.New(slog.DiscardHandler), HubURL: publicURL, HubJWKSURL: e.url + "/.well-known/jwks.json"}}
	s.start()
	t.Cleanup(s.stop)
	cred, err := spoke.ReadAdminCredential(s.cfg.DataDir)
	if err != nil {
		t.Fatal(err)
	}
	req := hub.AddControllerRequest{Name: name, URL: "https://" + s.cfg.Listen, CACert: cred.CACert, Region: name, Cloud: "localhost"}
	testkit.EventuallyWithin(t, 30*time.Second, func() (bool, error) {
		_, err := e.hub.RegisterController(t.Context(), req, true)
		return err == nil, err
	}, "spoke %s registered with the hub", name)
	if s.Admin, err = api.NewClient(api.ClientConfig{Addresses: []string{s.cfg.Listen}, CACert: []byte(cred.CACert),
		User: cred.User, Password: cred.Password, Timeout: 30 * time.Second}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Admin.Close)
	s.UUID = cred.ControllerUUID
	return s
}

// start runs the controller until stop.
func (s *outageSpoke) start() {
	s.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cfg := s.cfg
	ready := make(chan struct{})
	cfg.Ready = ready
	srv, err := spoke.New(ctx, cfg)
	if err != nil {
		cancel()
		s.t.Fatal(err)
	}
	s.cancel, s.done = cancel, make(chan error, 1)
	go func() { s.done <- srv.Serve(ctx) }()
	select {
	case <-ready:
	case err := <-s.done:
		s.t.Fatalf("controller %s stopped: %v", s.cfg.Name, err)
	}
}

// stop ends the controller; stopping a stopped one does nothing.
func (s *outageSpoke) stop() {
	if s.cancel == nil {
		return
	}
	s.cancel()
	<-s.done
	s.cancel = nil
}

// TestMigrationControllerOutages: a controller that goes down during a
// migration. Before SUCCESS (the source or the target down in QUIESCE,
// EXPORT, IMPORT or VALIDATION) the migration aborts, and its abort waits
// for the controller to come back to undo what it did there: it ends
// ABORTED with the model served by the source and no trace on the target,
// and the model then migrates. After SUCCESS nothing aborts: a source
// down at REAP leaves the migration REAPFAILED with the model served by
// the target, and a retried reap once the source is back ends DONE.
func TestMigrationControllerOutages(t *testing.T) {
	plan := &faultPlan{}
	e := newEnv(t, func(c *hub.Config) {
		c.MigrationFaults, c.MigrationAttempts, c.MigrationBackoff = plan.fault, 2, 20*time.Millisecond
	})
	ctx := t.Context()
	alice := e.user("alice", "acme")
	ctls := map[string]*outageSpoke{"east": startOutageSpoke(t, e, "east"), "west": startOutageSpoke(t, e, "west")}
	e.settle()
	tok := e.token(alice, time.Hour, "")
	model := e.addModel(tok, "shop", "east")
	e.grant(authz.UserObject(alice.ID), authz.Administrator, authz.ModelObject(model))
	e.settle()
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- e.hub.RunMigrations(rctx) }()
	t.Cleanup(func() { cancel(); <-done })

	on := "east"
	other := map[string]string{"east": "west", "west": "east"}
	migrate := func() string {
		t.Helper()
		var m api.Migration
		if err := json.Unmarshal(e.want(t, "migrate", http.StatusCreated, tok, http.MethodPost, "/v1/migrations",
			api.MigrateRequest{Model: model, TargetController: other[on]}), &m); err != nil {
			t.Fatal(err)
		}
		return m.ID
	}
	waitPhase := func(id string, phases ...migration.Phase) migration.Phase {
		t.Helper()
		var got migration.Phase
		testkit.EventuallyWithin(t, 60*time.Second, func() (bool, error) {
			m, err := e.st.Migrations.ByID(ctx, id)
			got = m.Phase
			for _, p := range phases {
				if m.Phase == p {
					return true, err
				}
			}
			return false, err
		}, "migration %s in %v", id, phases)
		return got
	}
	served := func(ctl string) {
		t.Helper()
		m, err := ctls[ctl].Admin.Model(model).Info(ctx)
		if err != nil || m.Migration != nil {
			t.Fatalf("the model on %s: %+v, %v (want it served there)", ctl, m, err)
		}
		idx, err := e.st.Models.ByUUID(ctx, model)
		if err != nil || idx.ControllerUUID != ctls[ctl].UUID {
			t.Fatalf("the hub's index names controller %s, not %s: %v", idx.ControllerUUID, ctl, err)
		}
	}

	for _, role := range []string{"source", "target"} {
		for _, phase := range []migration.Phase{migration.Quiesce, migration.Export, migration.Import, migration.Validation} {
			t.Run(role+" down in "+string(phase), func(t *testing.T) {
				down := ctls[on]
				if role == "target" {
					down = ctls[other[on]]
				}
				plan.set("before-call:"+string(phase), func() error { down.stop(); return nil })
				id := migrate()
				waitPhase(id, migration.Aborting, migration.Aborted)
				down.start()
				if got := waitPhase(id, migration.Aborted, migration.Done); got != migration.Aborted {
					t.Fatalf("ended %s", got)
				}
				served(on)
				if _, err := ctls[other[on]].Admin.MigrationModel(ctx, model, id); api.CodeOf(err) != api.CodeNotFound {
					t.Fatalf("the target after the abort: %v (want no trace of the model)", err)
				}
				plan.set("", nil)
				if got := waitPhase(migrate(), migration.Done, migration.Aborted); got != migration.Done {
					t.Fatalf("the migration after the outage ended %s", got)
				}
				on = other[on]
				served(on)
			})
		}
	}

	t.Run("source down at REAP", func(t *testing.T) {
		source := ctls[on]
		plan.set("before-call:"+string(migration.Reap), func() error { source.stop(); return nil })
		id := migrate()
		if got := waitPhase(id, migration.ReapFailed, migration.Done); got != migration.ReapFailed {
			t.Fatalf("ended %s, want REAPFAILED", got)
		}
		on = other[on]
		served(on)
		source.start()
		e.want(t, "retry-reap", http.StatusOK, tok, http.MethodPost, "/v1/migrations/"+id+"/retry-reap", nil)
		if got := waitPhase(id, migration.Done, migration.ReapFailed); got != migration.Done {
			t.Fatalf("a retried reap ended %s", got)
		}
		if _, err := source.Admin.Model(model).Info(ctx); api.CodeOf(err) != api.CodeRedirect {
			t.Fatalf("the reaped source: %v (want a redirect to the target)", err)
		}
	})
}
