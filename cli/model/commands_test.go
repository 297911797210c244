package model

import (
	"bytes"
	"net/http"
	"testing"

	"github.com/droverhq/drover/cli/internal/modelcmd"
	"github.com/droverhq/drover/cli/internal/modelcmd/modelcmdtest"
)

// testCommands is Commands on a test Env (modelcmdtest.NewEnv).
func testCommands(t *testing.T) (*Commands, *bytes.Buffer, *bytes.Buffer) {
	e, out, errb := modelcmdtest.NewEnv(t)
	return &Commands{Env: e}, out, errb
}

// atFakeModel is Commands and a connection to model uuid on a fake
// controller serving h (modelcmdtest.AtFakeModel).
func atFakeModel(t *testing.T, h http.Handler, uuid string) (*Commands, *bytes.Buffer, *bytes.Buffer, *modelcmd.ModelConn) {
	t.Helper()
	e, out, errb, mc := modelcmdtest.AtFakeModel(t, h, uuid)
	return &Commands{Env: e}, out, errb, mc
}
