package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/peterh/liner"
	"github.com/spf13/cobra"
)

const historyFile = "shell_history"

// shell is the interactive mode: a prompt showing controller:model, line
// editing, history kept in the client store, and tab completion of command
// names and flags. Each line runs exactly like `drover LINE`.
func (a *App) shell(ctx context.Context) int {
	ln := liner.NewLiner()
	defer ln.Close()
	ln.SetCtrlCAborts(true)
	histPath := filepath.Join(a.env.Store.Dir, historyFile)
	if f, err := os.Open(histPath); err == nil {
		_, _ = ln.ReadHistory(f) // a damaged history only loses history
		f.Close()
	}
	ln.SetCompleter(a.complete)
	fmt.Fprintf(a.Stdout, "drover %s interactive shell: run any drover command; 'help' lists them, 'exit' or Ctrl-D leaves.\n", Version)
	code := 0
	for ctx.Err() == nil {
		line, err := ln.Prompt(a.prompt())
		if errors.Is(err, liner.ErrPromptAborted) {
			continue
		}
		if err != nil { // io.EOF: Ctrl-D
			if !errors.Is(err, io.EOF) {
				fmt.Fprintf(a.Stderr, "ERROR %v\n", err)
				code = 1
			}
			fmt.Fprintln(a.Stdout)
			break
		}
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		ln.AppendHistory(line)
		if line == "exit" || line == "quit" {
			break
		}
		args, err := splitWords(line)
		if err != nil {
			fmt.Fprintf(a.Stderr, "ERROR %v\n", err)
			continue
		}
		if len(args) > 0 && (args[0] == "drover" || args[0] == a.name()) {
			args = args[1:]
		}
		code = a.execute(ctx, args)
	}
	if err := a.saveHistory(ln, histPath); err != nil {
		fmt.Fprintf(a.Stderr, "WARNING cannot save the shell history: %v\n", err)
	}
	return code
}

func (a *App) saveHistory(ln *liner.State, path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := ln.WriteHistory(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// prompt is "controller:model> ", or "drover> " with nothing selected.
func (a *App) prompt() string {
	s, err := a.env.Store.Load()
	if err != nil || s.CurrentController == "" {
		return "drover> "
	}
	p := s.CurrentController
	if cm := s.Models[p]; cm != nil && cm.CurrentModel != "" {
		p += ":" + cm.CurrentModel
	}
	return p + "> "
}

// complete completes the shell's last word as the completion scripts do,
// through cobra's __complete: command names (and exit, quit) first, then
// flags, and the names of models, applications and units (complete.go).
func (a *App) complete(line string) []string {
	words, err := splitWords(line)
	if err != nil {
		return nil
	}
	partial := ""
	if len(words) > 0 && !strings.HasSuffix(line, " ") {
		partial = words[len(words)-1]
		words = words[:len(words)-1]
	}
	if len(words) > 0 && (words[0] == "drover" || words[0] == a.name()) {
		words = words[1:]
	}
	head := strings.TrimSuffix(line, partial)
	var out []string
	for _, c := range a.completions(append(words, partial)) {
		if len(words) == 0 || !strings.HasPrefix(c, "-") {
			c += " "
		}
		out = append(out, head+c)
	}
	if len(words) == 0 {
		for _, w := range []string{"exit", "quit"} {
			if strings.HasPrefix(w, partial) {
				out = append(out, head+w)
			}
		}
	}
	sort.Strings(out)
	return out
}

// completions runs cobra's __completeNoDesc on args (the last one the
// word to complete) and returns its candidates.
func (a *App) completions(args []string) []string {
	root := a.newRoot()
	var buf strings.Builder
	root.SetOut(&buf)
	root.SetErr(io.Discard)
	a.addFlagCompletions(root, args)
	root.SetArgs(append([]string{cobra.ShellCompNoDescRequestCmd}, args...))
	if err := root.Execute(); err != nil {
		return nil
	}
	var out []string
	for _, l := range strings.Split(buf.String(), "\n") {
		if l == "" || strings.HasPrefix(l, ":") {
			continue // ":N" is the directive, last
		}
		out = append(out, l)
	}
	return out
}

// splitWords splits a shell line into words, honouring single and double
// quotes and backslash escapes (no expansion).
func splitWords(line string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	var quote rune
	escaped := false
	for _, r := range line {
		switch {
		case escaped:
			cur.WriteRune(r)
			escaped = false
		case r == '\\' && quote != '\'':
			escaped, inWord = true, true
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 || escaped {
		return nil, fmt.Errorf("unterminated quote or escape in %q", line)
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

// script is the shell without a terminal: it runs the commands read from
// r, one per line, as 'drover LINE' would, skipping blank lines and '#'
// comments, until the end of r, "exit" or "quit". As sh does, it goes on
// past a failing command and returns the last command's exit code; a line
// that cannot be split into words is a usage error (exit code 2).
func (a *App) script(ctx context.Context, r io.Reader) int {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	code := 0
	for n := 1; ctx.Err() == nil && sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if line == "exit" || line == "quit" {
			break
		}
		args, err := splitWords(line)
		if err != nil {
			fmt.Fprintf(a.Stderr, "ERROR line %d: %v\n", n, err)
			code = 2
			continue
		}
		if len(args) > 0 && (args[0] == "drover" || args[0] == a.name()) {
			args = args[1:]
		}
		if len(args) == 0 {
			continue
		}
		code = a.execute(ctx, args)
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintf(a.Stderr, "ERROR reading commands: %v\n", err)
		return 1
	}
	if ctx.Err() != nil {
		return 1
	}
	return code
}
