// Package model owns the commands about models: add-model, models,
// show-model, destroy-model, model-config, clouds and regions.
package model

import "github.com/droverhq/drover/cli/internal/modelcmd"

// Commands builds the model commands on one invocation's environment.
type Commands struct{ *modelcmd.Env }
