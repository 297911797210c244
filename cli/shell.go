package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/peterh/liner"
	"github.com/spf13/pflag"
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
		if len(args) > 0 && args[0] == "drover" {
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

// complete offers command names for the first word and the command's
// flags for later words starting with "-".
func (a *App) complete(line string) []string {
	words := strings.Fields(line)
	trailingSpace := strings.HasSuffix(line, " ")
	root := a.newRoot()
	var out []string
	if len(words) == 0 || (len(words) == 1 && !trailingSpace) {
		prefix := ""
		if len(words) == 1 {
			prefix = words[0]
		}
		for _, c := range root.Commands() {
			if !c.Hidden && strings.HasPrefix(c.Name(), prefix) {
				out = append(out, c.Name()+" ")
			}
		}
		for _, w := range []string{"exit", "quit"} {
			if strings.HasPrefix(w, prefix) {
				out = append(out, w)
			}
		}
		sort.Strings(out)
		return out
	}
	cmd, _, err := root.Find(words[:1])
	if err != nil || trailingSpace {
		return nil
	}
	last := words[len(words)-1]
	if !strings.HasPrefix(last, "-") {
		return nil
	}
	head := strings.TrimSuffix(line, last)
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if name := "--" + f.Name; strings.HasPrefix(name, last) {
			out = append(out, head+name)
		}
	})
	sort.Strings(out)
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
