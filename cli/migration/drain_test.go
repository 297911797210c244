package migration

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/droverhq/drover/cli/internal/modelcmd"
)

func drainCmd(c *Commands) *cobra.Command { return c.DrainControllerCmd() }

// TestDrainParallel: three models drained with --parallel 2 run two
// migrations at once, never three; one that aborts is listed with why,
// and the drain exits non-zero. The hub holds every migration in its
// first phase until two have started, so a drain that ran one at a time
// would never end, and one that ran three would be seen.
func TestDrainParallel(t *testing.T) {
	h := newFakeHub(t, shop, db, web, far)
	h.script["db"] = abortedPath("", db, "west")
	h.advance = func(h *fakeHub, id string) bool { return h.started >= 2 }
	e, out, errb := h.env()
	err := run(t.Context(), e, drainCmd, "east", "--to", "west", "--parallel", "2")
	var de *DrainError
	if !errors.As(err, &de) || de.Failed != 1 || de.Models != 3 {
		t.Fatalf("got %v, want a DrainError of 1 in 3\n%s%s", err, out, errb)
	}
	if err.Error() != `1 of 3 models could not be migrated off controller "east" (see above); they stay there` {
		t.Errorf("error %q", err)
	}
	if h.maxActive != 2 || h.started != 3 {
		t.Errorf("%d migrations started, at most %d at once; want 3, 2 at once", h.started, h.maxActive)
	}
	got := out.String()
	if !strings.HasPrefix(got, "Draining controller \"east\": 3 models to controller \"west\", 2 at a time.\n") {
		t.Errorf("output starts\n%s", got)
	}
	for _, want := range []string{
		"db: migration mig-", "shop: QUIESCE     waiting for agents to report back (agents: 1 ok, 0 failed, 2 pending)\n",
		"web: DONE\n", "db: ABORTED", "far",
	} {
		if strings.Contains(got, want) != (want != "far") {
			t.Errorf("output has %q: %v\n%s", want, !strings.Contains(got, want), got)
		}
	}
	// Which of db and shop the hub was asked for first varies.
	summary := regexp.MustCompile(`mig-\d`).ReplaceAllString(got[strings.LastIndex(got, "\n\n")+2:], "mig-N")
	wantSummary := `Migrated (2): shop, web
Failed (1):
  db: migration mig-N of model "db" to controller "west" aborted: agent unit-db-0 failed to quiesce; the model stays on controller "east"
    unit-db-0: hook failed: install
`
	if summary != wantSummary {
		t.Errorf("summary\n%s\nwant\n%s", summary, wantSummary)
	}
}

// TestDrainDone: a drain in which every model migrated says the
// controller can now be removed; one whose migration is in progress (a
// drain run again) is followed, not started again.
func TestDrainDone(t *testing.T) {
	h := newFakeHub(t, shop, db)
	h.addMigration(happyPath("mig-0", db, "west")[3:]...)
	e, out, _ := h.env()
	if err := run(t.Context(), e, drainCmd, "east", "--to", "west"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	got := out.String()
	if !strings.Contains(got, "db: migration mig-0 in progress\n") || h.started != 1 {
		t.Errorf("started %d migrations\n%s", h.started, got)
	}
	if !strings.HasSuffix(got, "\nMigrated (2): db, shop\nController \"east\" hosts no model you can see: 'drover remove-controller east' can now remove it from the hub.\n") {
		t.Errorf("output\n%s", got)
	}
}

// TestDrainRefusals: a missing or same --to and a bad --parallel are
// usage errors; a controller the hub does not know is refused before any
// migration; an empty controller is said to be removable.
func TestDrainRefusals(t *testing.T) {
	h := newFakeHub(t, shop)
	e, out, _ := h.env()
	for _, c := range []struct {
		args  []string
		want  string
		usage bool
	}{
		{[]string{"east"}, "--to CONTROLLER is required", true},
		{[]string{"east", "--to", "east"}, `--to names "east", the controller being drained`, true},
		{[]string{"east", "--to", "west", "--parallel", "0"}, "--parallel 0: want 1 or more", true},
		{[]string{"east", "--to", "north"}, `controller "north" is not behind hub "hub"; 'drover controllers' lists those that are`, false},
		{[]string{"south", "--to", "west"}, `controller "south" is not behind hub "hub"`, false},
	} {
		err := run(t.Context(), e, drainCmd, c.args...)
		var ue modelcmd.UsageError
		if err == nil || !strings.Contains(err.Error(), c.want) || errors.As(err, &ue) != c.usage {
			t.Errorf("%q: %v, want %q (usage %v)", c.args, err, c.want, c.usage)
		}
	}
	if h.started != 0 {
		t.Errorf("refusals started %d migrations", h.started)
	}
	if err := run(t.Context(), e, drainCmd, "west", "--to", "east"); err != nil ||
		out.String() != "Controller \"west\" hosts no model you can see: 'drover remove-controller west' can remove it from the hub.\n" {
		t.Errorf("an empty controller: %v, %q", err, out)
	}
}

// TestDrainInterrupted: Ctrl-C during a drain stops it: the migration in
// progress goes on and is listed so, the models not started stay.
func TestDrainInterrupted(t *testing.T) {
	h := newFakeHub(t, shop, db)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	h.advance = func(*fakeHub, string) bool { return false }
	h.onGet = func(id string, n int) {
		if n == 2 {
			cancel()
		}
	}
	e, out, errb := h.env()
	err := run(ctx, e, drainCmd, "east", "--to", "west")
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v", err)
	}
	if !strings.HasSuffix(out.String(), "\n\nStill migrating (1):\n  db: migration mig-1 goes on (in PRECHECK)\nNot started (1): shop\n") {
		t.Errorf("output\n%s", out)
	}
	if !strings.Contains(errb.String(), "Stopped the drain; the migrations in progress go on") {
		t.Errorf("stderr %q", errb)
	}
}

