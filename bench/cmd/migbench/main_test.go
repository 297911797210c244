package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/api"
)

func TestMeasure(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	ev := func(kind, phase string, s float64) api.MigrationEvent {
		return api.MigrationEvent{Kind: kind, Phase: phase, At: at(s)}
	}
	events := []api.MigrationEvent{
		ev("phase", "PRECHECK", 0.1), ev("intent", "PRECHECK", 0.2), ev("result", "PRECHECK", 0.3),
		ev("phase", "QUIESCE", 0.5), ev("phase", "EXPORT", 2.5), ev("phase", "IMPORT", 2.6),
		ev("phase", "VALIDATION", 3), ev("phase", "SUCCESS", 5), ev("phase", "LOGTRANSFER", 7),
		ev("phase", "REAP", 7.25), ev("phase", "DONE", 7.5),
	}
	r, err := measure(events, t0, at(6), map[string]time.Time{"QUIESCE": at(1), "VALIDATION": at(4.5), "SUCCESS": at(5.5)})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]time.Duration{"PRECHECK": 400 * time.Millisecond, "QUIESCE": 2 * time.Second,
		"EXPORT": 100 * time.Millisecond, "IMPORT": 400 * time.Millisecond, "VALIDATION": 2 * time.Second,
		"SUCCESS": 2 * time.Second, "LOGTRANSFER": 250 * time.Millisecond, "REAP": 250 * time.Millisecond}
	for p, d := range want {
		if got := r.phase[p]; got != d {
			t.Errorf("phase %s: %v, want %v", p, got, d)
		}
	}
	if r.endToEnd != 7500*time.Millisecond || r.pause != 5500*time.Millisecond || r.moved != time.Second {
		t.Errorf("end to end %v (want 7.5s), pause %v (want 5.5s), agents' move %v (want 1s)", r.endToEnd, r.pause, r.moved)
	}
	wantReports := map[string]time.Duration{"QUIESCE": 500 * time.Millisecond, "VALIDATION": 1500 * time.Millisecond, "SUCCESS": 500 * time.Millisecond}
	for p, d := range wantReports {
		if got := r.reports[p]; got != d {
			t.Errorf("last report of %s: %v after the phase began, want %v", p, got, d)
		}
	}
	if _, err := measure(events[:len(events)-1], t0, at(6), nil); err == nil {
		t.Error("a migration without DONE measured")
	}
	if _, err := measure(events, t0, time.Time{}, nil); err == nil {
		t.Error("a migration whose agents never reached the target measured")
	}
}

func TestPrintTableVerdicts(t *testing.T) {
	var b bytes.Buffer
	printTable(&b, 100, []result{{endToEnd: 6 * time.Second, pause: 4 * time.Second}, {endToEnd: 11 * time.Second, pause: 12 * time.Second}})
	out := b.String()
	if !strings.Contains(out, "worst 11.00s  target ≤ 10s: NOT MET") || !strings.Contains(out, "worst 12.00s  target ≤ end to end: NOT MET") {
		t.Errorf("table:\n%s", out)
	}
	b.Reset()
	printTable(&b, 1000, []result{{endToEnd: 30 * time.Second, pause: 20 * time.Second}})
	if out := b.String(); !strings.Contains(out, "target ≤ 1m0s: met") || !strings.Contains(out, "target ≤ end to end: met") {
		t.Errorf("table:\n%s", out)
	}
}

// TestSmoke migrates a model of 5 units once, with everything real but the
// agents (PostgreSQL from the system binaries, OpenFGA, the hub, two
// controllers).
func TestSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("starts PostgreSQL, the hub and two controllers")
	}
	if err := run(t.Context(), options{n: 5, reps: 1, conc: 8, timeout: 2 * time.Minute}); err != nil {
		t.Fatal(err)
	}
}
