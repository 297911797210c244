package hooktools

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/droverhq/drover/agent/internal/hookctx"
	"go.uber.org/goleak"
)

// TestMain doubles as the tool binary: the end-to-end tests symlink tool
// names to the test executable, which then behaves as cmd/drover-agent does.
func TestMain(m *testing.M) {
	// The environment marks a tool process, so that a symlink with an
	// unknown name reaches Main's error path instead of re-running the tests.
	if os.Getenv("HOOKTOOLS_TEST_TOOL") == "1" || IsTool(os.Args[0]) {
		os.Exit(Main(os.Args[0], os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr))
	}
	goleak.VerifyTestMain(m)
}

type agentHarness struct {
	srv      *Server
	tools    string
	socket   string
	id       string
	f        *fixture
	hc       *hookctx.Context
	charmDir string
}

// startAgent serves an action context (so action tools work too) with the
// fixture's relations over a real unix socket.
func startAgent(t *testing.T) *agentHarness {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	short, err := os.MkdirTemp("", "ht")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(short) })
	h := &agentHarness{tools: filepath.Join(short, "tools"), socket: filepath.Join(short, "agent.socket"), id: "app-0-install-0123456789abcdef", charmDir: t.TempDir()}
	if err := InstallSymlinks(h.tools, exe); err != nil {
		t.Fatal(err)
	}
	if err := InstallSymlinks(h.tools, exe); err != nil { // idempotent
		t.Fatal(err)
	}
	h.srv, err = Listen("unix", h.socket)
	if err != nil {
		t.Fatal(err)
	}
	h.f = newFixture().action(map[string]any{"name": "n", "opts": map[string]any{"depth": 2}})
	h.f.remote.leader = true
	h.hc = h.f.ctx(t)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- h.srv.Serve(ctx) }()
	deactivate := h.srv.Activate(h.id, h.hc)
	t.Cleanup(func() {
		deactivate()
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return h
}

func (h *agentHarness) env(id string) []string {
	return []string{
		"PATH=" + h.tools + ":" + os.Getenv("PATH"),
		"JUJU_CONTEXT_ID=" + id,
		"JUJU_AGENT_SOCKET_NETWORK=unix",
		"JUJU_AGENT_SOCKET_ADDRESS=" + h.socket,
		"HOME=" + h.charmDir,
		"HOOKTOOLS_TEST_TOOL=1",
	}
}

// command runs a program in the charm directory with stdin attached to a
// pipe that is never written nor closed, as a hook run from a loop may be.
func (h *agentHarness) command(t *testing.T, id string, name string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	cmd := exec.CommandContext(t.Context(), name, args...)
	cmd.Dir, cmd.Env, cmd.Stdin = h.charmDir, h.env(id), r
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	code = cmd.ProcessState.ExitCode()
	if err != nil && code < 0 {
		t.Fatalf("%s: %v", name, err)
	}
	return out.String(), errb.String(), code
}

const bashHook = `set -u
fail() { echo "FAIL: $*" >&2; exit 10; }
[ "$(relation-get -r db:1 host mysql/0)" = "10.0.0.1" ] || fail relation-get
echo '{"k": "v"}' | relation-set -r db:1 --file - || fail relation-set
[ "$(relation-get -r 1 k app/0)" = "v" ] || fail own view
relation-set -r db:1 --app ak=av || fail app set
status-set active "all good" || fail status-set
relation-get -r 99 - mysql/0 2>err && fail unknown relation accepted
rc=$?; [ $rc -eq 2 ] || fail "unknown relation exit $rc"
grep -q "^ERROR .*relation not found" err || fail "stderr: $(cat err)"
[ "$(is-leader)" = "True" ] || fail is-leader
[ "$(config-get n)" = "7" ] || fail config-get
[ "$(action-get opts.depth)" = "2" ] || fail action-get
action-set result.value=42 || fail action-set
open-port 8080/tcp || fail open-port
[ -z "$(opened-ports | grep 8080)" ] || fail opened-ports shows pending
juju-log -l WARNING "from bash"
state-set greeting=hello
[ "$(state-get greeting)" = "hello" ] || fail state-get
relation-ids db
`

func TestEndToEndBash(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash not available")
	}
	h := startAgent(t)
	stdout, stderr, code := h.command(t, h.id, "bash", "-c", bashHook)
	if code != 0 {
		t.Fatalf("hook exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	if stdout != "db:1\n" {
		t.Errorf("stdout = %q", stdout)
	}
	ch := h.hc.Flush()
	if len(ch.Relations) != 1 || ch.Relations[0].Unit["k"] != "v" || ch.Relations[0].App["ak"] != "av" {
		t.Errorf("relation changes = %+v", ch.Relations)
	}
	if len(ch.OpenPorts) != 1 || ch.OpenPorts[0].From != 8080 || ch.State["greeting"] != "hello" {
		t.Errorf("changes = %+v", ch)
	}
	if h.f.remote.unitStatus.Message != "all good" {
		t.Errorf("status = %+v", h.f.remote.unitStatus)
	}
	if got := h.hc.Action().Outcome().Results; got["result"].(map[string]any)["value"] != "42" {
		t.Errorf("results = %v", got)
	}
}

func TestEndToEndRejections(t *testing.T) {
	h := startAgent(t)
	tool := filepath.Join(h.tools, "is-leader")
	_, stderr, code := h.command(t, "other-context", tool)
	if code != 1 || !strings.Contains(stderr, "ERROR bad request: unknown context id") {
		t.Errorf("wrong context: code %d stderr %q", code, stderr)
	}
	_, stderr, code = h.command(t, "", tool)
	if code != 1 || !strings.Contains(stderr, "JUJU_CONTEXT_ID not set") {
		t.Errorf("no context: code %d stderr %q", code, stderr)
	}
	if err := os.Symlink(tool, filepath.Join(h.tools, "no-such-tool")); err != nil {
		t.Fatal(err)
	}
	_, stderr, code = h.command(t, h.id, filepath.Join(h.tools, "no-such-tool"))
	if code != 1 || !strings.Contains(stderr, `unknown command "no-such-tool"`) {
		t.Errorf("unknown tool: code %d stderr %q", code, stderr)
	}
}

const opsLikeScript = `
import json, subprocess, sys

def run(*args, input=None):
    # As ops._ModelBackend._run does: capture_output, text, check by caller.
    return subprocess.run(args, input=input, capture_output=True, text=True)

def ok(*args, input=None):
    p = run(*args, input=input)
    if p.returncode != 0:
        sys.exit("%s failed: %d %s" % (args, p.returncode, p.stderr))
    return p.stdout

assert json.loads(ok("relation-get", "--format=json", "-r", "db:1", "-", "mysql/0")) == {"host": "10.0.0.1", "port": "3306"}
assert json.loads(ok("relation-get", "--format=json", "-r", "db:1", "--app", "-", "mysql")) == {"password": "12345"}
ok("relation-set", "-r", "db:1", "--app", "--file", "-", input=json.dumps({"leader": "data", "x": ""}))
ok("relation-set", "-r", "db:1", "--file", "-", input=json.dumps({"unit": "data"}))
assert json.loads(ok("relation-get", "--format=json", "-r", "db:1", "--app", "-", "app")) == {"leader": "data"}
ok("status-set", "--application=False", "active", "--", "msg")
ok("status-set", "--application=True", "waiting", "--", "app msg")
assert json.loads(ok("is-leader", "--format=json")) is True
assert json.loads(ok("config-get", "--format=json")) == {"b": True, "n": 7, "name": "x"}
assert json.loads(ok("action-get", "--format=json")) == {"name": "n", "opts": {"depth": 2}}
ok("state-set", "--file", "-", input=json.dumps({"stored": "{\"a\": 1}"}))
assert json.loads(ok("state-get", "--format=json")) == {"s": "1", "stored": "{\"a\": 1}"}
assert ok("state-get", "nope") == ""
assert json.loads(ok("relation-list", "--format=json", "-r", "db:1")) == ["mysql/0", "mysql/1"]
assert json.loads(ok("relation-ids", "db", "--format=json")) == ["db:1"]
assert json.loads(ok("network-get", "db", "-r", "1", "--format=json"))["ingress-addresses"] == ["10.0.0.9"]
ok("juju-log", "--log-level", "DEBUG", "--", "ops says hi")
p = run("relation-get", "--format=json", "-r", "db:7", "-", "mysql/0")
assert p.returncode == 2 and "relation not found" in p.stderr, p
p = run("status-get", "--include-data", "--format=json", "--application=true")
assert json.loads(p.stdout)["application-status"]["status"] == "waiting", p
`

func TestEndToEndOpsStylePython(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not available")
	}
	h := startAgent(t)
	stdout, stderr, code := h.command(t, h.id, python, "-c", opsLikeScript)
	if code != 0 {
		t.Fatalf("python exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	ch := h.hc.Flush()
	if len(ch.Relations) != 1 || ch.Relations[0].App["leader"] != "data" || ch.Relations[0].Unit["unit"] != "data" {
		t.Errorf("relation changes = %+v", ch.Relations)
	}
	if h.f.remote.appStatus.Message != "app msg" {
		t.Errorf("app status = %+v", h.f.remote.appStatus)
	}
}
