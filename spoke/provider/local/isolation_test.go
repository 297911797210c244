package local_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/charm"
	"github.com/droverhq/drover/spoke"
	"github.com/droverhq/drover/spoke/provider/local"
	"github.com/droverhq/drover/tests/testkit"
)

// proberHook is every hook of the prober charm. Once its config names the
// controller's data directory and the model's machine directory, it tries
// to read the controller's CA key and cluster secret, to list the data
// directory, and to read its own and the other machine's agent.conf, and
// reports each outcome with status-set (and juju-log) as ok, denied or
// error.
const proberHook = `#!/bin/bash
set -u
probe() {
  local out
  if out=$("$@" 2>&1 >/dev/null); then echo ok
  elif [[ $out == *"Permission denied"* ]]; then echo denied
  else echo "error($out)"
  fi
}
ctl=$(config-get controller-dir)
machines=$(config-get machines-dir)
if [ -z "$ctl" ]; then
  juju-log "prober ready" || { status-set blocked "juju-log failed"; exit 0; }
  status-set active ready
  exit 0
fi
msg="user=$(id -un)"
msg+=" ca-key=$(probe cat "$ctl/tls/ca.key")"
msg+=" cluster-secret=$(probe cat "$ctl/tls/cluster.secret")"
msg+=" controller-dir=$(probe ls "$ctl")"
msg+=" other-agent=$(probe cat "$machines/$((1 - JUJU_MACHINE_ID))/agent.conf")"
msg+=" own-agent=$(probe cat "$machines/$JUJU_MACHINE_ID/agent.conf")"
juju-log "probe: $msg" || { status-set blocked "juju-log failed"; exit 0; }
status-set active "$msg"
`

