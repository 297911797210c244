package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

var update = flag.Bool("update", false, "rewrite "+referenceFile+" from the flag definitions")

// referenceFile is the flag reference, relative to this package.
const referenceFile = "../../docs/reference/droverd-flags.md"

// devStateDirDoc stands for --state-dir's default in the reference: it
// depends on the user running droverd dev.
const devStateDirDoc = "~/.local/share/drover/dev (as root: /var/lib/drover/dev)"

// commands are droverd's subcommands with flags, in the reference's order.
func commands() []*cobra.Command {
	return []*cobra.Command{newHubCmd(io.Discard), newSpokeCmd(io.Discard), newDevCmd(io.Discard, io.Discard, devStateDirDoc),
		newTeardownCmd(io.Discard)}
}

// isZeroDefault mirrors --help, which leaves zero defaults out.
func isZeroDefault(v string) bool {
	return v == "" || v == "0" || v == "0s" || v == "false" || v == "[]"
}

// renderReference writes the markdown reference of every command's flags.
func renderReference() []byte {
	var b bytes.Buffer
	b.WriteString(`# droverd flags

Every flag of every ` + "`droverd`" + ` command, with its default and meaning. This page is
generated from the flag definitions in ` + "`cmd/droverd`" + `, and a test fails when the two
differ; after changing a flag, regenerate it with:

    go test ./cmd/droverd -run TestFlagReference -update

` + "`droverd COMMAND --help`" + ` prints the same list.
`)
	for _, cmd := range commands() {
		fmt.Fprintf(&b, "\n## droverd %s\n\n| Flag | Default | Description |\n| --- | --- | --- |\n", cmd.Name())
		cmd.Flags().VisitAll(func(f *pflag.Flag) {
			def := ""
			if !isZeroDefault(f.DefValue) {
				def = "`" + f.DefValue + "`"
			}
			name, usage := pflag.UnquoteUsage(f)
			arg := ""
			if name != "" {
				arg = " " + name
			}
			fmt.Fprintf(&b, "| `--%s%s` | %s | %s |\n", f.Name, arg, def, strings.ReplaceAll(usage, "|", `\|`))
		})
	}
	return b.Bytes()
}

// TestFlagReference: the flag reference is what the flag definitions say.
func TestFlagReference(t *testing.T) {
	want := renderReference()
	if *update {
		if err := os.WriteFile(referenceFile, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(referenceFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s is not what the flag definitions say; regenerate it with\n"+
			"  go test ./cmd/droverd -run TestFlagReference -update", referenceFile)
	}
}

// TestHubHelpMatchesReference: the flags `droverd hub --help` lists are
// the rows of the reference's hub table.
func TestHubHelpMatchesReference(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"hub", "--help"}, &stdout, &stderr); code != 0 {
		t.Fatalf("droverd hub --help: exit %d\n%s", code, stderr.String())
	}
	_, flags, ok := strings.Cut(stdout.String(), "\nFlags:\n")
	if !ok {
		t.Fatalf("droverd hub --help has no Flags section:\n%s", stdout.String())
	}
	var help []string
	for _, m := range regexp.MustCompile(`(?m)^\s+(?:-[a-z], )?--([a-z0-9-]+)`).FindAllStringSubmatch(flags, -1) {
		if m[1] != "help" {
			help = append(help, m[1])
		}
	}
	doc, err := os.ReadFile(referenceFile)
	if err != nil {
		t.Fatal(err)
	}
	section := string(doc)
	start := strings.Index(section, "\n## droverd hub\n")
	if start < 0 {
		t.Fatalf("%s has no droverd hub section", referenceFile)
	}
	section = section[start+1:]
	if end := strings.Index(section[1:], "\n## "); end >= 0 {
		section = section[:end+1]
	}
	var documented []string
	for _, m := range regexp.MustCompile("(?m)^\\| `--([a-z0-9-]+)").FindAllStringSubmatch(section, -1) {
		documented = append(documented, m[1])
	}
	if len(help) == 0 || !slices.Equal(help, documented) {
		t.Errorf("droverd hub --help lists %v,\nthe reference documents %v", help, documented)
	}
}
