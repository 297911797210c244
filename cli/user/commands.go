// Package user owns identity at a hub: login and logout (and the device
// flow), users, and groups with their members.
package user

import "github.com/droverhq/drover/cli/internal/modelcmd"

// Commands builds the user commands on one invocation's environment.
type Commands struct{ *modelcmd.Env }
