package machine

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"time"

	"github.com/droverhq/drover/internal/proctree"
)

// ErrRebooted is what Run returns once it powered the machine off for a
// reboot juju-reboot asked for: the process should exit, and the provider
// starts it again as the machine's next boot.
var ErrRebooted = errors.New("machine powered off for a reboot")

// bootMarker is the boot marker a provider that runs machines as process
// trees keeps in the agent's data directory (spoke/provider/local).
func (a *Agent) bootMarker() string { return filepath.Join(a.dataDir, "boot-id") }

// canReboot reports whether this agent can reboot its machine: a local
// machine, whose provider starts it again. Other machines answer
// juju-reboot with an error.
func (a *Agent) canReboot() bool {
	_, err := os.Stat(a.bootMarker())
	return err == nil
}

// requestReboot is the uniters' Reboot: the agent stops every uniter and,
// once they have stopped, powers the machine off (Run).
func (a *Agent) requestReboot(context.Context) error {
	a.rebooting.Store(true)
	a.stop()
	return nil
}

// powerOff ends the machine's boot: the marker goes (the provider's next
// start is a new boot) and every process of the machine but this agent
// ends, workloads included, as a reboot would end them.
func (a *Agent) powerOff() error {
	a.log.Info("rebooting: powering the machine off")
	if err := os.Remove(a.bootMarker()); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if left := proctree.KillUnder(a.dataDir, 10*time.Second); left > 0 {
		a.log.Warn("processes of the machine outlived the power-off", "left", left)
	}
	return ErrRebooted
}

// rebootFunc is the uniters' Reboot, or nil where juju-reboot is
// unsupported.
func (a *Agent) rebootFunc() func(context.Context) error {
	if !a.canReboot() {
		return nil
	}
	return a.requestReboot
}
