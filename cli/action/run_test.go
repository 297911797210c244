package action

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/cli/internal/clientstore"
	"github.com/droverhq/drover/cli/internal/modelcmd/modelcmdtest"
)

const fakeModelUUID = "6a1f0c2e-0000-4000-8000-0000000000aa"

// fixtureTasks are finished tasks of every kind run and exec print.
func fixtureTasks() []api.Task {
	at := func(s int) time.Time { return time.Date(2026, 11, 21, 21, 33, s, 0, time.UTC) }
	return []api.Task{
		{ID: "3", Receiver: "kv/0", Action: "get", Status: api.TaskCompleted,
			Results:  map[string]any{"return-code": float64(0), "stdout": "line\r\n", "stderr": "", "value": "bar", "nested": map[string]any{"a": "b"}},
			Log:      []api.TaskLog{{Time: at(11), Message: "fetching foo"}},
			Enqueued: at(10), Started: at(11), Completed: at(12)},
		{ID: "4", Receiver: "kv/1", Action: "get", Status: api.TaskFailed, Message: "no such key",
			Results: map[string]any{"return-code": float64(0)}, Enqueued: at(10), Started: at(11), Completed: at(13)},
		{ID: "5", Receiver: "kv/2", Action: "get", Status: api.TaskPending, Enqueued: at(10)},
	}
}

// TestTaskShapeGolden: run, exec and show-task print tasks in Juju 3.6's
// shape: keyed by unit; id, log, message, results (return-code an
// integer, empty stdout and stderr left out), status, timing and unit;
// times as Go's time.String().
func TestTaskShapeGolden(t *testing.T) {
	for _, format := range []string{"json", "yaml"} {
		a, out, _ := testCommands(t)
		if err := a.writeTasks(fixtureTasks(), format, true); err != nil {
			t.Fatal(err)
		}
		modelcmdtest.Golden(t, "tasks-"+format+".golden", out.Bytes())
	}
}

// fakeActions is a hub serving model "m" whose actions behave as named:
// "get" completes, "fail" fails with return code 1, "hang" stays
// pending; an unknown unit or action is not found.
type fakeActions struct {
	t       *testing.T
	lastReq api.RunActionRequest
}

func (f *fakeActions) handler() http.Handler {
	mux := http.NewServeMux()
	reply := func(w http.ResponseWriter, status int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(v)
	}
	enq := time.Date(2026, 11, 21, 21, 33, 10, 0, time.UTC)
	tasks := map[string]api.Task{}
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, _ *http.Request) {
		reply(w, http.StatusOK, map[string]any{"models": []api.Model{{UUID: fakeModelUUID, Name: "m", Owner: "alice@example.com"}}})
	})
	mux.HandleFunc("POST /v1/models/"+fakeModelUUID+"/actions", func(w http.ResponseWriter, r *http.Request) {
		var req api.RunActionRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			f.t.Error(err)
		}
		f.lastReq = req
		var out []api.Task
		for i, u := range req.Receivers {
			if !strings.HasPrefix(u, "kv/") && !strings.HasPrefix(u, "machine-") {
				modelcmdtest.AnswerError(w, http.StatusNotFound, api.CodeNotFound, `unit "`+u+`" not found`)
				return
			}
			if req.Action == "nope" {
				modelcmdtest.AnswerError(w, http.StatusNotFound, api.CodeNotFound, `action "nope" not defined on application "kv"`)
				return
			}
			task := api.Task{ID: string(rune('1' + i)), Receiver: u, Action: req.Action, Params: req.Params, Status: api.TaskPending, Enqueued: enq}
			tasks[task.ID] = task
			out = append(out, task)
		}
		reply(w, http.StatusCreated, out)
	})
	mux.HandleFunc("GET /v1/models/"+fakeModelUUID+"/tasks/{id}", func(w http.ResponseWriter, r *http.Request) {
		task := tasks[r.PathValue("id")]
		cmd, _ := task.Params["command"].(string)
		switch {
		case task.Action == "hang":
		case task.Action == "fail" || cmd == "false":
			task.Status, task.Message = api.TaskFailed, "exit status 1"
			task.Results = map[string]any{"return-code": 1, "stderr": "boom\n"}
		default:
			task.Status = api.TaskCompleted
			task.Results = map[string]any{"return-code": 0, "stdout": "hello\n", "value": "bar"}
		}
		reply(w, http.StatusOK, task)
	})
	return mux
}

