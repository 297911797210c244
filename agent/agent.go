package agent

import (
	"context"
	"errors"
	"io"
	"log/slog"

	"github.com/droverhq/drover/agent/internal/hooktools"
	"github.com/droverhq/drover/agent/internal/machine"
)

// IsTool reports whether argv0 names a hook tool (argv[0] dispatch).
func IsTool(argv0 string) bool { return hooktools.IsTool(argv0) }

// ToolMain runs a hook tool and returns its exit code.
func ToolMain(argv0 string, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) int {
	return hooktools.Main(argv0, args, getenv, stdin, stdout, stderr)
}

// RunMachine runs the machine agent configured by the agent.conf at
// configPath until ctx ends, or until a hook had it reboot the machine
// (juju-reboot): then it returns nil once the machine is powered off, and
// the provider starts the agent again. agentBinary is the drover-agent
// executable the hook tool symlinks point at.
func RunMachine(ctx context.Context, configPath, agentBinary string, log *slog.Logger) error {
	a, err := machine.New(machine.Config{ConfigPath: configPath, AgentBinary: agentBinary, Logger: log})
	if err != nil {
		return err
	}
	if err := a.Run(ctx); !errors.Is(err, machine.ErrRebooted) {
		return err
	}
	log.Info("machine powered off for a reboot; the provider starts it again")
	return nil
}
