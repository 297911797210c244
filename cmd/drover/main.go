// Command drover is the Drover client; see package cli.
package main

import (
	"context"
	"os"
	"path/filepath"

	"github.com/droverhq/drover/cli"
	"golang.org/x/term"
)

func main() {
	exe, _ := os.Executable() // only used to find droverd next to drover
	width := 0
	if w, _, err := term.GetSize(int(os.Stdout.Fd())); err == nil {
		width = w
	}
	app := &cli.App{
		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
		Getenv:        os.Getenv,
		Terminal:      term.IsTerminal(int(os.Stdout.Fd())),
		StdinTerminal: term.IsTerminal(int(os.Stdin.Fd())),
		Executable:    exe,
		Width:         width,
		Name:          filepath.Base(os.Args[0]), // "juju" through a juju symlink
	}
	os.Exit(app.Run(context.Background(), os.Args[1:]))
}
