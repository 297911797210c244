package modelcmd

import (
	"fmt"

	"github.com/spf13/cobra"
)

// UsageError marks a command line mistake (exit code 2).
type UsageError struct{ Err error }

// Error is the mistake, without the exit code.
func (e UsageError) Error() string { return e.Err.Error() }

// Unwrap is the mistake, for errors.Is and errors.As.
func (e UsageError) Unwrap() error { return e.Err }

// Usagef is a usage error with a formatted message.
func Usagef(format string, args ...any) error {
	return UsageError{Err: fmt.Errorf(format, args...)}
}

// ExactArgs, RangeArgs and MinArgs check a command's arguments (what
// names them in the message) and report a usage error.
func ExactArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return Usagef("%s: expected %s, got %d argument(s); usage: %s", cmd.Name(), what, len(args), cmd.UseLine())
		}
		return nil
	}
}

func RangeArgs(lo, hi int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) < lo || len(args) > hi {
			return Usagef("%s: expected %s, got %d argument(s); usage: %s", cmd.Name(), what, len(args), cmd.UseLine())
		}
		return nil
	}
}

func MinArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) < n {
			return Usagef("%s: expected %s; usage: %s", cmd.Name(), what, cmd.UseLine())
		}
		return nil
	}
}
