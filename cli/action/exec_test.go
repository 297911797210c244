package action

import (
	"encoding/base64"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/cli/internal/modelcmd/modelcmdtest"
)

// TestExecPrintsOutputAsWritten: one unit's output that came back in
// base64 (it is not UTF-8) is printed as the command wrote it; the
// structured formats keep Juju's encoding.
func TestExecPrintsOutputAsWritten(t *testing.T) {
	task := api.Task{ID: "1", Receiver: "kv/0", Status: api.TaskCompleted, Results: map[string]any{"return-code": 0,
		"stdout": base64.StdEncoding.EncodeToString([]byte("a\xffb\n")), "stdout-encoding": "base64", "stderr": "warn\n"}}
	a, out, errb := testCommands(t)
	if err := a.printExecResults([]api.Task{task}, "plain", true); err != nil || out.String() != "a\xffb\n" || errb.String() != "warn\n" {
		t.Errorf("plain: %q / %q (%v)", out, errb, err)
	}
	out.Reset()
	if err := a.printExecResults([]api.Task{task}, "json", true); err != nil || !strings.Contains(out.String(), `"stdout-encoding":"base64"`) {
		t.Errorf("json: %s (%v)", out, err)
	}
}

// machineTasks are a finished exec on two machines: one command
// succeeded, one exited non-zero.
func machineTasks() []api.Task {
	at := func(s int) time.Time { return time.Date(2026, 11, 21, 21, 33, s, 0, time.UTC) }
	return []api.Task{
		{ID: "7", Receiver: "machine-0", Action: api.ExecAction, Status: api.TaskCompleted,
			Results:  map[string]any{"return-code": float64(0), "stdout": "host-0\n"},
			Enqueued: at(10), Started: at(11), Completed: at(12)},
		{ID: "8", Operation: "7", Receiver: "machine-1", Action: api.ExecAction, Status: api.TaskFailed, Message: "exit status 2",
			Results:  map[string]any{"return-code": float64(2), "stderr": "ls: cannot access 'x'\n"},
			Enqueued: at(10), Started: at(11), Completed: at(13)},
	}
}

// TestExecMachineShapeGolden: exec --machine prints each machine's task
// keyed by the machine's number, with "machine": N where a unit's task
// has "unit", as Juju 3.6 keys a task by its receiver tag's ID and kind.
func TestExecMachineShapeGolden(t *testing.T) {
	for _, format := range []string{"json", "yaml"} {
		a, out, _ := testCommands(t)
		err := a.printExecResults(machineTasks(), format, true)
		if err == nil || !strings.Contains(err.Error(), `the following task failed:`) || !strings.Contains(err.Error(), `id "8" with return code 2`) {
			t.Errorf("%s: error %v, want task 8 failed with return code 2", format, err)
		}
		modelcmdtest.Golden(t, "exec-machine-"+format+".golden", out.Bytes())
	}
}

// TestExecOnMachines: --machine takes comma-separated lists and repeats,
// combines with --unit, and sends each machine as its tag; bad machine
// numbers and --all with a target are usage errors; a wait that passes
// names the machine as Juju does.
func TestExecOnMachines(t *testing.T) {
	f := &fakeActions{t: t}
	stdout, _, err := runCLI(t, f, (*Commands).ExecCmd, "--machine", "0,1", "--machine", "2", "-u", "kv/0", "--format", "json", "--", "hostname")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"kv/0", "machine-0", "machine-1", "machine-2"}; !slices.Equal(f.lastReq.Receivers, want) {
		t.Errorf("receivers %v, want %v", f.lastReq.Receivers, want)
	}
	var got map[string]map[string]any
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	if got["1"]["machine"] != "1" || got["1"]["unit"] != nil || got["kv/0"]["unit"] != "kv/0" || len(got) != 4 {
		t.Errorf("output %s, want tasks keyed 0, 1, 2 (with machine) and kv/0 (with unit)", stdout)
	}
	for _, args := range [][]string{
		{"--machine", "x", "--", "true"},
		{"--machine", "machine-0", "--", "true"},
		{"--machine", "01", "--", "true"},
		{"--all", "--machine", "0", "--", "true"},
		{"--", "true"},
	} {
		if _, _, err := runCLI(t, f, (*Commands).ExecCmd, args...); err == nil || !strings.Contains(err.Error(), "--") {
			t.Errorf("%v: error %v, want a usage error", args, err)
		}
	}
	want := "timed out waiting for results from: machine 3, unit kv/0"
	if got := (&errTimedOut{receivers: []string{"machine-3", "kv/0"}}).Error(); got != want {
		t.Errorf("timed out: %q, want %q", got, want)
	}
}
