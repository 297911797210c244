package state

import (
	"bytes"
	"errors"
	"testing"

	"github.com/droverhq/drover/api"
	"github.com/hashicorp/raft"
)

// TestApplyBatchMatchesOneByOne checks that a group-committed batch leaves
// exactly the store that applying its commands one by one at the same
// index leaves, on the all-succeed fast path and on the slow path a failing
// command forces, and that each command gets its own result.
func TestApplyBatchMatchesOneByOne(t *testing.T) {
	enc := func(typ MessageType, req any) []byte {
		b, err := Encode(typ, req)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	ok := [][]byte{
		enc(AddModelType, &AddModelRequest{UUID: "m2", Name: "two", Owner: "admin", Now: t0}),
		enc(SetModelConfigType, &SetModelConfigRequest{ModelUUID: "m2", Set: map[string]any{"a": "1", "b": 2}}),
		enc(SetModelConfigType, &SetModelConfigRequest{ModelUUID: "m2", Set: map[string]any{"a": "3"}, Unset: []string{"b"}}),
	}
	failing := append(append([][]byte{}, ok[:2]...),
		enc(AddModelType, &AddModelRequest{UUID: "m3", Name: "two", Owner: "admin", Now: t0}), // duplicate name
		ok[2])
	for name, cmds := range map[string][][]byte{"fast path": ok, "slow path": failing} {
		t.Run(name, func(t *testing.T) {
			batched, single := newHarness(t), newHarness(t)
			for _, h := range []*harness{batched, single} {
				h.seed()
			}
			const idx = 100
			res := batched.fsm.ApplyBatch(idx, cmds)
			for i, c := range cmds {
				want := single.fsm.Apply(&raft.Log{Index: idx, Type: raft.LogCommand, Data: c}).(ApplyResult)
				got := res[i].(ApplyResult)
				if (got.Err == nil) != (want.Err == nil) {
					t.Fatalf("command %d: batched err %v, single err %v", i, got.Err, want.Err)
				}
			}
			if name == "slow path" && !errors.Is(res[2].(ApplyResult).Err, api.ErrAlreadyExists) {
				t.Fatalf("failing command's result: %v", res[2])
			}
			if !bytes.Equal(snapshotBytes(t, batched.fsm.Store()), snapshotBytes(t, single.fsm.Store())) {
				t.Fatal("batched and one-by-one application left different stores")
			}
			m, _ := batched.snap().ModelByUUID("m2")
			if m == nil || m.Config["a"] != "3" || m.Config["b"] != nil {
				t.Fatalf("model m2 after the batch: %+v", m)
			}
		})
	}
}
