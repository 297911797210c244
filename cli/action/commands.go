// Package action owns the commands that run work on units and machines
// and follow it: run, exec, show-task, cancel-task, actions and resolved.
package action

import "github.com/droverhq/drover/cli/internal/modelcmd"

// Commands builds the action commands on one invocation's environment.
type Commands struct{ *modelcmd.Env }
