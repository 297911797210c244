package tests

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/charm"
	"github.com/droverhq/drover/spoke/provider/local"
	"github.com/droverhq/drover/tests/testkit"
)

// repoRoot is the module root (tests/ is one level down).
func repoRoot(t *testing.T) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(filepath.Dir(file))
}

// agentEnv is a controller of real processes with a model to deploy into.
type agentEnv struct {
	t          *testing.T
	c          *procCluster
	cl         *api.Client
	model      string
	machineDir string
}

func newAgentEnv(t *testing.T, nodes int) *agentEnv {
	t.Helper()
	// As root, machines run as their own users, who must reach the
	// machine directory: a root-owned 0755 directory, not t.TempDir (0700).
	root, err := os.MkdirTemp("", "drover-e2e-machines-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	machineDir := filepath.Join(root, "m")
	e := &agentEnv{t: t, machineDir: machineDir}
	// Agents run in their own process groups and workloads detach with
	// setsid, so stopping droverd leaves them behind: kill them by the PIDs
	// they recorded, then remove the machines and their users. Registered
	// before the nodes start, so this runs after they are killed (no
	// provisioner left to restart an agent).
	t.Cleanup(func() {
		e.killLocalProcesses()
		if err := local.DestroyMachines(machineDir, 10*time.Second); err != nil {
			t.Error(err)
		}
		os.RemoveAll(root)
	})
	c := startProcClusterWith(t, nodes, []string{"--machine-dir", machineDir})
	idx := make([]int, nodes)
	for i := range idx {
		idx[i] = i
	}
	cl := c.client(idx...)
	m, err := cl.AddModel(t.Context(), api.AddModelRequest{Name: "agents"})
	if err != nil {
		t.Fatal(err)
	}
	e.c, e.cl, e.model = c, cl, m.UUID
	return e
}

// killLocalProcesses SIGKILLs every agent (agent.pid, its process group)
// and every charm workload (<charm dir>/*.pid) under the machine directory.
func (e *agentEnv) killLocalProcesses() { killLocalProcessesUnder(e.machineDir) }

// killLocalProcessesUnder SIGKILLs every agent (agent.pid, its process
// group) and every charm workload (<charm dir>/*.pid) whose PID file is
// under dir: what a test's local machines started.
func killLocalProcessesUnder(dir string) {
	filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".pid") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return nil
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
		if err != nil || pid <= 1 {
			return nil
		}
		if filepath.Base(path) == "agent.pid" {
			syscall.Kill(-pid, syscall.SIGKILL)
		}
		syscall.Kill(pid, syscall.SIGKILL)
		return nil
	})
}

func (e *agentEnv) ctx(d time.Duration) context.Context { return ctxFor(e.t, d) }

// upload packs and uploads a charm directory (charms/<name> or a path).
func (e *agentEnv) upload(dir string) string {
	e.t.Helper()
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(repoRoot(e.t), "charms", dir)
	}
	var buf bytes.Buffer
	if err := charm.ArchiveDir(dir, &buf); err != nil {
		e.t.Fatal(err)
	}
	ch, err := e.cl.UploadCharm(e.ctx(30*time.Second), &buf)
	if err != nil {
		e.t.Fatal(err)
	}
	return ch.SHA256
}

func (e *agentEnv) deploy(dir, app string, n int, config map[string]any) {
	e.t.Helper()
	_, err := e.cl.Model(e.model).Deploy(e.ctx(30*time.Second), api.DeployRequest{Application: app, CharmSHA256: e.upload(dir), NumUnits: n, Config: config})
	if err != nil {
		e.t.Fatalf("deploy %s: %v", app, err)
	}
}

func (e *agentEnv) units() map[string]api.Unit {
	units, err := e.cl.Model(e.model).Units(e.ctx(10 * time.Second))
	if err != nil {
		return nil
	}
	out := map[string]api.Unit{}
	for _, u := range units {
		out[u.Name] = u
	}
	return out
}

// waitUnits waits until cond holds for the model's units; on failure it
// prints every unit's status.
func (e *agentEnv) waitUnits(what string, d time.Duration, cond func(map[string]api.Unit) bool) {
	e.t.Helper()
	var last map[string]api.Unit
	ctx, cancel := context.WithTimeout(e.t.Context(), d)
	defer cancel()
	for {
		last = e.units()
		if last != nil && cond(last) {
			return
		}
		select {
		case <-ctx.Done():
			e.t.Fatalf("%s: not reached in %v; units:\n%s", what, d, describe(last))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func describe(units map[string]api.Unit) string {
	var lines []string
	for _, u := range units {
		lines = append(lines, fmt.Sprintf("  %s (%s, machine %s): workload %s %q, agent %s %q", u.Name, u.Life, u.MachineID,
			u.WorkloadStatus.Status, u.WorkloadStatus.Message, u.AgentStatus.Status, u.AgentStatus.Message))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// appUnits returns the units of app.
func appUnits(units map[string]api.Unit, app string) []api.Unit {
	var out []api.Unit
	for _, u := range units {
		if u.Application == app {
			out = append(out, u)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// allStatus reports whether app has n units, all idle with the workload
// status and a message containing msg.
func allStatus(units map[string]api.Unit, app string, n int, status, msg string) bool {
	us := appUnits(units, app)
	if len(us) != n {
		return false
	}
	for _, u := range us {
		if u.WorkloadStatus.Status != status || !strings.Contains(u.WorkloadStatus.Message, msg) || u.AgentStatus.Status != "idle" {
			return false
		}
	}
	return true
}

// unitDir is a unit's agent directory on its local machine.
func (e *agentEnv) unitDir(u api.Unit) string {
	return filepath.Join(e.machineDir, e.model, u.MachineID, "agents", "unit-"+strings.ReplaceAll(u.Name, "/", "-"))
}

// hookLog is the hooks a charm recorded (charms append one line per
// successful hook to hooks.log in their charm directory).
func (e *agentEnv) hookLog(u api.Unit) []string {
	data, err := os.ReadFile(filepath.Join(e.unitDir(u), "charm", "hooks.log"))
	if err != nil {
		return nil
	}
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if l != "" {
			out = append(out, strings.TrimSpace(l))
		}
	}
	return out
}

// runAction runs an action on a unit and waits for its task to finish.
func (e *agentEnv) runAction(unit, action string, params map[string]any) *api.Task {
	e.t.Helper()
	tasks, err := e.cl.Model(e.model).RunAction(e.ctx(30*time.Second), api.RunActionRequest{Receivers: []string{unit}, Action: action, Params: params})
	if err != nil {
		e.t.Fatalf("run %s on %s: %v", action, unit, err)
	}
	var task *api.Task
	testkit.EventuallyWithin(e.t, 60*time.Second, func() (bool, error) {
		task, err = e.cl.Model(e.model).Task(e.ctx(30*time.Second), tasks[0].ID, 10*time.Second)
		if err != nil {
			return false, err
		}
		return task.Status == api.TaskCompleted || task.Status == api.TaskFailed, nil
	}, "task %s (%s on %s) finished", tasks[0].ID, action, unit)
	return task
}

// httpGet fetches a URL's body.
func httpGet(url string) (string, error) {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		return string(b), fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	return string(b), err
}
