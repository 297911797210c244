package cli

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/droverhq/drover/cli/internal/modelcmd/modelcmdtest"
)

// testApp is an App with captured output, a fixed clock and a store in a
// temporary directory.
func testApp(t *testing.T) (*App, *bytes.Buffer, *bytes.Buffer) {
	var out, errb bytes.Buffer
	dir := t.TempDir()
	a := &App{
		Stdin: bytes.NewReader(nil), Stdout: &out, Stderr: &errb,
		Getenv: func(k string) string {
			if k == "DROVER_DATA" {
				return dir
			}
			return ""
		},
		Now: func() time.Time { return time.Date(2026, 11, 21, 21, 33, 10, 0, time.UTC) },
	}
	return a, &out, &errb
}

func TestHelpGolden(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"help.golden", []string{"help"}},
		{"help-deploy.golden", []string{"help", "deploy"}},
		{"help-status.golden", []string{"help", "status"}},
		{"help-run.golden", []string{"help", "run"}},
		{"help-debug-log.golden", []string{"help", "debug-log"}},
		{"help-integrate.golden", []string{"integrate", "--help"}},
		{"help-create-hub-token.golden", []string{"help", "create-hub-token"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, out, errb := testApp(t)
			if code := a.Run(context.Background(), tc.args); code != 0 {
				t.Fatalf("exit %d: %s", code, errb)
			}
			modelcmdtest.Golden(t, tc.name, out.Bytes())
		})
	}
}

// TestEveryCommandHasHelp makes sure no command ships without a summary
// and an example.
func TestEveryCommandHasHelp(t *testing.T) {
	a, _, _ := testApp(t)
	for _, c := range a.newRoot().Commands() {
		if c.Name() == "help" {
			continue
		}
		if c.Short == "" || c.Example == "" {
			t.Errorf("command %q lacks a short description or an example", c.Name())
		}
	}
}

func TestExitCodes(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"no-such-command"}, 2, "ERROR unknown command \"no-such-command\""},
		{[]string{"status", "--bogus"}, 2, "ERROR unknown flag: --bogus"},
		{[]string{"scale", "kv"}, 2, "ERROR scale: expected an application name and a unit count"},
		{[]string{"status"}, 1, "ERROR no controllers registered; run 'drover bootstrap' to create one, or 'drover login https://HUB:PORT --ca FILE' to use a hub"},
		{[]string{"version"}, 0, ""},
		{[]string{"completion", "bash"}, 0, ""},
		{[]string{"completion", "zsh"}, 0, ""},
		{[]string{"completion", "fish"}, 0, ""},
	} {
		a, _, errb := testApp(t)
		if code := a.Run(context.Background(), tc.args); code != tc.code {
			t.Errorf("%v: exit %d, want %d (%s)", tc.args, code, tc.code, errb)
		}
		if !bytes.HasPrefix(errb.Bytes(), []byte(tc.want)) {
			t.Errorf("%v: stderr %q, want prefix %q", tc.args, errb, tc.want)
		}
	}
}
