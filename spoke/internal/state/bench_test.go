package state

import (
	"fmt"
	"testing"
)

// BenchmarkApplySetModelConfig measures the FSM's cost of the commit
// benchmark's write (one key of model config), which bounds commits/s:
// raft applies commands one at a time.
func BenchmarkApplySetModelConfig(b *testing.B) {
	h := newHarness(b)
	h.seed()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		h.must(SetModelConfigType, &SetModelConfigRequest{ModelUUID: testModel, Set: map[string]any{fmt.Sprint(i % 256): "v"}})
	}
}
