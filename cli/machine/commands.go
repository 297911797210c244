// Package machine owns the machine commands: machines, show-machine,
// add-machine and remove-machine.
package machine

import "github.com/droverhq/drover/cli/internal/modelcmd"

// Commands builds the machine commands on one invocation's environment.
type Commands struct{ *modelcmd.Env }
