package cli

import (
	"fmt"

	"github.com/spf13/cobra"
)

// usageError marks a command line mistake (exit code 2).
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }

func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

func exactArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return usagef("%s: expected %s, got %d argument(s); usage: %s", cmd.Name(), what, len(args), cmd.UseLine())
		}
		return nil
	}
}

func rangeArgs(lo, hi int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) < lo || len(args) > hi {
			return usagef("%s: expected %s, got %d argument(s); usage: %s", cmd.Name(), what, len(args), cmd.UseLine())
		}
		return nil
	}
}

func minArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) < n {
			return usagef("%s: expected %s; usage: %s", cmd.Name(), what, cmd.UseLine())
		}
		return nil
	}
}
