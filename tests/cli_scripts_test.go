package tests

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/droverhq/drover/tests/testkit"
)

// TestCLIAsScriptsUseIt drives drover the way shells and scripts do,
// against a real controller with an application named kv: the bash
// completion script sourced into a real bash completes commands and the
// model's names, under the name drover and through a juju symlink; and
// the shell runs commands piped to it.
func TestCLIAsScriptsUseIt(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	d := newDroverCLI(t)
	dataDir := filepath.Join(t.TempDir(), "ctl")
	t.Cleanup(func() { killLeftover(dataDir) })
	d.ok("bootstrap", "sc", "--data-dir", dataDir, "--listen", testkit.FreeAddr(t), "--raft-listen", testkit.FreeAddr(t))
	t.Cleanup(func() { d.run("kill-controller", "sc", "-y") })
	d.ok("add-model", "demo")
	d.ok("deploy", "./charms/kv", "kvstore", "-n", "2")

	// A juju symlink to drover: the same program under Juju's name.
	jujuDir := t.TempDir()
	if err := os.Symlink(d.bin, filepath.Join(jujuDir, "juju")); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"drover", "juju"} {
		complete := func(line string) []string {
			t.Helper()
			return bashComplete(t, d, jujuDir, name, line)
		}
		if got := complete(name + " st"); !equalWords(got, "status") {
			t.Errorf("%s st<TAB> = %q, want status", name, got)
		}
		if got := complete(name + " status kv"); !equalWords(got, "kvstore", "kvstore/0", "kvstore/1") {
			t.Errorf("%s status kv<TAB> = %q, want the application and its units", name, got)
		}
		if got := complete(name + " show-unit kvstore/0 kv"); !equalWords(got, "kvstore/1") {
			t.Errorf("%s show-unit kvstore/0 kv<TAB> = %q, want the other unit", name, got)
		}
		if got := complete(name + " wait-for application kv"); !equalWords(got, "kvstore") {
			t.Errorf("%s wait-for application kv<TAB> = %q, want the application", name, got)
		}
		if got := complete(name + " status -m de"); !equalWords(got, "demo") {
			t.Errorf("%s status -m de<TAB> = %q, want the model", name, got)
		}
		if got := complete(name + " status --rel"); !equalWords(got, "--relations") {
			t.Errorf("%s status --rel<TAB> = %q, want the flag", name, got)
		}
	}

	// wait-for follows the model until the goal is reached, or times out.
	if out := d.ok("wait-for", "application", "kvstore", "--query", `len(units) == 2 && forEach(units, unit => unit.workload-status == "active")`, "--timeout", "5m"); !strings.Contains(out, `application "kvstore" reached`) {
		t.Errorf("wait-for application:\n%s", out)
	}
	d.ok("wait-for", "unit", "kvstore/1", "--timeout", "1m") // the default query: alive and active
	if _, errs, code := d.run("wait-for", "unit", "kvstore/0", "--query", `workload-status=="blocked"`, "--timeout", "2s"); code != 1 ||
		!strings.Contains(errs, `ERROR timed out after 2s waiting for unit "kvstore/0" to reach workload-status == "blocked"; last: life alive, workload-status active`) {
		t.Errorf("wait-for that times out: exit %d\n%s", code, errs)
	}

	// One run on two units is one operation of two tasks.
	d.ok("run", "kvstore/0", "kvstore/1", "get", "key=foo", "--wait=2m")
	var ops map[string]struct {
		Summary, Status string
		Tasks           map[string]struct{ Host, Status string }
	}
	if err := json.Unmarshal([]byte(d.ok("operations", "--format", "json")), &ops); err != nil {
		t.Fatal(err)
	}
	if len(ops) != 1 {
		t.Fatalf("operations: %+v", ops)
	}
	for id, op := range ops {
		if op.Summary != "get run on 2 units" || op.Status != "completed" || len(op.Tasks) != 2 {
			t.Errorf("operation %s: %+v", id, op)
		}
		if out := d.ok("show-operation", id); !strings.Contains(out, "host: kvstore/1") || !strings.Contains(out, "value: value-of-foo") {
			t.Errorf("show-operation %s:\n%s", id, out)
		}
	}

	// Commands piped to drover run one per line, as a script would.
	sh := exec.Command(d.bin)
	sh.Env, sh.Dir = d.env(), "testdata"
	sh.Stdin = strings.NewReader("# the model, then its applications\nswitch\nstatus --format short\n")
	out, err := sh.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "sc:demo\n") || !strings.Contains(string(out), "- kvstore/0:") {
		t.Errorf("piped commands: %v\n%s", err, out)
	}
}

// bashComplete sources name's bash completion script into a real bash
// (without the bash-completion package) and returns what Tab offers at
// the end of line.
func bashComplete(t *testing.T, d *droverCLI, jujuDir, name, line string) []string {
	t.Helper()
	script := `source <(` + name + ` completion bash)
compopt() { :; } # only callable while bash itself completes
COMP_LINE=$1
COMP_POINT=${#COMP_LINE}
read -ra COMP_WORDS <<< "$COMP_LINE"
[[ $COMP_LINE == *" " ]] && COMP_WORDS+=("")
COMP_CWORD=$((${#COMP_WORDS[@]}-1))
__start_` + name + `
printf '%s\n' "${COMPREPLY[@]}"
`
	cmd := exec.Command("bash", "-c", script, "bash", line)
	cmd.Env = append(d.env(), "PATH="+filepath.Dir(d.bin)+":"+jujuDir+":"+os.Getenv("PATH"))
	var errb strings.Builder
	cmd.Stderr = &errb
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("bash completing %q: %v\n%s\nstderr:\n%s", line, err, out, errb.String())
	}
	var words []string
	for _, w := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if w = strings.TrimSpace(w); w != "" {
			words = append(words, w)
		}
	}
	return words
}

func equalWords(got []string, want ...string) bool {
	return strings.Join(got, " ") == strings.Join(want, " ")
}