// runCLI runs one of the action commands with args, as a script would.
func runCLI(t *testing.T, f *fakeActions, mk func(*Commands) *cobra.Command, args ...string) (string, string, error) {
	t.Helper()
	e, out, errb := modelcmdtest.AtFakeHub(t, f.handler())
	dir, err := clientstore.DefaultStoreDir(e.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	e.Store = &clientstore.Store{Dir: dir}
	cmd := mk(&Commands{Env: e})
	cmd.SetArgs(append([]string{"-m", "m"}, args...))
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetErr(&bytes.Buffer{})
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	err = cmd.ExecuteContext(t.Context())
	return out.String(), errb.String(), err
}

// TestRunAsScriptsCallIt drives 'run' as jubilant and pytest-operator do:
// --format json, --params FILE, --wait as a separate argument; a failed
// task says "task failed" after printing its results, an unknown unit or
// action says "(not found)", and a wait that passes says "timed out".
func TestRunAsScriptsCallIt(t *testing.T) {
	params := filepath.Join(t.TempDir(), "params.yaml")
	if err := os.WriteFile(params, []byte("key: foo\nopts:\n  level: 1\n  mode: fast\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f := &fakeActions{t: t}
	stdout, _, err := runCLI(t, f, (*Commands).RunCmd, "kv/0", "get", "--params", params, "opts.level=2", "--format", "json", "--wait", "30s")
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]any{"key": "foo", "opts": map[string]any{"level": float64(2), "mode": "fast"}}; !reflect.DeepEqual(f.lastReq.Params, want) {
		t.Errorf("params sent %v, want %v (the file, then KEY=VALUE over it)", f.lastReq.Params, want)
	}
	var got map[string]struct {
		ID      string         `json:"id"`
		Status  string         `json:"status"`
		Unit    string         `json:"unit"`
		Results map[string]any `json:"results"`
		Timing  map[string]string
	}
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, stdout)
	}
	if r := got["kv/0"]; r.ID != "1" || r.Status != "completed" || r.Unit != "kv/0" || r.Results["return-code"] != float64(0) ||
		r.Results["stdout"] != "hello\n" || r.Results["value"] != "bar" || r.Timing["enqueued"] == "" {
		t.Errorf("kv/0: %+v", r)
	}

	stdout, _, err = runCLI(t, f, (*Commands).RunCmd, "kv/0", "fail", "--format", "json")
	if err == nil || !strings.Contains(err.Error(), "task failed") || !strings.Contains(stdout, `"return-code":1`) {
		t.Errorf("failed task: error %v, stdout %s", err, stdout)
	}
	for _, args := range [][]string{{"db/0", "get"}, {"kv/0", "nope"}} {
		if _, _, err := runCLI(t, f, (*Commands).RunCmd, args...); err == nil || !strings.HasSuffix(err.Error(), "(not found)") {
			t.Errorf("%v: error %v, want one ending in (not found)", args, err)
		}
	}
	stdout, _, err = runCLI(t, f, (*Commands).RunCmd, "kv/0", "hang", "--format", "json", "--wait", "0.001s")
	if err == nil || !strings.Contains(err.Error(), "timed out") || stdout != "" {
		t.Errorf("--wait 0.001s on a pending task: error %v, stdout %q", err, stdout)
	}
}

// TestExecAsScriptsCallIt: 'exec --unit U --wait D --format json -- CMD'
// prints the task in run's shape; a command that exits non-zero is a
// failed task ("task failed"), its output still printed.
func TestExecAsScriptsCallIt(t *testing.T) {
	f := &fakeActions{t: t}
	stdout, _, err := runCLI(t, f, (*Commands).ExecCmd, "--unit", "kv/0", "--wait", "30s", "--format", "json", "--", "echo", "hello")
	if err != nil {
		t.Fatal(err)
	}
	if f.lastReq.Params["command"] != "echo hello" {
		t.Errorf("command sent: %v", f.lastReq.Params)
	}
	if !strings.Contains(stdout, `"kv/0":{"id":"1"`) || !strings.Contains(stdout, `"results":{"return-code":0,"stdout":"hello\n","value":"bar"}`) {
		t.Errorf("stdout %s", stdout)
	}
	stdout, _, err = runCLI(t, f, (*Commands).ExecCmd, "--unit", "kv/0", "--format", "json", "--", "false")
	if err == nil || !strings.Contains(err.Error(), "task failed") || !strings.Contains(stdout, `"stderr":"boom\n"`) {
		t.Errorf("failing command: error %v, stdout %s", err, stdout)
	}
}
