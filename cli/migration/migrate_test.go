package migration

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/spf13/cobra"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/cli/internal/clientstore"
	"github.com/droverhq/drover/cli/internal/modelcmd"
	"github.com/droverhq/drover/cli/internal/modelcmd/modelcmdtest"
)

func migrateCmd(c *Commands) *cobra.Command { return c.MigrateCmd() }

// TestMigrateStartsAndReturns: without --wait, migrate prints Juju's
// line with the migration's ID and returns; the hub is sent the model's
// UUID and the target's name.
func TestMigrateStartsAndReturns(t *testing.T) {
	h := newFakeHub(t, shop)
	e, out, _ := h.env()
	if err := run(t.Context(), e, migrateCmd, "shop", "west"); err != nil {
		t.Fatal(err)
	}
	if got, want := out.String(), "Migration started with ID \"mig-1\"\n"; got != want {
		t.Errorf("output %q, want %q", got, want)
	}
	if h.gets["mig-1"] != 0 {
		t.Errorf("migrate without --wait read the migration %d times", h.gets["mig-1"])
	}
	if m := h.migrations["mig-1"].current(); m.ModelUUID != shop.uuid || m.TargetController != "west" {
		t.Errorf("the hub started %+v", m)
	}
}

// TestMigrateWaitShowsPhasesUntilDone: --wait shows a line each time the
// phase, message or agents change (not on every poll), and ends when the
// migration is DONE.
func TestMigrateWaitShowsPhasesUntilDone(t *testing.T) {
	h := newFakeHub(t, shop)
	// Each state is answered twice: unchanged answers show no line.
	h.advance = func(h *fakeHub, id string) bool { return h.gets[id]%2 == 1 }
	e, out, errb := h.env()
	if err := run(t.Context(), e, migrateCmd, "shop", "west", "--wait"); err != nil {
		t.Fatalf("%v\n%s", err, errb)
	}
	want := `Migration started with ID "mig-1"
PRECHECK    performing prechecks
QUIESCE     waiting for agents to report back (agents: 1 ok, 0 failed, 2 pending)
QUIESCE     waiting for agents to report back (agents: 3 ok, 0 failed, 0 pending)
EXPORT      exporting model
IMPORT      importing model into target controller
VALIDATION  waiting for agents to reach the target (agents: 3 ok, 0 failed, 0 pending)
SUCCESS
REAP        removing the model from the source controller
DONE
Model "shop" migrated to controller "west".
`
	if out.String() != want {
		t.Errorf("output\n%s\nwant\n%s", out, want)
	}
	if h.gets["mig-1"] < 17 {
		t.Errorf("the migration was read %d times: each state twice is 17", h.gets["mig-1"])
	}
}

