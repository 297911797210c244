package tables

import (
	"bytes"
	"testing"
)

// TestModelConfigIDMatchesCompound checks that the hand-written primary
// index of model config builds the keys the reflective compound index
// (model, key) builds, so lookups and prefix scans behave the same.
func TestModelConfigIDMatchesCompound(t *testing.T) {
	ours, theirs := modelConfigID{}, compound(str("ModelUUID"), str("Key"))
	type prefixer interface {
		PrefixFromArgs(...any) ([]byte, error)
	}
	e := &ModelConfigEntry{ModelUUID: "m-1", Key: "update-status-hook-interval"}
	okA, a, errA := ours.FromObject(e)
	okB, b, errB := theirs.(interface {
		FromObject(any) (bool, []byte, error)
	}).FromObject(e)
	if okA != okB || !bytes.Equal(a, b) || errA != nil || errB != nil {
		t.Fatalf("FromObject: %v %q %v, compound %v %q %v", okA, a, errA, okB, b, errB)
	}
	for _, missing := range []*ModelConfigEntry{{ModelUUID: "m"}, {Key: "k"}} {
		if ok, _, err := ours.FromObject(missing); ok || err != nil {
			t.Errorf("FromObject(%+v) = %v, %v; want not ok", missing, ok, err)
		}
	}
	a, errA = ours.FromArgs("m-1", "k")
	b, errB = theirs.FromArgs("m-1", "k")
	if !bytes.Equal(a, b) || errA != nil || errB != nil {
		t.Fatalf("FromArgs: %q %v, compound %q %v", a, errA, b, errB)
	}
	for _, args := range [][]any{{"m-1", ""}, {"m-1", "up"}, {"m-"}} {
		a, errA = ours.PrefixFromArgs(args...)
		b, errB = theirs.(prefixer).PrefixFromArgs(args...)
		if !bytes.Equal(a, b) || errA != nil || errB != nil {
			t.Errorf("PrefixFromArgs%v: %q %v, compound %q %v", args, a, errA, b, errB)
		}
	}
	for _, args := range [][]any{{}, {"m"}, {"m", "k", "x"}, {1, "k"}, {"m", 2}} {
		if _, err := ours.FromArgs(args...); err == nil {
			t.Errorf("FromArgs%v: no error", args)
		}
	}
}
