package status

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/api"
)

// TestSquashRepeats: show-status-log shows a status set again and again,
// or a pair of them repeated, once, then how often it came again, as
// Juju's does; the kinds are squashed apart; nothing else is lost.
func TestSquashRepeats(t *testing.T) {
	t0 := time.Date(2026, 11, 22, 20, 0, 0, 0, time.UTC)
	n := 0
	e := func(kind, status, msg string) api.StatusHistoryEntry {
		n++
		return api.StatusHistoryEntry{Kind: kind, Seq: uint64(n), Status: api.Status{Status: status, Message: msg, Since: t0.Add(time.Duration(n) * time.Minute)}}
	}
	var hist []api.StatusHistoryEntry
	hist = append(hist, e("workload", "maintenance", "installing"), e("workload", "active", "serving (0 clients)"))
	for range 4 {
		hist = append(hist, e("workload", "active", "serving (1 clients)"),
			e("juju-unit", "executing", "running update-status hook"), e("juju-unit", "idle", ""))
	}
	hist = append(hist, e("workload", "blocked", "no database"))
	got := squashRepeats(hist)
	var lines []string
	for _, h := range got {
		lines = append(lines, fmt.Sprintf("%02d %s %s %s", h.Status.Since.Minute(), h.Kind, h.Status.Status, h.Status.Message))
	}
	want := []string{
		"01 workload maintenance installing",
		"02 workload active serving (0 clients)",
		"03 workload active serving (1 clients)",
		"04 juju-unit executing running update-status hook",
		"05 juju-unit idle ",
		"12 workload active last status repeated 3 times",
		"14 juju-unit idle last 2 statuses repeated 3 times",
		"15 workload blocked no database",
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("squashed:\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	if len(squashRepeats(hist[:2])) != 2 {
		t.Error("a history without repeats changed")
	}
}
