package modelcmd

import (
	"bufio"
	"errors"
	"fmt"
	"strings"
)

// Confirm asks on a terminal; elsewhere it refuses, so scripts must say -y.
func (a *Env) Confirm(what string) error {
	if !a.StdinTerminal {
		return Usagef("%s\nrefusing without confirmation: pass -y (--no-prompt) to proceed", what)
	}
	fmt.Fprintf(a.Stderr, "%s\nContinue [y/N]? ", what)
	line, _ := bufio.NewReader(a.Stdin).ReadString('\n') // EOF means no
	if ans := strings.ToLower(strings.TrimSpace(line)); ans != "y" && ans != "yes" {
		return errors.New("cancelled")
	}
	return nil
}
