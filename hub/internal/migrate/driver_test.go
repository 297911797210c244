package migrate_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/droverhq/drover/authz"
	"github.com/droverhq/drover/hub/internal/hubtest"
	"github.com/droverhq/drover/hub/internal/migrate"
	"github.com/droverhq/drover/hub/internal/migration"
	"github.com/droverhq/drover/hub/internal/store"
)

func TestMain(m *testing.M) { os.Exit(hubtest.Main(m)) }

// env is a hub database with two controllers, east and west, a model on
// east, and the fake controllers.
type env struct {
	t                 *testing.T
	st                *store.Store
	f                 *fakeControllers
	model, east, west string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	ctx := t.Context()
	e := &env{t: t, st: hubtest.Store(t), model: uuid.NewString(), east: uuid.NewString(), west: uuid.NewString()}
	if err := e.st.Organizations.Ensure(ctx, "acme"); err != nil {
		t.Fatal(err)
	}
	for name, id := range map[string]string{"east": e.east, "west": e.west} {
		if err := e.st.Controllers.Upsert(ctx, store.Controller{UUID: id, Name: name,
			APIAddresses: []string{"127.0.0.1:1"}, CACert: "ca of " + name}); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.st.Models.Insert(ctx, store.Model{UUID: e.model, Name: "shop", Org: "acme", ControllerUUID: e.east, EventIndex: 9}); err != nil {
		t.Fatal(err)
	}
	e.f = newFake(e.east, e.west, "machine-0", "machine-1", "machine-2")
	return e
}

func (e *env) start() store.Migration {
	e.t.Helper()
	m, err := e.st.Migrations.Start(e.t.Context(), store.NewMigration{ModelUUID: e.model, ModelName: "shop",
		SourceController: e.east, TargetController: e.west, RequestedBy: "alice"}, time.Now())
	if err != nil {
		e.t.Fatal(err)
	}
	return m
}

// driver builds a driver named name with faults, the test's short timings,
// and what tweak changes.
func (e *env) driver(name string, faults func(string) error, tweak ...func(*migrate.Config)) *migrate.Driver {
	e.t.Helper()
	cfg := migrate.Config{Logger: slog.New(slog.DiscardHandler), Now: time.Now, Store: e.st, Controllers: e.f.as(name),
		Faults: faults, MinionWait: 20 * time.Second, Attempts: 3, Backoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond,
		Poll: 10 * time.Millisecond, ReportPoll: 10 * time.Millisecond}
	for _, fn := range tweak {
		fn(&cfg)
	}
	d, err := migrate.New(cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	return d
}

// run runs d until the test ends or stop is called; stop waits for Run to
// return.
func (e *env) run(d *migrate.Driver) (stop func()) {
	ctx, cancel := context.WithCancel(e.t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = d.Run(ctx)
	}()
	stop = func() {
		cancel()
		<-done
	}
	e.t.Cleanup(stop)
	return stop
}

// wait waits until migration id is in one of phases.
func (e *env) wait(id string, phases ...migration.Phase) store.Migration {
	e.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		m, err := e.st.Migrations.ByID(e.t.Context(), id)
		if err != nil {
			e.t.Fatal(err)
		}
		if slices.Contains(phases, m.Phase) {
			return m
		}
		if time.Now().After(deadline) {
			evs, _ := e.st.Migrations.Events(e.t.Context(), id)
			e.t.Fatalf("migration in %s (%s), not in %v; events %+v", m.Phase, m.Message, phases, evs)
		}
		time.Sleep(5 * time.Millisecond) // polling a condition
	}
}

// phasesOf lists the phases migration id went through.
func (e *env) phasesOf(id string) []migration.Phase {
	evs, err := e.st.Migrations.Events(e.t.Context(), id)
	if err != nil {
		e.t.Fatal(err)
	}
	var out []migration.Phase
	for _, ev := range evs {
		if ev.Kind == store.EventPhase {
			out = append(out, ev.Phase)
		}
	}
	return out
}

func (e *env) modelController() string {
	m, err := e.st.Models.ByUUID(e.t.Context(), e.model)
	if err != nil {
		e.t.Fatal(err)
	}
	return m.ControllerUUID
}

var happyPath = []migration.Phase{migration.Precheck, migration.Quiesce, migration.Export, migration.Import,
	migration.Validation, migration.Success, migration.LogTransfer, migration.Reap, migration.Done}

// mainOp is each phase's call whose success moves it on.
var mainOp = map[migration.Phase]string{
	migration.Precheck: "target precheck", migration.Quiesce: "source quiesce", migration.Export: "source export",
	migration.Import: "target import", migration.Validation: "source phase-VALIDATION", migration.Success: "target activate",
	migration.LogTransfer: "target send-logs", migration.Reap: "source reap", migration.Aborting: "source release",
}

func TestNewRefusesAnIncompleteConfig(t *testing.T) {
	if _, err := migrate.New(migrate.Config{}); err == nil {
		t.Fatal("an empty Config was accepted")
	}
}

// TestHappyPathWalksEveryPhase: a migration goes through every phase to
// DONE, each step's calls carry its key, the index names the target with
// the matching tuple, and the agents' summary is stored.
func TestHappyPathWalksEveryPhase(t *testing.T) {
	e := newEnv(t)
	e.f.blobs = []string{"charm-sha", "resource-sha"}
	m := e.start()
	e.run(e.driver("d1", nil))
	got := e.wait(m.ID, migration.Done, migration.Aborted)
	if got.Phase != migration.Done || got.EndedAt == nil {
		t.Fatalf("ended %s (%s)", got.Phase, got.Failure)
	}
	if phases := e.phasesOf(m.ID); !slices.Equal(phases, happyPath) {
		t.Fatalf("phases %v, want %v", phases, happyPath)
	}
	for phase, op := range mainOp {
		if phase == migration.Aborting {
			if keys := e.f.callsOf(op); len(keys) != 0 {
				t.Fatalf("a successful migration released the source: %v", keys)
			}
			continue
		}
		if keys := e.f.callsOf(op); !slices.Equal(keys, []string{m.ID + "/" + string(phase) + "/1"}) {
			t.Fatalf("%s called with keys %v", op, keys)
		}
	}
	if c := e.modelController(); c != e.west {
		t.Fatalf("the index names controller %s, not west", c)
	}
	ts, err := e.st.Outbox.ExpectedTuples(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	onWest := authz.Tuple{User: authz.ControllerObject(e.west), Relation: authz.RelController, Object: authz.ModelObject(e.model)}
	onEast := authz.Tuple{User: authz.ControllerObject(e.east), Relation: authz.RelController, Object: authz.ModelObject(e.model)}
	if !slices.Contains(ts, onWest) || slices.Contains(ts, onEast) {
		t.Fatalf("expected tuples %v", ts)
	}
	if tr := e.f.traces(); !tr.activated || !tr.reaped || tr.logs != 3 {
		t.Fatalf("controllers: %+v", tr)
	}
	e.f.mu.Lock()
	put := slices.Clone(e.f.blobsPut)
	e.f.mu.Unlock()
	if !slices.Equal(put, []string{"charm-sha", "resource-sha"}) {
		t.Fatalf("the target received the blobs %v, want the model's charm archive and resource", put)
	}
	var agents struct {
		OK       int `json:"ok"`
		Expected int `json:"expected"`
	}
	if err := json.Unmarshal(got.Minions, &agents); err != nil || agents.OK != 3 || agents.Expected != 3 {
		t.Fatalf("agents summary %s: %v", got.Minions, err)
	}
}

// TestFailingCallBeforeSuccessAborts: a call that keeps failing in a
// phase before SUCCESS ends the migration ABORTED, naming the phase, with
// the target's import removed and the source released; the index still
// names the source.
func TestFailingCallBeforeSuccessAborts(t *testing.T) {
	fails := map[migration.Phase]string{
		migration.Precheck: "source precheck", migration.Quiesce: "source quiesce", migration.Export: "source export",
		migration.Import: "target import", migration.Validation: "source phase-VALIDATION",
	}
	for phase, op := range fails {
		t.Run(string(phase), func(t *testing.T) {
			e := newEnv(t)
			e.f.setFail(op, -1)
			m := e.start()
			e.run(e.driver("d1", nil))
			got := e.wait(m.ID, migration.Aborted, migration.Done)
			if got.Phase != migration.Aborted || !strings.Contains(got.Failure, string(phase)) ||
				!strings.Contains(got.Failure, "3 attempts") {
				t.Fatalf("ended %s, failure %q", got.Phase, got.Failure)
			}
			if len(e.f.callsOf(op)) != 3 {
				t.Fatalf("%s tried %d times, want 3", op, len(e.f.callsOf(op)))
			}
			if len(e.f.callsOf("target abort-import")) == 0 || len(e.f.callsOf("source release")) == 0 {
				t.Fatalf("abort-import %v, release %v", e.f.callsOf("target abort-import"), e.f.callsOf("source release"))
			}
			if tr := e.f.traces(); tr.importing || tr.quiesced {
				t.Fatal("the abort left the import or the source's quiesce")
			}
			if c := e.modelController(); c != e.east {
				t.Fatalf("the index names %s after an abort", c)
			}
		})
	}
}

// TestFailingCallFromSuccessOnRetriesToDone: from SUCCESS on a failing
// call is retried past the attempts bound, never aborting; a log transfer
// that keeps failing is given up and the migration goes on.
func TestFailingCallFromSuccessOnRetriesToDone(t *testing.T) {
	for _, c := range []struct {
		op string
		n  int
	}{{"target activate", 7}, {"source phase-SUCCESS", 7}, {"target send-logs", -1}, {"source logs", -1}} {
		t.Run(c.op, func(t *testing.T) {
			e := newEnv(t)
			e.f.setFail(c.op, c.n)
			m := e.start()
			e.run(e.driver("d1", nil))
			got := e.wait(m.ID, migration.Done, migration.Aborted, migration.ReapFailed)
			if got.Phase != migration.Done {
				t.Fatalf("ended %s (%s)", got.Phase, got.Failure)
			}
			if len(e.f.callsOf("target abort-import")) != 0 {
				t.Fatal("a migration past SUCCESS aborted the import")
			}
			if c.n > 0 && len(e.f.callsOf(c.op)) != c.n+1 {
				t.Fatalf("%s called %d times, want %d", c.op, len(e.f.callsOf(c.op)), c.n+1)
			}
			if c.n < 0 { // the log transfer, best effort
				evs, _ := e.st.Migrations.Events(t.Context(), m.ID)
				if !slices.ContainsFunc(evs, func(ev store.MigrationEvent) bool {
					return ev.Phase == migration.Reap && strings.HasPrefix(ev.Detail, "logs not transferred")
				}) || len(e.f.callsOf(c.op)) != 3 {
					t.Fatalf("%s called %d times; events %+v", c.op, len(e.f.callsOf(c.op)), evs)
				}
			}
		})
	}
}

// TestReapFailedThenRetryReap: a reap that keeps failing ends REAPFAILED
// with the model migrated; moved back to REAP it is reaped (with new
// keys) and DONE.
func TestReapFailedThenRetryReap(t *testing.T) {
	e := newEnv(t)
	e.f.setFail("source reap", -1)
	m := e.start()
	d := e.driver("d1", nil)
	e.run(d)
	got := e.wait(m.ID, migration.ReapFailed, migration.Done, migration.Aborted)
	if got.Phase != migration.ReapFailed || e.modelController() != e.west {
		t.Fatalf("ended %s, model on %s", got.Phase, e.modelController())
	}
	e.f.setFail("source reap", 0)
	if _, err := e.st.Migrations.Advance(t.Context(), m.ID, migration.ReapFailed, migration.Reap, "retry", time.Now()); err != nil {
		t.Fatal(err)
	}
	d.Wake()
	if got := e.wait(m.ID, migration.Done, migration.ReapFailed); got.Phase != migration.Done {
		t.Fatalf("after retry-reap: %s", got.Phase)
	}
	keys := e.f.callsOf("source reap")
	if len(keys) != 4 || keys[3] != m.ID+"/REAP/4" {
		t.Fatalf("reap keys %v", keys)
	}
}

// TestAbortRequestedInEachPhase: an abort requested while a phase before
// SUCCESS runs is honoured before the next step: ABORTED, the index
// unchanged.
func TestAbortRequestedInEachPhase(t *testing.T) {
	for _, phase := range happyPath[:5] {
		t.Run(string(phase), func(t *testing.T) {
			e := newEnv(t)
			m := e.start()
			faults := func(point string) error {
				if point == "after-call:"+string(phase) {
					if _, err := e.st.Migrations.RequestAbort(context.Background(), m.ID, "alice", time.Now()); err != nil {
						return err
					}
				}
				return nil
			}
			e.run(e.driver("d1", faults))
			got := e.wait(m.ID, migration.Aborted, migration.Done)
			if got.Phase != migration.Aborted || got.Failure != "aborted at the request of a user" {
				t.Fatalf("ended %s, failure %q", got.Phase, got.Failure)
			}
			if tr := e.f.traces(); e.modelController() != e.east || tr.activated || tr.importing || tr.quiesced {
				t.Fatal("the aborted migration left a trace")
			}
		})
	}
}

// TestAgentsThatDoNotReportAbort: agents silent in QUIESCE past
// MinionWait abort the migration, the failure saying so and naming them.
func TestAgentsThatDoNotReportAbort(t *testing.T) {
	e := newEnv(t)
	e.f.agentSilent["QUIESCE"] = true
	m := e.start()
	e.run(e.driver("d1", nil, func(c *migrate.Config) { c.MinionWait = 300 * time.Millisecond }))
	got := e.wait(m.ID, migration.Aborted, migration.Done)
	if got.Phase != migration.Aborted || !strings.Contains(got.Failure, "3 of 3 agents did not report QUIESCE") ||
		!strings.Contains(got.Failure, "not reported: "+strings.Join(e.f.agents, ", ")) {
		t.Fatalf("ended %s, failure %q", got.Phase, got.Failure)
	}
}

// TestAgentFailureAborts: an agent that cannot reach the target in
// VALIDATION aborts the migration, the failure naming it.
func TestAgentFailureAborts(t *testing.T) {
	e := newEnv(t)
	e.f.agentFail["VALIDATION"] = true
	m := e.start()
	e.run(e.driver("d1", nil))
	got := e.wait(m.ID, migration.Aborted, migration.Done)
	if got.Phase != migration.Aborted || !strings.Contains(got.Failure, "machine-0 (cannot reach the target)") {
		t.Fatalf("ended %s, failure %q", got.Phase, got.Failure)
	}
	if tr := e.f.traces(); tr.importing || tr.quiesced {
		t.Fatal("the abort left the import or the quiesce")
	}
}

// TestOnlyTheLockHolderDrives: of two drivers on one database only the
// one holding the lock calls controllers; the other takes over when it
// stops.
func TestOnlyTheLockHolderDrives(t *testing.T) {
	e := newEnv(t)
	stops := map[string]func(){"d1": e.run(e.driver("d1", nil)), "d2": e.run(e.driver("d2", nil))}
	m := e.start()
	e.wait(m.ID, migration.Done)
	got := e.f.drivers()
	if len(got) != 1 {
		t.Fatalf("drivers that called: %v", got)
	}
	var leader, other string
	for name := range got {
		leader = name
	}
	if other = "d1"; leader == "d1" {
		other = "d2"
	}
	stops[leader]()
	// A second model's migration is the other driver's.
	e2 := *e
	e2.model = uuid.NewString()
	if err := e.st.Models.Insert(t.Context(), store.Model{UUID: e2.model, Name: "blog", Org: "acme", ControllerUUID: e.east}); err != nil {
		t.Fatal(err)
	}
	e.f.mu.Lock()
	e.f.srcMigration, e.f.activated = nil, false
	e.f.mu.Unlock()
	m2 := e2.start()
	e.wait(m2.ID, migration.Done)
	e.f.mu.Lock()
	defer e.f.mu.Unlock()
	n := 0
	for _, c := range e.f.calls {
		if strings.Contains(c, m2.ID) {
			n++
			if !strings.HasPrefix(c, other+" ") {
				t.Fatalf("a call of the second migration by another driver than %s: %s", other, c)
			}
		}
	}
	if n == 0 {
		t.Fatal("no call of the second migration")
	}
}

var errCrash = errors.New("crash")

// TestRestartAfterEachFaultPoint: a driver stopped at any fault point of
// any phase is resumed by a new driver on the same database, which
// repeats a step whose result was not recorded with the same key and
// ends where an uninterrupted migration does.
func TestRestartAfterEachFaultPoint(t *testing.T) {
	points := []string{"before-call", "after-call", "before-persist", "after-persist"}
	for _, phase := range happyPath[:8] {
		for _, point := range points {
			t.Run(string(phase)+"/"+point, func(t *testing.T) {
				e := newEnv(t)
				m := e.start()
				faults, crashed := crashOnce(point + ":" + string(phase))
				stop := e.run(e.driver("d1", faults))
				<-crashed
				stop()
				e.run(e.driver("d2", nil))
				got := e.wait(m.ID, migration.Done, migration.Aborted)
				if got.Phase != migration.Done {
					t.Fatalf("ended %s (%s)", got.Phase, got.Failure)
				}
				if phases := e.phasesOf(m.ID); !slices.Equal(phases, happyPath) {
					t.Fatalf("phases %v", phases)
				}
				var keys []string // the phase's own calls (IMPORT exports again after a restart)
				for _, k := range e.f.callsOf(mainOp[phase]) {
					if strings.Contains(k, "/"+string(phase)+"/") {
						keys = append(keys, k)
					}
				}
				key := m.ID + "/" + string(phase) + "/1"
				want := []string{key}
				switch point {
				case "after-call", "before-persist":
					want = []string{key, key} // not recorded: repeated, same key
				}
				if !slices.Equal(keys, want) {
					t.Fatalf("%s called with %v, want %v", mainOp[phase], keys, want)
				}
			})
		}
	}
}

// TestRestartWhileAborting: a driver stopped at any fault point of
// ABORTING is resumed to ABORTED.
func TestRestartWhileAborting(t *testing.T) {
	for _, point := range []string{"before-call", "after-call", "before-persist", "after-persist"} {
		t.Run(point, func(t *testing.T) {
			e := newEnv(t)
			e.f.setFail("target import", -1)
			m := e.start()
			faults, crashed := crashOnce(point + ":ABORTING")
			stop := e.run(e.driver("d1", faults))
			<-crashed
			stop()
			e.run(e.driver("d2", nil))
			if got := e.wait(m.ID, migration.Aborted, migration.Done); got.Phase != migration.Aborted {
				t.Fatalf("ended %s", got.Phase)
			}
			if tr := e.f.traces(); tr.importing || tr.quiesced {
				t.Fatal("the abort left a trace")
			}
		})
	}
}

// TestProgressWhileWaitingForAgents: while agents have not reported, the
// migration's message says how many did, its agents summary how many are
// pending; an abort requested during the wait is honoured.
func TestProgressWhileWaitingForAgents(t *testing.T) {
	e := newEnv(t)
	e.f.agentSilent["QUIESCE"] = true
	m := e.start()
	e.run(e.driver("d1", nil))
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, err := e.st.Migrations.ByID(t.Context(), m.ID)
		if err != nil {
			t.Fatal(err)
		}
		var agents struct {
			Pending int `json:"pending"`
		}
		_ = json.Unmarshal(got.Minions, &agents)
		if got.Message == "quiescing, waiting for agents to report back (0/3)" && agents.Pending == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("message %q, agents %s", got.Message, got.Minions)
		}
		time.Sleep(5 * time.Millisecond) // polling a condition
	}
	if _, err := e.st.Migrations.RequestAbort(t.Context(), m.ID, "alice", time.Now()); err != nil {
		t.Fatal(err)
	}
	if got := e.wait(m.ID, migration.Aborted, migration.Done); got.Phase != migration.Aborted ||
		!strings.Contains(got.Failure, "aborted at the request of a user") {
		t.Fatalf("ended %s, failure %q", got.Phase, got.Failure)
	}
}

