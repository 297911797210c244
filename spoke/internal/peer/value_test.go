package peer

import (
	"encoding/json"
	"testing"

	"github.com/droverhq/drover/api"
)

// TestAssignValue: a command's value lands in out whether this node
// applied it (a Go value, pointer or not) or another node did (its JSON).
func TestAssignValue(t *testing.T) {
	want := api.Lease{Application: "kv", Holder: "kv/0"}
	raw, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]any{
		"pointer":    &want,
		"value":      want,
		"forwarded":  json.RawMessage(raw),
		"other type": map[string]any{"application": "kv", "holder": "kv/0"},
	} {
		var got api.Lease
		if err := AssignValue(v, &got); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got.Application != want.Application || got.Holder != want.Holder {
			t.Errorf("%s: got %+v, want %+v", name, got, want)
		}
	}
}
