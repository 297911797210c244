package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/droverhq/drover/api"
)

// phases are the hub's phases of a migration that succeeds, in order.
var phases = []string{"PRECHECK", "QUIESCE", "EXPORT", "IMPORT", "VALIDATION", "SUCCESS", "LOGTRANSFER", "REAP"}

// result is one migration's figures.
type result struct {
	phase    map[string]time.Duration // time in each phase, from its phase event to the next
	endToEnd time.Duration            // the POST to the DONE event
	pause    time.Duration            // QUIESCE's start to the last agent's first state on the target
	moved    time.Duration            // SUCCESS's start to the same
	// reports is, for each phase the agents report (QUIESCE, VALIDATION,
	// SUCCESS), the time from the phase's start until the source had
	// answered the last agent's report: the rest of the phase is the
	// driver's.
	reports map[string]time.Duration
}

// minionPhases are the phases the agents report.
var minionPhases = []string{"QUIESCE", "VALIDATION", "SUCCESS"}

// measure computes a migration's figures from its events (oldest first),
// the time it was requested, the time the last agent held its first state
// from the target, and when the last agent's report of each phase was
// answered.
func measure(events []api.MigrationEvent, posted, lastOnTarget time.Time, lastReport map[string]time.Time) (result, error) {
	r := result{phase: map[string]time.Duration{}, reports: map[string]time.Duration{}}
	began := map[string]time.Time{}
	var starts []api.MigrationEvent
	for _, e := range events {
		if e.Kind == "phase" {
			starts = append(starts, e)
		}
	}
	var quiesce, success, done time.Time
	for i, e := range starts {
		began[e.Phase] = e.At
		switch e.Phase {
		case "QUIESCE":
			quiesce = e.At
		case "SUCCESS":
			success = e.At
		case "DONE":
			done = e.At
		}
		if i+1 < len(starts) {
			r.phase[e.Phase] += starts[i+1].At.Sub(e.At)
		}
	}
	switch {
	case done.IsZero():
		return r, fmt.Errorf("no DONE among the events (%s)", phaseList(starts))
	case quiesce.IsZero() || success.IsZero():
		return r, fmt.Errorf("no QUIESCE or SUCCESS among the events (%s)", phaseList(starts))
	case lastOnTarget.IsZero():
		return r, fmt.Errorf("no agent reached the target")
	}
	r.endToEnd = done.Sub(posted)
	r.pause = lastOnTarget.Sub(quiesce)
	r.moved = lastOnTarget.Sub(success)
	for _, p := range minionPhases {
		if t, ok := lastReport[p]; ok {
			r.reports[p] = t.Sub(began[p])
		}
	}
	return r, nil
}

func phaseList(evs []api.MigrationEvent) string {
	var s []string
	for _, e := range evs {
		s = append(s, e.Phase)
	}
	return strings.Join(s, " ")
}

// target is the end-to-end target for n units: 10 s up to 100 units, 60 s
// up to 1,000; none above.
func target(n int) (time.Duration, bool) {
	switch {
	case n <= 100:
		return 10 * time.Second, true
	case n <= 1000:
		return 60 * time.Second, true
	}
	return 0, false
}

// printTable writes one row per migration: seconds per phase, end to end,
// the pause window and the agents' move, then the verdicts.
func printTable(w io.Writer, n int, rs []result) {
	fmt.Fprintf(w, "\nmigbench: model of %d units migrated east → west through the hub, %d time(s); seconds\n", n, len(rs))
	fmt.Fprintf(w, "%-4s", "rep")
	for _, p := range phases {
		fmt.Fprintf(w, " %11s", p)
	}
	fmt.Fprintf(w, " %11s %11s %11s\n", "end-to-end", "pause", "agents-move")
	var e2e, pause []time.Duration
	for i, r := range rs {
		fmt.Fprintf(w, "%-4d", i+1)
		for _, p := range phases {
			fmt.Fprintf(w, " %11.2f", r.phase[p].Seconds())
		}
		fmt.Fprintf(w, " %11.2f %11.2f %11.2f\n", r.endToEnd.Seconds(), r.pause.Seconds(), r.moved.Seconds())
		e2e, pause = append(e2e, r.endToEnd), append(pause, r.pause)
	}
	fmt.Fprintf(w, "agents' last report answered, after the phase began; seconds\n%-4s", "rep")
	for _, p := range minionPhases {
		fmt.Fprintf(w, " %11s", p)
	}
	fmt.Fprintln(w)
	for i, r := range rs {
		fmt.Fprintf(w, "%-4d", i+1)
		for _, p := range minionPhases {
			fmt.Fprintf(w, " %11.2f", r.reports[p].Seconds())
		}
		fmt.Fprintln(w)
	}
	worst := slices.Max(e2e)
	if t, ok := target(n); ok {
		fmt.Fprintf(w, "end to end: worst %.2fs  target ≤ %v: %s\n", worst.Seconds(), t, verdict(worst <= t))
	}
	pauseOK := true
	for i := range rs {
		pauseOK = pauseOK && pause[i] <= e2e[i]
	}
	fmt.Fprintf(w, "pause window: worst %.2fs  target ≤ end to end: %s\n", slices.Max(pause).Seconds(), verdict(pauseOK))
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT MET"
}
