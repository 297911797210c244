// Package hubadmin owns the commands that administer a hub: the
// controllers registered with it, model ownership, grants, the audit log
// and the hub's signing keys.
package hubadmin

import "github.com/droverhq/drover/cli/internal/modelcmd"

// Commands builds the hubadmin commands on one invocation's environment.
type Commands struct{ *modelcmd.Env }
