// Package controller owns the commands about controllers: bootstrap (and
// the local droverd processes it starts), controllers, show-controller,
// switch, enable-ha, destroy/kill-controller, whoami, and the controller
// side of hub trust (create-hub-token, remove-hub-trust).
package controller

import "github.com/droverhq/drover/cli/internal/modelcmd"

// Commands builds the controller commands on one invocation's environment.
type Commands struct{ *modelcmd.Env }