// writeProber makes the prober charm's directory.
func writeProber(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"metadata.yaml": "name: prober\nsummary: reads what it must not\ndescription: a test charm\n",
		"config.yaml": "options:\n" +
			"  controller-dir:\n    type: string\n    default: \"\"\n    description: the controller's data directory\n" +
			"  machines-dir:\n    type: string\n    default: \"\"\n    description: the model's machine directory\n",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, hook := range []string{"install", "start", "config-changed", "update-status", "stop", "remove"} {
		if err := os.WriteFile(filepath.Join(dir, "hooks", hook), []byte(proberHook), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// isolationEnv is one real controller node, as root, whose local machines
// run the real drover-agent.
type isolationEnv struct {
	t          *testing.T
	dataDir    string
	machineDir string
	cl         *api.Client
}

func newIsolationEnv(t *testing.T) *isolationEnv {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("local machines run as their own users only when the controller runs as root; run this test as root")
	}
	bin := t.TempDir()
	out, err := exec.Command("go", "build", "-o", bin+"/", "github.com/droverhq/drover/cmd/drover-agent").CombinedOutput()
	if err != nil {
		t.Fatalf("build drover-agent: %v\n%s", err, out)
	}
	// The machines' directory must be reachable by the machines' users:
	// a root-owned 0755 directory in /tmp, not under t.TempDir (0700).
	machineRoot, err := os.MkdirTemp("", "drover-local-users-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(machineRoot, 0o755); err != nil {
		t.Fatal(err)
	}
	e := &isolationEnv{t: t, dataDir: t.TempDir(), machineDir: filepath.Join(machineRoot, "machines")}
	// Registered before the node starts, so it runs after the node
	// stopped: no provisioner is left to restart an agent.
	t.Cleanup(func() {
		if err := local.DestroyMachines(e.machineDir, 5*time.Second); err != nil {
			t.Error(err)
		}
		os.RemoveAll(machineRoot)
	})

	logs := &testkit.SyncBuffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("controller log:\n%s", logs.String())
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan struct{})
	done := make(chan error, 1)
	cfg := spoke.Config{DataDir: e.dataDir, Bootstrap: true, Ready: ready,
		Listen:      fmt.Sprintf("127.0.0.1:%d", testkit.FreePort(t)),
		RaftListen:  fmt.Sprintf("127.0.0.1:%d", testkit.FreePort(t)),
		AgentBinary: filepath.Join(bin, "drover-agent"), MachineDir: e.machineDir,
		Logger: slog.New(slog.NewTextHandler(logs, nil))}
	go func() { done <- spoke.Run(ctx, cfg) }()
	t.Cleanup(func() { cancel(); <-done })
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("controller: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("controller not ready in 60s")
	}
	cred, err := spoke.ReadAdminCredential(e.dataDir)
	if err != nil {
		t.Fatal(err)
	}
	e.cl, err = api.NewClient(api.ClientConfig{Addresses: cred.APIAddresses, CACert: []byte(cred.CACert),
		User: cred.User, Password: cred.Password})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *isolationEnv) ctx() context.Context {
	ctx, cancel := context.WithTimeout(e.t.Context(), 30*time.Second)
	e.t.Cleanup(cancel)
	return ctx
}

// waitUnits waits until the model has n units, each satisfying cond, and
// returns them; on failure it reports their statuses.
func (e *isolationEnv) waitUnits(model, what string, n int, cond func(api.Unit) bool) []api.Unit {
	e.t.Helper()
	var units []api.Unit
	testkit.EventuallyWithin(e.t, 120*time.Second, func() (bool, error) {
		var err error
		units, err = e.cl.Model(model).Units(e.ctx())
		if err != nil {
			return false, err
		}
		var b strings.Builder
		ok := len(units) == n
		for _, u := range units {
			fmt.Fprintf(&b, "%s on %s: %s %q, agent %s %q; ", u.Name, u.MachineID, u.WorkloadStatus.Status,
				u.WorkloadStatus.Message, u.AgentStatus.Status, u.AgentStatus.Message)
			ok = ok && cond(u)
		}
		if !ok {
			return false, errors.New(b.String())
		}
		return true, nil
	}, what)
	return units
}

// TestCharmCodeCannotReadControllerSecrets: on a controller running as
// root, a hook runs as its machine's own user: it cannot read the
// controller's CA key or cluster secret, list the controller's data
// directory, or read another machine's agent.conf, while its own
// agent.conf and hook tools (config-get, status-set, juju-log) work.
// Removing a machine, and destroying the model, removes the machine's user
// and its directory.
func TestCharmCodeCannotReadControllerSecrets(t *testing.T) {
	e := newIsolationEnv(t)
	var m *api.Model
	testkit.EventuallyWithin(t, 30*time.Second, func() (bool, error) {
		var err error // the admin user exists once bootstrap's writes are applied
		m, err = e.cl.AddModel(e.ctx(), api.AddModelRequest{Name: "isolation"})
		return err == nil, err
	}, "add a model")
	var archive bytes.Buffer
	if err := charm.ArchiveDir(writeProber(t), &archive); err != nil {
		t.Fatal(err)
	}
	ch, err := e.cl.UploadCharm(e.ctx(), &archive)
	if err != nil {
		t.Fatal(err)
	}
	mc := e.cl.Model(m.UUID)
	if _, err := mc.Deploy(e.ctx(), api.DeployRequest{Application: "prober", CharmSHA256: ch.SHA256, NumUnits: 2}); err != nil {
		t.Fatal(err)
	}
	e.waitUnits(m.UUID, "both units ready", 2, func(u api.Unit) bool {
		return u.WorkloadStatus.Message == "ready" && u.AgentStatus.Status == "idle"
	})

	// Both machines exist: the hooks may now look for each other's files.
	if _, err := mc.SetApplicationConfig(e.ctx(), "prober", api.ConfigChange{Set: map[string]any{
		"controller-dir": e.dataDir, "machines-dir": filepath.Join(e.machineDir, m.UUID)}}); err != nil {
		t.Fatal(err)
	}
	units := e.waitUnits(m.UUID, "both units probed", 2, func(u api.Unit) bool {
		return strings.HasPrefix(u.WorkloadStatus.Message, "user=") && u.AgentStatus.Status == "idle"
	})
	users := map[string]string{} // machine ID -> user name
	for _, u := range units {
		msg := u.WorkloadStatus.Message
		for _, want := range []string{"ca-key=denied", "cluster-secret=denied", "controller-dir=denied",
			"other-agent=denied", "own-agent=ok"} {
			if !strings.Contains(msg, want) {
				t.Errorf("%s: %q lacks %s", u.Name, msg, want)
			}
		}
		name := strings.TrimPrefix(strings.Fields(msg)[0], "user=")
		if name == "root" || name == "" {
			t.Errorf("%s: the hook ran as %q", u.Name, name)
		}
		users[u.MachineID] = name
	}
	if t.Failed() {
		t.FailNow()
	}
	if users["0"] == users["1"] {
		t.Fatalf("both machines run as %q", users["0"])
	}
	for id, name := range users {
		dir := filepath.Join(e.machineDir, m.UUID, id)
		fi, err := os.Stat(dir)
		if err != nil {
			t.Fatal(err)
		}
		u, err := user.Lookup(name)
		if err != nil {
			t.Fatalf("machine %s's user: %v", id, err)
		}
		if owner := strconv.Itoa(int(fi.Sys().(*syscall.Stat_t).Uid)); owner != u.Uid || fi.Mode().Perm() != 0o700 {
			t.Errorf("machine %s's directory: owner %s mode %v, want %s (%s) and 0700", id, owner, fi.Mode().Perm(), u.Uid, name)
		}
		conf, err := os.Stat(filepath.Join(dir, "agent.conf"))
		if err != nil {
			t.Fatal(err)
		}
		if owner := strconv.Itoa(int(conf.Sys().(*syscall.Stat_t).Uid)); owner != u.Uid || conf.Mode().Perm() != 0o600 {
			t.Errorf("machine %s's agent.conf: owner %s mode %v, want %s and 0600", id, owner, conf.Mode().Perm(), u.Uid)
		}
	}

	// remove-machine --force: the machine's processes, user and directory go.
	if err := mc.RemoveMachine(e.ctx(), "1", true); err != nil {
		t.Fatal(err)
	}
	e.waitGone(m.UUID, "1", users["1"])
	if _, err := user.Lookup(users["0"]); err != nil {
		t.Fatalf("removing machine 1 removed machine 0's user: %v", err)
	}

	// destroy-model: the rest goes too.
	if _, err := mc.Destroy(e.ctx(), true); err != nil {
		t.Fatal(err)
	}
	e.waitGone(m.UUID, "0", users["0"])
}

// waitGone waits until a machine's directory, user and processes are gone.
func (e *isolationEnv) waitGone(model, id, name string) {
	e.t.Helper()
	dir := filepath.Join(e.machineDir, model, id)
	u, err := user.Lookup(name)
	if err != nil {
		e.t.Fatal(err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	testkit.EventuallyWithin(e.t, 60*time.Second, func() (bool, error) {
		_, statErr := os.Stat(dir)
		_, userErr := user.Lookup(name)
		var unknown user.UnknownUserError
		procs := processesOf(uid)
		if errors.Is(statErr, os.ErrNotExist) && errors.As(userErr, &unknown) && len(procs) == 0 {
			return true, nil
		}
		return false, fmt.Errorf("directory: %v; user: %v; processes: %v", statErr, userErr, procs)
	}, "machine %s's directory, user %s and processes removed", id, name)
}

// processesOf lists the live (not zombie) processes whose real user is uid.
func processesOf(uid int) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, ent := range entries {
		pid, err := strconv.Atoi(ent.Name())
		if err != nil {
			continue
		}
		status, err := os.ReadFile("/proc/" + ent.Name() + "/status")
		if err != nil {
			continue
		}
		if strings.Contains(string(status), "\nState:\tZ") {
			continue
		}
		for _, line := range strings.Split(string(status), "\n") {
			if f := strings.Fields(line); len(f) > 1 && f[0] == "Uid:" && f[1] == strconv.Itoa(uid) {
				out = append(out, pid)
			}
		}
	}
	return out
}
