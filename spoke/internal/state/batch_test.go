package state

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"testing"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/spoke/internal/state/tables"
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

// TestBatchedConfigWritesSeeEachOther checks config writes of one batch
// against applying them one at a time: a write reads the rows it replaces
// from the store before the batch plus the batch's own writes (configRow),
// so a key set, reset, unset and set again in one batch, or whose model is
// removed and added again, must end with the same rows and CreateIndex.
func TestBatchedConfigWritesSeeEachOther(t *testing.T) {
	enc := func(typ MessageType, req any) []byte {
		b, err := Encode(typ, req)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	set := func(model string, kv map[string]any, unset ...string) []byte {
		return enc(SetModelConfigType, &SetModelConfigRequest{ModelUUID: model, Set: kv, Unset: unset})
	}
	before := [][]byte{
		enc(AddModelType, &AddModelRequest{UUID: "m2", Name: "two", Owner: "admin", Now: t0, Config: map[string]any{"a": "0", "gone": "x"}}),
		enc(AddModelType, &AddModelRequest{UUID: "m3", Name: "three", Owner: "admin", Now: t0}),
		set("m3", map[string]any{"a": "3", "b": "3"}),
	}
	batch := [][]byte{
		set("m2", map[string]any{"a": "1", "new": "n"}),            // a keeps its CreateIndex
		set("m2", map[string]any{"a": "2", "new": "n2"}),           // and again; new keeps this batch's
		set("m2", nil, "gone"),                                     // stored before, deleted
		set("m2", map[string]any{"gone": "back"}),                  // re-created in the batch
		set("m2", nil, "new"),                                      // written in the batch, deleted
		enc(RemoveModelType, &RemoveModelRequest{ModelUUID: "m3"}), // every stored row of m3 gone
		enc(AddModelType, &AddModelRequest{UUID: "m3", Name: "three", Owner: "admin", Now: t0}),
		set("m3", map[string]any{"a": "new"}), // a new row, not the removed one
	}
	batched, single := newHarness(t), newHarness(t)
	for _, h := range []*harness{batched, single} {
		h.seed()
		for _, c := range before {
			h.index++
			if r := h.fsm.Apply(&raft.Log{Index: h.index, Type: raft.LogCommand, Data: c}).(ApplyResult); r.Err != nil {
				t.Fatal(r.Err)
			}
		}
	}
	const idx = 100
	for i, r := range batched.fsm.ApplyBatch(idx, batch) {
		if err := r.(ApplyResult).Err; err != nil {
			t.Fatalf("batched command %d: %v", i, err)
		}
	}
	for i, c := range batch {
		if r := single.fsm.Apply(&raft.Log{Index: idx, Type: raft.LogCommand, Data: c}).(ApplyResult); r.Err != nil {
			t.Fatalf("command %d: %v", i, r.Err)
		}
	}
	if !bytes.Equal(snapshotBytes(t, batched.fsm.Store()), snapshotBytes(t, single.fsm.Store())) {
		t.Fatal("batched and one-by-one application left different stores")
	}
	rows, err := list[tables.ModelConfigEntry](&batched.snap().reader, tables.ModelConfig, "id_prefix", "m")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, e := range rows {
		got[e.ModelUUID+"/"+e.Key] = fmt.Sprintf("%v@%d-%d", e.Value, e.CreateIndex, e.ModifyIndex)
	}
	cfgIdx := batched.index - 2 // AddModel m2 applied its config at this index
	want := map[string]string{
		"m2/a":    fmt.Sprintf("2@%d-100", cfgIdx),
		"m2/gone": "back@100-100",
		"m3/a":    "new@100-100",
	}
	if !maps.Equal(got, want) {
		t.Fatalf("config rows after the batch:\n got %v\nwant %v", got, want)
	}
}