// TestMigrateWaitAborted: a migration that ends ABORTED is an error (exit
// 1) that says why, names the agents that failed, and that the model
// stays where it was.
func TestMigrateWaitAborted(t *testing.T) {
	h := newFakeHub(t, db)
	h.script["db"] = abortedPath("", db, "west")
	e, out, _ := h.env()
	err := run(t.Context(), e, migrateCmd, "db", "west", "--wait")
	var ae *AbortedError
	if !errors.As(err, &ae) || ae.M.Phase != "ABORTED" {
		t.Fatalf("got %v, want an AbortedError", err)
	}
	for _, want := range []string{`migration mig-1 of model "db" to controller "west" aborted: agent unit-db-0 failed to quiesce`,
		`the model stays on controller "east"`, "  unit-db-0: hook failed: install"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if !strings.Contains(out.String(), "QUIESCE     waiting for agents to report back (agents: 2 ok, 1 failed, 0 pending)\nABORTING") ||
		!strings.HasSuffix(out.String(), "\nABORTED     (agents: 2 ok, 1 failed, 0 pending)\n") {
		t.Errorf("progress:\n%s", out)
	}
}

// TestMigrateWaitReapFailed: REAPFAILED says the model migrated, its old
// copy is left, and how to retry; --retry-reap --wait then follows the
// reap to DONE.
func TestMigrateWaitReapFailed(t *testing.T) {
	h := newFakeHub(t, shop)
	path := happyPath("", shop, "west")
	failed := path[7]
	failed.Phase, failed.Failure = "REAPFAILED", "controller east unreachable"
	h.script["shop"] = append(path[:7:7], failed)
	e, out, _ := h.env()
	err := run(t.Context(), e, migrateCmd, "shop", "west", "--wait")
	var rf *ReapFailedError
	if !errors.As(err, &rf) {
		t.Fatalf("got %v, want a ReapFailedError", err)
	}
	want := `migration mig-1 is REAPFAILED: model "shop" migrated and runs on controller "west", but its copy on controller "east" could not be removed (controller east unreachable); retry with 'drover migrate --retry-reap mig-1'`
	if err.Error() != want {
		t.Errorf("error\n%s\nwant\n%s", err, want)
	}
	out.Reset()
	if err := run(t.Context(), e, migrateCmd, "--retry-reap", "mig-1", "--wait"); err != nil {
		t.Fatal(err)
	}
	if want := "Migration mig-1: removing model \"shop\" from controller \"east\" again (REAP).\nREAP\nDONE\nModel \"shop\" migrated to controller \"west\".\n"; out.String() != want {
		t.Errorf("retry-reap output\n%s\nwant\n%s", out, want)
	}
}

// TestMigrateAbortByNameOrID: --abort takes the model (its migration in
// progress) or a migration's ID; with --wait it waits for ABORTED.
func TestMigrateAbortByNameOrID(t *testing.T) {
	h := newFakeHub(t, shop, db)
	h.addMigration(happyPath("mig-old", shop, "west")[8]) // DONE, an older one
	h.addMigration(happyPath("mig-7", shop, "west")[1:]...)
	e, out, errb := h.env()
	if err := run(t.Context(), e, migrateCmd, "--abort", "shop", "--wait"); err != nil {
		t.Fatalf("%v\n%s", err, errb)
	}
	want := `Abort of migration mig-7 of model "shop" requested (in QUIESCE).
QUIESCE     waiting for agents to report back (agents: 1 ok, 0 failed, 2 pending)
ABORTING    aborting: asked by alice@example.com (agents: 1 ok, 0 failed, 2 pending)
ABORTED     (agents: 1 ok, 0 failed, 2 pending)
Migration mig-7 aborted: model "shop" stays on controller "east".
`
	if out.String() != want {
		t.Errorf("output\n%s\nwant\n%s", out, want)
	}
	if !strings.Contains(h.lastQuery, "model="+shop.uuid) || !strings.Contains(h.lastQuery, "active=true") {
		t.Errorf("the model's migration was looked up with %q", h.lastQuery)
	}
	h.addMigration(happyPath("mig-8", db, "west")[2:]...)
	out.Reset()
	if err := run(t.Context(), e, migrateCmd, "--abort", "mig-8"); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(h.aborts, ","); got != "mig-7,mig-8" || out.String() != "Abort of migration mig-8 of model \"db\" requested (in EXPORT).\n" {
		t.Errorf("aborted %s; output %q", got, out)
	}
	for _, c := range []struct{ ref, want string }{
		{"shop", `model "shop" has no migration in progress; 'drover migrations --model shop' lists its migrations`},
		{"mig-old", `migration mig-old of model "shop" has ended (DONE): nothing to abort`},
		{"nothing", `no model or migration "nothing" at hub "hub"`},
	} {
		err := run(t.Context(), e, migrateCmd, "--abort", c.ref)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("--abort %s: %v, want %q", c.ref, err, c.want)
		}
	}
}

// TestMigrateInterruptStopsWaitingOnly: Ctrl-C while waiting ends the
// command and says the migration goes on; nothing asks the hub to abort.
func TestMigrateInterruptStopsWaitingOnly(t *testing.T) {
	h := newFakeHub(t, shop)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	h.advance = func(h *fakeHub, id string) bool { return h.gets[id] < 1 } // stays in QUIESCE
	h.onGet = func(id string, n int) {
		if n == 3 {
			cancel() // the user's Ctrl-C
		}
	}
	e, _, errb := h.env()
	err := run(ctx, e, migrateCmd, "shop", "west", "--wait")
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want canceled", err)
	}
	if want := "Stopped waiting; migration mig-1 goes on (in QUIESCE): 'drover migrations --model shop' shows it, 'drover migrate --abort mig-1' aborts it.\n"; errb.String() != want {
		t.Errorf("stderr %q, want %q", errb, want)
	}
	if len(h.aborts) != 0 {
		t.Errorf("interrupting asked the hub to abort %v", h.aborts)
	}
}

