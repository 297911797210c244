// Package status owns the commands that show what a model is doing:
// status (once or --watch), show-status-log and debug-log.
package status

import "github.com/droverhq/drover/cli/internal/modelcmd"

// Commands builds the status commands on one invocation's environment.
type Commands struct{ *modelcmd.Env }
