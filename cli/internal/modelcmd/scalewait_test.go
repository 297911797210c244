package modelcmd

import (
	"strings"
	"testing"

	"github.com/droverhq/drover/api"
)

// TestScaleWaitCounts: scale --wait counts against the scale asked for:
// units still to come count as unsettled, and dying units, waited for
// until they are gone, are not counted among the units.
func TestScaleWaitCounts(t *testing.T) {
	settled := api.UnitStatus{WorkloadStatus: api.StatusDetail{Current: "active"}, JujuStatus: api.StatusDetail{Current: "idle"}}
	dying := api.UnitStatus{WorkloadStatus: api.StatusDetail{Current: "maintenance"}, JujuStatus: api.StatusDetail{Current: "executing", Life: "dying"}}
	up := &api.FullStatus{Applications: map[string]api.ApplicationStatus{"kv": {Units: map[string]api.UnitStatus{"kv/0": settled}}}}
	st := evaluate(up, WaitSpec{Apps: []string{"kv"}, Scale: map[string]int{"kv": 3}})
	if st.settled != 1 || st.total != 3 || st.done() {
		t.Errorf("scaling up 1 to 3: %d/%d settled, done %v; want 1/3, not done", st.settled, st.total, st.done())
	}
	down := &api.FullStatus{Applications: map[string]api.ApplicationStatus{"kv": {Units: map[string]api.UnitStatus{
		"kv/0": settled, "kv/1": dying, "kv/2": dying}}}}
	st = evaluate(down, WaitSpec{Apps: []string{"kv"}, Scale: map[string]int{"kv": 1}})
	if st.settled != 1 || st.total != 1 || st.done() || !strings.Contains(strings.Join(st.pending, "|"), "2 unit(s) still to remove (scaling to 1)") {
		t.Errorf("scaling down 3 to 1: %d/%d settled, pending %q; want 1/1 and the dying units pending", st.settled, st.total, st.pending)
	}
	delete(down.Applications["kv"].Units, "kv/1")
	delete(down.Applications["kv"].Units, "kv/2")
	if st = evaluate(down, WaitSpec{Apps: []string{"kv"}, Scale: map[string]int{"kv": 1}}); !st.done() || st.total != 1 {
		t.Errorf("scaled down: %+v, want done with 1 unit", st)
	}
}
