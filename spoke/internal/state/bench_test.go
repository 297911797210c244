package state

import (
	"fmt"
	"strings"
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

// BenchmarkApplyBatchModelConfig is the FSM side of commitbench at c=256:
// group-committed entries of 64 one-key config writes, keys from a
// 10,000-key space hashed over 64 models, applied as every node applies
// them (decode, one transaction, events). Reported per command.
func BenchmarkApplyBatchModelConfig(b *testing.B) {
	const models, keyspace, batch = 64, 10000, 64
	h := newHarness(b)
	for m := range models {
		h.must(AddModelType, &AddModelRequest{UUID: fmt.Sprintf("m%d", m), Name: fmt.Sprintf("m%d", m), Owner: "admin", Now: t0})
	}
	value := strings.Repeat("v", 64)
	cmds := make([][][]byte, keyspace/batch+1)
	k := 0
	for i := range cmds {
		for range batch {
			key := fmt.Sprintf("bench/%08d", k%keyspace)
			buf, err := Encode(SetModelConfigType, &SetModelConfigRequest{ModelUUID: fmt.Sprintf("m%d", k%models), Set: map[string]any{key: value}})
			if err != nil {
				b.Fatal(err)
			}
			cmds[i] = append(cmds[i], buf)
			k++
		}
	}
	for _, c := range cmds { // every key exists, as in a long run
		h.index++
		h.fsm.ApplyBatch(h.index, c)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += batch {
		h.index++
		res := h.fsm.ApplyBatch(h.index, cmds[(i/batch)%len(cmds)])
		if r := res[0].(ApplyResult); r.Err != nil {
			b.Fatal(r.Err)
		}
	}
}