// TestMigrateTimeout: --timeout ends the wait with an error that says the
// migration goes on.
func TestMigrateTimeout(t *testing.T) {
	h := newFakeHub(t, shop)
	h.advance = func(*fakeHub, string) bool { return false }
	e, _, _ := h.env()
	err := run(t.Context(), e, migrateCmd, "shop", "west", "--wait", "--timeout", "20ms")
	if !errors.Is(err, errStoppedWaiting) || !strings.Contains(err.Error(), "after 20ms: migration mig-1 goes on (in PRECHECK)") {
		t.Fatalf("got %v", err)
	}
}

// TestMigrateUsage: argument and flag mistakes are usage errors (exit 2)
// before any request; a model already on the target and a controller
// that is not a hub are refused saying so.
func TestMigrateUsage(t *testing.T) {
	h := newFakeHub(t, shop)
	e, _, _ := h.env()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"shop"}, "expected a model and the controller to migrate it to"},
		{[]string{"--abort", "shop", "west"}, "expected with --abort, a model or migration ID"},
		{[]string{"--retry-reap"}, "expected with --retry-reap, a migration ID"},
		{[]string{"--abort", "--retry-reap", "x"}, "--abort and --retry-reap are exclusive"},
		{[]string{"shop", "west", "--timeout", "1m"}, "--timeout bounds --wait: add --wait"},
		{[]string{"shop", "west", "--wait", "--timeout", "-1s"}, "--timeout -1s: want a duration of 0 or more"},
	} {
		err := run(t.Context(), e, migrateCmd, c.args...)
		var ue modelcmd.UsageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want a usage error with %q", c.args, err, c.want)
		}
	}
	if h.started != 0 {
		t.Errorf("a usage error started %d migrations", h.started)
	}
	if err := run(t.Context(), e, migrateCmd, "shop", "east"); err == nil ||
		err.Error() != `model "shop" is already on controller "east"; name another controller behind the hub ('drover controllers' lists them)` {
		t.Errorf("to the same controller: %v", err)
	}
	if err := e.Store.Update(func(s *clientstore.State) error { s.Controllers["hub"].Hub = false; return nil }); err != nil {
		t.Fatal(err)
	}
	if err := run(t.Context(), e, migrateCmd, "shop", "west"); err == nil || !strings.Contains(err.Error(), `controller "hub" is not a hub: models migrate between the controllers of a hub`) {
		t.Errorf("at a controller: %v", err)
	}
}

// TestMigrateWaitsOutAnUnavailableHub: a hub that cannot answer for a
// moment (a replica restarting) does not end the wait; any other refusal
// does.
func TestMigrateWaitsOutAnUnavailableHub(t *testing.T) {
	h := newFakeHub(t, shop)
	inner := h.handler()
	var mu sync.Mutex
	gets, refuse := 0, api.CodeUnavailable
	mux := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/v1/migrations/mig-") {
			mu.Lock()
			gets++
			n, code := gets, refuse
			mu.Unlock()
			if n == 2 || n == 3 {
				status := http.StatusServiceUnavailable
				if code == api.CodeForbidden {
					status = http.StatusForbidden
				}
				modelcmdtest.AnswerError(w, status, code, "the hub cannot answer: "+string(code))
				return
			}
		}
		inner.ServeHTTP(w, r)
	})
	e, out, _ := modelcmdtest.AtFakeHub(t, mux)
	if err := run(t.Context(), e, migrateCmd, "shop", "west", "--wait"); err != nil || !strings.HasSuffix(out.String(), "DONE\nModel \"shop\" migrated to controller \"west\".\n") {
		t.Fatalf("%v\n%s", err, out)
	}
	mu.Lock()
	gets, refuse = 0, api.CodeForbidden
	mu.Unlock()
	err := run(t.Context(), e, migrateCmd, "shop", "west", "--wait")
	if api.CodeOf(err) != api.CodeForbidden {
		t.Fatalf("a refusal while waiting: %v", err)
	}
}
