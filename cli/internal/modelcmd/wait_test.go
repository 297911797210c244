package modelcmd

import (
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/api"
)

func TestEvaluateWait(t *testing.T) {
	unit := func(w, ag, agMsg string) api.UnitStatus {
		return api.UnitStatus{WorkloadStatus: api.StatusDetail{Current: w}, JujuStatus: api.StatusDetail{Current: ag, Message: agMsg}}
	}
	fs := &api.FullStatus{Applications: map[string]api.ApplicationStatus{
		"kv": {Units: map[string]api.UnitStatus{
			"kv/0": {WorkloadStatus: api.StatusDetail{Current: "active"}, JujuStatus: api.StatusDetail{Current: "idle"},
				Subordinates: map[string]api.UnitStatus{"logfwd/0": unit("unknown", "idle", "")}},
			"kv/1": unit("maintenance", "executing", "running install hook"),
		}},
		"logfwd": {SubordinateTo: []string{"kv"}},
	}}
	st := evaluate(fs, WaitSpec{Apps: []string{"kv", "logfwd"}})
	if st.total != 3 || st.settled != 2 || len(st.pending) != 2 || len(st.failed) != 0 {
		t.Fatalf("state %+v", st)
	}
	if !strings.HasPrefix(st.pending[0], "kv/1: workload maintenance") || st.pending[1] != "kv/1: no logfwd unit yet" {
		t.Fatalf("pending %q", st.pending)
	}

	fs.Applications["kv"].Units["kv/1"] = unit("maintenance", "error", `hook failed: "install"`)
	st = evaluate(fs, WaitSpec{Apps: []string{"kv"}, Scale: map[string]int{"kv": 3}, Units: []string{"kv/2"}})
	if len(st.failed) != 1 || st.failed[0].unit != "kv/1" || st.done() {
		t.Fatalf("state %+v", st)
	}
	err := waitFailed(st.failed)
	for _, want := range []string{`kv/1: error "hook failed: \"install\""`, "drover resolved kv/1", "--include kv/1"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("failure message lacks %q:\n%s", want, err)
		}
	}
	if want := []string{"kv/2: not in the model yet", "application kv: 2 of 3 units"}; strings.Join(st.pending, "|") != strings.Join(want, "|") {
		t.Fatalf("pending %q", st.pending)
	}
	msg := waitTimeout(time.Minute, st).Error()
	if !strings.Contains(msg, "timed out after 1m0s") || !strings.Contains(msg, "\n  kv/2: not in the model yet") {
		t.Fatalf("timeout message:\n%s", msg)
	}
}
