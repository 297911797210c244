package action

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/droverhq/drover/api"
)

// TestExecPrintsOutputAsWritten: one unit's output that came back in
// base64 (it is not UTF-8) is printed as the command wrote it; the
// structured formats keep Juju's encoding.
func TestExecPrintsOutputAsWritten(t *testing.T) {
	task := api.Task{ID: "1", Receiver: "kv/0", Status: api.TaskCompleted, Results: map[string]any{"return-code": 0,
		"stdout": base64.StdEncoding.EncodeToString([]byte("a\xffb\n")), "stdout-encoding": "base64", "stderr": "warn\n"}}
	a, out, errb := testCommands(t)
	if err := a.printExecResults([]api.Task{task}, "plain", true); err != nil || out.String() != "a\xffb\n" || errb.String() != "warn\n" {
		t.Errorf("plain: %q / %q (%v)", out, errb, err)
	}
	out.Reset()
	if err := a.printExecResults([]api.Task{task}, "json", true); err != nil || !strings.Contains(out.String(), `"stdout-encoding":"base64"`) {
		t.Errorf("json: %s (%v)", out, err)
	}
}