// TestMigrationsTable: migrations lists the hub's migrations newest
// first, with agents as ok/failed/pending and a failure's reason as the
// message; --model is sent as the model's UUID, --phase in capitals;
// JSON is the hub's documented shape.
func TestMigrationsTable(t *testing.T) {
	h := newFakeHub(t, shop, db)
	h.addMigration(abortedPath("mig-1", db, "west")[4])
	h.addMigration(happyPath("mig-2", shop, "west")[2])
	e, out, _ := h.env()
	list := func(c *Commands) *cobra.Command { return c.MigrationsCmd() }
	if err := run(t.Context(), e, list); err != nil {
		t.Fatal(err)
	}
	want := `ID     Model  From  To    Phase    Agents  Started               Ended                 Message
mig-2  shop   east  west  QUIESCE  3/0/0   2026-11-21 21:33:10Z  -                     waiting for agents to report back
mig-1  db     east  west  ABORTED  2/1/0   2026-11-21 21:33:10Z  2026-11-21 21:34:10Z  agent unit-db-0 failed to quiesce
`
	if out.String() != want {
		t.Errorf("table\n%s\nwant\n%s", out, want)
	}
	out.Reset()
	if err := run(t.Context(), e, list, "--model", "shop", "--phase", "quiesce", "--active", "--for-controller", "east", "--format", "json"); err != nil {
		t.Fatal(err)
	}
	if h.lastQuery != "active=true&controller=east&model="+shop.uuid+"&phase=QUIESCE" {
		t.Errorf("query %q", h.lastQuery)
	}
	if !strings.HasPrefix(out.String(), `[{"id":"mig-2","model-uuid":"`+shop.uuid+`","model-name":"shop"`) {
		t.Errorf("json %s", out)
	}
	out.Reset()
	if err := run(t.Context(), e, list, "--model", "db", "--active"); err != nil || out.String() != "No migrations.\n" {
		t.Errorf("none: %v %q", err, out)
	}
	err := run(t.Context(), e, list, "--phase", "DONEISH")
	var ue modelcmd.UsageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), `--phase "DONEISH": want one of PRECHECK, QUIESCE`) {
		t.Errorf("a bad phase: %v", err)
	}
}

// TestDrainTimeout: --timeout ends the drain with an error; the migration
// in progress goes on and the models not started are listed.
func TestDrainTimeout(t *testing.T) {
	h := newFakeHub(t, shop, db)
	h.advance = func(*fakeHub, string) bool { return false }
	e, out, _ := h.env()
	err := run(t.Context(), e, drainCmd, "east", "--to", "west", "--timeout", "30ms")
	if !errors.Is(err, errStoppedWaiting) || !strings.Contains(err.Error(), `the drain of controller "east" timed out`) {
		t.Fatalf("got %v", err)
	}
	if !strings.HasSuffix(out.String(), "\n\nStill migrating (1):\n  db: migration mig-1 goes on (in PRECHECK)\nNot started (1): shop\n") {
		t.Errorf("output\n%s", out)
	}
}

// TestHubTextCannotDriveTheTerminal: the hub's messages and failure
// reasons, in progress lines and in a drain's summary, show control
// characters as escapes.
func TestHubTextCannotDriveTheTerminal(t *testing.T) {
	h := newFakeHub(t, db)
	path := abortedPath("", db, "west")
	path[0].Message = "checking\x1b[2J"
	path[len(path)-1].Failure = "refused\x1b[1A"
	h.script["db"] = path
	e, out, _ := h.env()
	if err := run(t.Context(), e, drainCmd, "east", "--to", "west"); err == nil {
		t.Fatal("a drain whose migration aborted succeeded")
	}
	if strings.Contains(out.String(), "\x1b") || !strings.Contains(out.String(), `db: PRECHECK    checking\x1b[2J`) ||
		!strings.Contains(out.String(), `aborted: refused\x1b[1A;`) {
		t.Errorf("output\n%q", out)
	}
}
