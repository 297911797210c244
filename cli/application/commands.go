// Package application owns the commands that deploy and change
// applications: deploy (charms and bundles), refresh, config, scaling,
// expose, integrate, constraints, trust, and show-application/show-unit.
package application

import "github.com/droverhq/drover/cli/internal/modelcmd"

// Commands builds the application commands on one invocation's environment.
type Commands struct{ *modelcmd.Env }
