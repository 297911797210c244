package tests

import (
	"encoding/json"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/droverhq/drover/spoke/provider/local"
	"github.com/droverhq/drover/tests/testkit"
)

// TestExecOnMachineEndToEnd drives 'drover exec --machine' as a script
// does, on a controller it bootstraps and a real machine agent: the
// command runs on the machine outside any unit, as the machine's own user
// in the machine's directory; --format json prints Juju's shape keyed by
// the machine number; a failing command is a failed task (exit 1, "the
// following task failed", its results printed), not a CLI error; and
// show-task and operations show the machine's tasks.
func TestExecOnMachineEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs real processes")
	}
	d := newDroverCLI(t)
	dataDir := filepath.Join(t.TempDir(), "ctl")
	t.Cleanup(func() { killLeftover(dataDir) })
	d.ok("bootstrap", "execm", "--data-dir", dataDir, "--listen", testkit.FreeAddr(t), "--raft-listen", testkit.FreeAddr(t))
	d.ok("add-model", "ops")
	d.ok("add-machine")

	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	type task struct {
		ID      string         `json:"id"`
		Machine string         `json:"machine"`
		Unit    *string        `json:"unit"`
		Status  string         `json:"status"`
		Message string         `json:"message"`
		Results map[string]any `json:"results"`
		Timing  map[string]any `json:"timing"`
	}
	out, errs, code := d.run("exec", "--machine", "0", "--wait", "3m", "--format", "json", "--", "hostname")
	var got map[string]task
	if code != 0 || json.Unmarshal([]byte(out), &got) != nil {
		t.Fatalf("exec --machine 0 -- hostname: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	ok := got["0"]
	if len(got) != 1 || ok.Machine != "0" || ok.Unit != nil || ok.Status != "completed" || ok.ID == "" ||
		ok.Results["return-code"] != float64(0) || ok.Results["stdout"] != host+"\n" || ok.Timing["completed"] == nil {
		t.Errorf("exec --machine 0 -- hostname: %s", out)
	}

	// Where and as whom: the machine's directory, its owner (the machine's
	// own user as root), not a unit's hook context.
	out, errs, code = d.run("exec", "--machine", "0", "--", `pwd; id -u; echo "unit=${JUJU_UNIT_NAME:-none}"`)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 3 {
		t.Fatalf("exec --machine 0 -- pwd: exit %d\n%s%s", code, out, errs)
	}
	dir := lines[0]
	if filepath.Base(dir) != "0" || !strings.HasPrefix(dir, local.DefaultDir(dataDir)+string(filepath.Separator)) {
		t.Errorf("the command ran in %q, want machine 0's directory under %s", dir, local.DefaultDir(dataDir))
	}
	var st syscall.Stat_t
	if err := syscall.Stat(dir, &st); err != nil || lines[1] != strconv.FormatUint(uint64(st.Uid), 10) {
		t.Errorf("the command ran as uid %s, want the owner of %s (%d, %v)", lines[1], dir, st.Uid, err)
	}
	if os.Geteuid() == 0 {
		if u, err := user.LookupId(lines[1]); err != nil || u.Uid == "0" {
			t.Errorf("as root the command ran as %q (%v), want the machine's own user", lines[1], err)
		}
	}
	if lines[2] != "unit=none" {
		t.Errorf("the command saw %q: it ran in a unit's hook context", lines[2])
	}

	// A failing command is a failed task: its results are printed, then
	// Juju's text, exit 1.
	out, errs, code = d.run("exec", "--machine", "0", "--format", "json", "--", "echo no >&2; exit 3")
	got = nil
	if code != 1 || json.Unmarshal([]byte(out), &got) != nil || !strings.Contains(errs, "the following task failed:") ||
		!strings.Contains(errs, "with return code 3") {
		t.Fatalf("a failing command: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	failed := got["0"]
	if failed.Status != "failed" || failed.Message != "exit status 3" || failed.Results["return-code"] != float64(3) ||
		failed.Results["stderr"] != "no\n" {
		t.Errorf("a failing command's task: %s", out)
	}

	// show-task and operations show the machine's tasks.
	out = d.ok("show-task", failed.ID, "--format", "json")
	var shown task
	if err := json.Unmarshal([]byte(out), &shown); err != nil || shown.Machine != "0" || shown.Status != "failed" {
		t.Errorf("show-task %s: %s (%v)", failed.ID, out, err)
	}
	out = d.ok("operations", "--machines", "0")
	if !strings.Contains(out, "juju-exec run on machine-0") || strings.Count(out, "machine-0") != 3 {
		t.Errorf("operations --machines 0:\n%s", out)
	}
	if out = d.ok("operations", "--units", "kv/0"); strings.Contains(out, "machine-0") {
		t.Errorf("operations --units kv/0 lists machine tasks:\n%s", out)
	}
}
