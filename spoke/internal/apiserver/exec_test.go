package apiserver

import (
	"errors"
	"strings"
	"testing"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/spoke/internal/hubtrust"
)

// TestExecNeedsAdminAndACommand: juju-exec runs anything on the units, so
// the controller itself refuses it to a hub token that only writes (the
// hub may not have read a large body) and to a local user who is not a
// superuser, and checks its two parameters.
func TestExecNeedsAdminAndACommand(t *testing.T) {
	cmd := map[string]any{"command": "hostname"}
	for _, tc := range []struct {
		name   string
		c      caller
		params map[string]any
		code   api.Code
		phrase string
	}{
		{"hub admin", caller{Hub: true, Access: hubtrust.AccessAdmin}, cmd, "", ""},
		{"local superuser", caller{Access: hubtrust.AccessSuperuser}, map[string]any{"command": "ls", "timeout": "30s"}, "", ""},
		{"hub writer", caller{Hub: true, Access: hubtrust.AccessWrite}, cmd, api.CodeForbidden, "needs admin access"},
		{"hub reader", caller{Hub: true, Access: hubtrust.AccessRead}, cmd, api.CodeForbidden, "needs admin access"},
		{"local login user", caller{Access: "login"}, cmd, api.CodeForbidden, "needs admin access"},
		{"no command", caller{Access: hubtrust.AccessSuperuser}, map[string]any{}, api.CodeInvalid, "command is required"},
		{"blank command", caller{Access: hubtrust.AccessSuperuser}, map[string]any{"command": " "}, api.CodeInvalid, "non-empty string"},
		{"command not a string", caller{Access: hubtrust.AccessSuperuser}, map[string]any{"command": 3}, api.CodeInvalid, "non-empty string"},
		{"bad timeout", caller{Access: hubtrust.AccessSuperuser}, map[string]any{"command": "ls", "timeout": "soon"}, api.CodeInvalid, "positive duration"},
		{"negative timeout", caller{Access: hubtrust.AccessSuperuser}, map[string]any{"command": "ls", "timeout": "-1s"}, api.CodeInvalid, "positive duration"},
		{"unknown parameter", caller{Access: hubtrust.AccessSuperuser}, map[string]any{"command": "ls", "user": "root"}, api.CodeInvalid, `unknown parameter "user"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkExec(tc.c, tc.params)
			var e *api.Error
			switch {
			case tc.code == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.code != "" && (!errors.As(err, &e) || e.Code != tc.code || !strings.Contains(e.Message, tc.phrase)):
				t.Fatalf("got %v, want %s containing %q", err, tc.code, tc.phrase)
			}
		})
	}
}
