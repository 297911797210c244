package cli

import (
	"fmt"
	"slices"

	"github.com/droverhq/drover/api"
)

// squashRepeats shortens a status history for reading, as Juju's
// show-status-log does: where the same status (or the same pair, such as
// a hook's executing then idle) comes again and again in a row for one
// kind, the first occurrence stays and one line says how often it came
// again, at the time of the last ("last status repeated 9 times"). Kinds
// are squashed apart, then merged back in time order.
func squashRepeats(hist []api.StatusHistoryEntry) []api.StatusHistoryEntry {
	byKind := map[string][]api.StatusHistoryEntry{}
	var kinds []string
	for _, h := range hist {
		if _, ok := byKind[h.Kind]; !ok {
			kinds = append(kinds, h.Kind)
		}
		byKind[h.Kind] = append(byKind[h.Kind], h)
	}
	var out []api.StatusHistoryEntry
	for _, k := range kinds {
		out = append(out, squashKind(byKind[k])...)
	}
	slices.SortStableFunc(out, func(x, y api.StatusHistoryEntry) int { return x.Status.Since.Compare(y.Status.Since) })
	return out
}

// squashKind squashes one kind's history (oldest first): blocks of one
// entry, then of two, repeated back to back.
func squashKind(h []api.StatusHistoryEntry) []api.StatusHistoryEntry {
	same := func(a, b api.StatusHistoryEntry) bool {
		return a.Status.Status == b.Status.Status && a.Status.Message == b.Status.Message
	}
	var out []api.StatusHistoryEntry
	for i := 0; i < len(h); {
		squashed := false
		for _, p := range []int{1, 2} {
			reps := 1 // how many times h[i:i+p] comes in a row
			for j := i + p; j+p <= len(h); j += p {
				match := true
				for k := range p {
					match = match && same(h[i+k], h[j+k])
				}
				if !match {
					break
				}
				reps++
			}
			if reps < 2 {
				continue
			}
			out = append(out, h[i:i+p]...)
			last := h[i+reps*p-1]
			what := "last status"
			if p > 1 {
				what = fmt.Sprintf("last %d statuses", p)
			}
			last.Status.Message = fmt.Sprintf("%s repeated %d times", what, reps-1)
			out = append(out, last)
			i += reps * p
			squashed = true
			break
		}
		if !squashed {
			out = append(out, h[i])
			i++
		}
	}
	return out
}
