package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// helpGolden is what `droverd --help` prints.
const helpGolden = "testdata/help.golden"

// TestRootHelp: `droverd --help` is drover's help style (cobra's), lists
// the commands and says that dev runs a whole federation; the golden file
// is rewritten with -update.
func TestRootHelp(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"--help"}, &stdout, &stderr); code != 0 {
		t.Fatalf("droverd --help: exit %d\n%s", code, stderr.String())
	}
	if *update {
		if err := os.WriteFile(helpGolden, stdout.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(helpGolden)
	if err != nil {
		t.Fatal(err)
	}
	if got := stdout.String(); got != string(want) {
		t.Errorf("droverd --help:\n%s\nwant (%s):\n%s", got, helpGolden, want)
	}
	if !strings.Contains(stdout.String(), "dev         Run a whole federation on this machine") {
		t.Errorf("droverd --help does not say that dev runs a whole federation")
	}
}

// TestCommandHelpStyle: a command's --help is drover's style on stdout
// (Usage, Examples, Flags with --long spellings), not Go flag's list on
// stderr; a mistake in the flags is a usage error (exit 2) that names the
// command's help; an unknown command is one too.
func TestCommandHelpStyle(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"dev", "--help"}, &stdout, &stderr); code != 0 || stderr.Len() != 0 {
		t.Fatalf("droverd dev --help: exit %d, stderr %q", code, stderr.String())
	}
	for _, want := range []string{"Usage:\n  droverd dev [--state-dir DIR] [--reset]", "Examples:\n", "Flags:\n", "      --state-dir string", "      --reset"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("droverd dev --help lacks %q:\n%s", want, stdout.String())
		}
	}
	stdout.Reset()
	if code := run([]string{"dev", "--no-such-flag"}, &stdout, &stderr); code != 2 ||
		!strings.Contains(stderr.String(), "ERROR unknown flag: --no-such-flag (see 'droverd dev --help')") {
		t.Errorf("droverd dev --no-such-flag: exit %d, stderr %q", code, stderr.String())
	}
	stderr.Reset()
	if code := run([]string{"bogus"}, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), `unknown command "bogus"`) {
		t.Errorf("droverd bogus: exit %d, stderr %q", code, stderr.String())
	}
	stderr.Reset()
	if code := run([]string{"teardown", "extra"}, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), `unexpected arguments ["extra"]`) {
		t.Errorf("droverd teardown extra: exit %d, stderr %q", code, stderr.String())
	}
}
