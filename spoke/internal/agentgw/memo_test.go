package agentgw

import "testing"

func TestBuildMemoKeepsRecentVersions(t *testing.T) {
	var b buildMemo
	computed := 0
	get := func(index uint64) int {
		t.Helper()
		v, err := memoized(&b, storeVersion{index: index},
			func(e *memoVersion) map[string]*modelPart { return e.models }, "m",
			func() (*modelPart, error) { computed++; return &modelPart{interval: 1}, nil })
		if err != nil || v == nil {
			t.Fatalf("index %d: %v, %v", index, v, err)
		}
		return computed
	}
	for i, c := range []struct {
		index uint64
		want  int // computations so far
	}{
		{10, 1}, {10, 1}, // second build of a version shares the first's
		{11, 2}, {12, 3}, {13, 4},
		{10, 4}, {11, 4}, {13, 4}, // older versions still kept
		{14, 5},          // evicts 10
		{10, 6}, {10, 7}, // too old now: computed, never kept
		{12, 7},
	} {
		if got := get(c.index); got != c.want {
			t.Fatalf("step %d (index %d): %d computations, want %d", i, c.index, got, c.want)
		}
	}
	var nilMemo *buildMemo
	if _, err := memoized(nilMemo, storeVersion{}, func(e *memoVersion) map[string]*modelPart { return e.models }, "m",
		func() (*modelPart, error) { return &modelPart{}, nil }); err != nil {
		t.Fatal(err)
	}
}
