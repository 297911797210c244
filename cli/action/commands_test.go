package action

import (
	"bytes"
	"testing"

	"github.com/droverhq/drover/cli/internal/modelcmd/modelcmdtest"
)

// testCommands is Commands on a test Env (modelcmdtest.NewEnv).
func testCommands(t *testing.T) (*Commands, *bytes.Buffer, *bytes.Buffer) {
	e, out, errb := modelcmdtest.NewEnv(t)
	return &Commands{Env: e}, out, errb
}
