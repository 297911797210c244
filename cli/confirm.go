package cli

import (
	"bufio"
	"errors"
	"fmt"
	"strings"
)

// confirm asks on a terminal; elsewhere it refuses, so scripts must say -y.
func (a *App) confirm(what string) error {
	if !a.StdinTerminal {
		return usagef("%s\nrefusing without confirmation: pass -y (--no-prompt) to proceed", what)
	}
	fmt.Fprintf(a.Stderr, "%s\nContinue [y/N]? ", what)
	line, _ := bufio.NewReader(a.Stdin).ReadString('\n') // EOF means no
	if ans := strings.ToLower(strings.TrimSpace(line)); ans != "y" && ans != "yes" {
		return errors.New("cancelled")
	}
	return nil
}
