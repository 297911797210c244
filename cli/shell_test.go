package cli

import (
	"reflect"
	"strings"
	"testing"
)

func TestSplitWords(t *testing.T) {
	got, err := splitWords(`config kv title="hello world" 'a b' c\ d`)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"config", "kv", "title=hello world", "a b", "c d"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q", got)
	}
	if _, err := splitWords(`"open`); err == nil {
		t.Error("unterminated quote accepted")
	}
}

// TestShellReadsPipedCommands: drover with no arguments and stdin not a
// terminal runs the commands it reads, one per line, as sh would: blank
// lines and comments skipped, on past a failure, the last exit code.
func TestShellReadsPipedCommands(t *testing.T) {
	v := jujuVersion()
	for _, tc := range []struct {
		input, out, stderr string
		code               int
	}{
		{"version\n# a comment\n\n  drover version  \n", v + "\n" + v + "\n", "", 0},
		{"no-such-command\nversion\n", v + "\n", `ERROR unknown command "no-such-command"`, 0},
		{"version\nno-such-command\n", v + "\n", `ERROR unknown command "no-such-command"`, 2},
		{"version\nexit\nversion\n", v + "\n", "", 0},
		{"version 'open\n", "", `ERROR line 1: unterminated quote`, 2},
	} {
		a, out, errb := testApp(t)
		a.Stdin = strings.NewReader(tc.input)
		if code := a.Run(t.Context(), nil); code != tc.code || out.String() != tc.out || !strings.HasPrefix(errb.String(), tc.stderr) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want %d, %q, %q", tc.input, code, out, errb, tc.code, tc.out, tc.stderr)
		}
	}
}

// TestInvokedAsJuju: through a juju symlink, usage lines, examples and
// the completion script name juju; the commands are the same.
func TestInvokedAsJuju(t *testing.T) {
	names := map[string][]string{}
	for _, name := range []string{"drover", "", "juju"} {
		a, out, errb := testApp(t)
		a.Name = name
		want := name
		if want == "" {
			want = "drover"
		}
		if code := a.Run(t.Context(), []string{"help", "status"}); code != 0 {
			t.Fatalf("%s help status: exit %d: %s", want, code, errb)
		}
		for _, s := range []string{"Usage:\n  " + want + " status [", "Examples:\n  " + want + " status\n", "  " + want + " status --watch\n"} {
			if !strings.Contains(out.String(), s) {
				t.Errorf("%s help status lacks %q:\n%s", want, s, out)
			}
		}
		out.Reset()
		if code := a.Run(t.Context(), []string{"completion", "bash"}); code != 0 {
			t.Fatalf("%s completion bash: exit %d: %s", want, code, errb)
		}
		if !strings.Contains(out.String(), "-F __start_"+want+" "+want+"\n") {
			t.Errorf("%s completion bash does not complete %s", want, want)
		}
		names[name] = nil
		for _, c := range a.newRoot().Commands() {
			names[name] = append(names[name], c.Name())
		}
	}
	if !reflect.DeepEqual(names[""], names["juju"]) || !reflect.DeepEqual(names["drover"], names["juju"]) {
		t.Errorf("commands differ: drover %v, juju %v", names["drover"], names["juju"])
	}
}

// TestCompletionRequest: the completion scripts call the hidden
// __complete command, which must not be refused as unknown.
func TestCompletionRequest(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"__complete", "st"}, "status\t"},
		{[]string{"__completeNoDesc", "status", "--for"}, "--format\n"},
		{[]string{"__complete", "completion", ""}, "bash\n"},
		// -m completes model names (none without a controller), not files.
		{[]string{"__complete", "status", "-m", ""}, ":4\n"},
	} {
		a, out, errb := testApp(t)
		if code := a.Run(t.Context(), tc.args); code != 0 || !strings.Contains(out.String(), tc.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want %q", tc.args, code, out, errb, tc.want)
		}
	}
}

// TestShellCompletes: the interactive shell's Tab completes command
// names, flags and (through the same functions as the scripts) nothing
// it cannot know without a controller.
func TestShellCompletes(t *testing.T) {
	a, _, _ := testApp(t)
	a.Run(t.Context(), []string{"version"}) // opens the client store
	for line, want := range map[string][]string{
		"who":               {"whoami "},
		"status --for":      {"status --format"},
		"ex":                {"exec ", "exit", "expose "},
		"completion b":      {"completion bash "},
		"drover status --w": {"drover status --watch"},
		"drover wait-for u": {"drover wait-for unit "},
	} {
		if got := a.complete(line); !reflect.DeepEqual(got, want) {
			t.Errorf("complete(%q) = %q, want %q", line, got, want)
		}
	}
}
