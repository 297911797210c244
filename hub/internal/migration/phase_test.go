package migration

import (
	"errors"
	"testing"
)

func TestEdgeTable(t *testing.T) {
	for _, c := range []struct {
		from, to Phase
		ok       bool
	}{
		{Precheck, Quiesce, true},
		{Quiesce, Export, true},
		{Export, Import, true},
		{Import, Validation, true},
		{Validation, Success, true},
		{Success, LogTransfer, true},
		{LogTransfer, Reap, true},
		{Reap, Done, true},
		{Reap, ReapFailed, true},
		{ReapFailed, Reap, true},
		{Aborting, Aborted, true},
		{Validation, Aborting, true},
		{Precheck, Aborting, true},

		{Success, Aborting, false}, // the point of no return
		{LogTransfer, Aborting, false},
		{Precheck, Export, false}, // no phase is skipped
		{Import, Success, false},
		{Aborted, Precheck, false}, // final
		{Done, Reap, false},
		{Aborting, Quiesce, false},
		{Phase("BOGUS"), Done, false},
	} {
		err := Check(c.from, c.to)
		if (err == nil) != c.ok {
			t.Errorf("Check(%s, %s) = %v, want ok=%v", c.from, c.to, err, c.ok)
		}
		if err != nil && !errors.Is(err, ErrEdge) {
			t.Errorf("Check(%s, %s) = %v, not ErrEdge", c.from, c.to, err)
		}
	}
}

// TestWalk walks every path of the table from PRECHECK and checks the
// machine's promises on each: every path ends in a final phase or in
// REAPFAILED, no path aborts once the model is migrated, and every path
// that reaches SUCCESS ends migrated.
func TestWalk(t *testing.T) {
	paths := 0
	var walk func(p Phase, path []Phase, migrated bool)
	walk = func(p Phase, path []Phase, migrated bool) {
		path = append(path, p)
		if migrated && !p.Migrated() {
			t.Fatalf("path %v leaves the migrated phases at %s", path, p)
		}
		if p == Aborting && migrated {
			t.Fatalf("path %v aborts after SUCCESS", path)
		}
		next := p.Next()
		if len(next) == 0 || (p == ReapFailed && contains(path[:len(path)-1], ReapFailed)) {
			paths++
			if !p.Final() && p != ReapFailed {
				t.Fatalf("path %v stops in a phase that is not final: %s", path, p)
			}
			return
		}
		for _, n := range next {
			walk(n, path, migrated || n == Success)
		}
	}
	walk(Precheck, nil, false)
	if paths < 7 {
		t.Fatalf("walked %d paths, want at least one abort per phase before SUCCESS and both reap outcomes", paths)
	}
	for _, p := range Phases() {
		if p == Precheck {
			continue
		}
		if !reached(p) {
			t.Errorf("no edge reaches %s", p)
		}
	}
}

func reached(p Phase) bool {
	for _, next := range edges {
		if contains(next, p) {
			return true
		}
	}
	return false
}

func contains(ps []Phase, p Phase) bool {
	for _, q := range ps {
		if q == p {
			return true
		}
	}
	return false
}

func TestPhaseProperties(t *testing.T) {
	for _, p := range Phases() {
		if _, err := Parse(string(p)); err != nil {
			t.Errorf("Parse(%s): %v", p, err)
		}
		if p.Abortable() == p.Migrated() && p != Aborting && p != Aborted {
			t.Errorf("%s: abortable=%v migrated=%v: exactly one should hold", p, p.Abortable(), p.Migrated())
		}
	}
	if _, err := Parse("precheck"); err == nil {
		t.Error("Parse accepted a lower-case phase")
	}
	for p, want := range map[Phase]bool{Precheck: true, Validation: true, Success: true, Reap: true, ReapFailed: false, Done: false, Aborted: false} {
		if p.Active() != want {
			t.Errorf("%s.Active() = %v, want %v", p, p.Active(), want)
		}
	}
}