// TestSourceRedirectEndsTheWaitForSwitchedAgents: agents silent at
// SUCCESS on a source that answers with its redirect do not hold the
// migration for MinionWait: it goes on to DONE.
func TestSourceRedirectEndsTheWaitForSwitchedAgents(t *testing.T) {
	e := newEnv(t)
	e.f.agentSilent["SUCCESS"] = true
	e.f.redirects = true
	m := e.start()
	e.run(e.driver("d1", nil, func(c *migrate.Config) { c.MinionWait = time.Hour }))
	if got := e.wait(m.ID, migration.Done, migration.Aborted); got.Phase != migration.Done {
		t.Fatalf("ended %s (%s)", got.Phase, got.Failure)
	}
}

// TestBlobsTheTargetCannotTakeAbort: content the target refuses to keep
// fails the import, which aborts the migration before SUCCESS.
func TestBlobsTheTargetCannotTakeAbort(t *testing.T) {
	e := newEnv(t)
	e.f.blobs = []string{"charm-sha"}
	e.f.setFail("target put-blob", -1)
	m := e.start()
	e.run(e.driver("d1", nil))
	got := e.wait(m.ID, migration.Done, migration.Aborted)
	if got.Phase != migration.Aborted || !strings.Contains(got.Failure, "charm archive or resource charm-sha") {
		t.Fatalf("ended %s (%s), want ABORTED naming the blob", got.Phase, got.Failure)
	}
	if tr := e.f.traces(); tr.importing || tr.activated {
		t.Fatalf("the target after the abort: %+v", tr)
	}
}

// crashOnce is a fault hook that fails the driver with errCrash the first
// time it reaches at, and closes crashed then.
func crashOnce(at string) (faults func(string) error, crashed <-chan struct{}) {
	c := make(chan struct{})
	return func(p string) error {
		if p != at {
			return nil
		}
		select {
		case <-c:
			return nil
		default:
		}
		close(c)
		return errCrash
	}, c
}
