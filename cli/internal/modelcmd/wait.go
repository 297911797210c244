package modelcmd

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/droverhq/drover/api"
)

// WaitOpt is the --wait[=DURATION] flag of deploy, add-unit and scale.
type WaitOpt struct{ value string }

// Add adds --wait to cmd.
func (o *WaitOpt) Add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&o.value, "wait", "", "wait until the units are settled (idle, and active, blocked, waiting or unknown); =DURATION bounds the wait")
	cmd.Flags().Lookup("wait").NoOptDefVal = WaitForever
}

// Parse returns whether to wait, and for how long (0: until settled).
func (o *WaitOpt) Parse() (bool, time.Duration, error) {
	switch o.value {
	case "":
		return false, 0, nil
	case WaitForever:
		return true, 0, nil
	}
	d, err := time.ParseDuration(o.value)
	if err != nil || d <= 0 {
		return false, 0, Usagef("--wait %q: want a duration such as 30s or 5m", o.value)
	}
	return true, d, nil
}

// WaitSpec says which units a wait is for.
type WaitSpec struct {
	Apps  []string       // every unit of these, subordinates included
	Units []string       // these must exist
	Scale map[string]int // these applications must have exactly so many units
}

// unitFailure is a unit in error.
type unitFailure struct{ unit, status, message string }

// waitState is how far a wait has come in one status.
type waitState struct {
	total, settled int
	pending        []string // why each unsettled thing is not settled yet
	failed         []unitFailure
}

func (s waitState) done() bool { return len(s.pending) == 0 && len(s.failed) == 0 }

// settledWorkload are the workload statuses a unit may rest in: Juju's
// "active", "blocked" and "waiting", and "unknown" for charms that never
// set a status.
var settledWorkload = map[string]bool{"active": true, "blocked": true, "waiting": true, "unknown": true}

// evaluate checks every unit the spec names against fs.
func evaluate(fs *api.FullStatus, spec WaitSpec) waitState {
	var st waitState
	units := map[string]api.UnitStatus{} // every unit in the model
	for _, an := range SortedKeys(fs.Applications) {
		for un, u := range fs.Applications[an].Units {
			units[un] = u
			for sn, s := range u.Subordinates {
				units[sn] = s
			}
		}
	}
	seen := map[string]bool{}
	check := func(name string, u api.UnitStatus) {
		if seen[name] {
			return
		}
		seen[name] = true
		w, ag := u.WorkloadStatus, u.JujuStatus
		// A dying unit is on its way out, not one to settle: it is
		// waited for (below) without counting among the units.
		if ag.Life == "" {
			st.total++
		}
		switch {
		case ag.Current == "error" || w.Current == "error":
			msg := ag.Message
			if ag.Current != "error" {
				msg = w.Message
			}
			st.failed = append(st.failed, unitFailure{unit: name, status: "error", message: msg})
		case ag.Current == "idle" && ag.Life == "" && settledWorkload[w.Current]:
			st.settled++
		default:
			why := fmt.Sprintf("%s: workload %s, agent %s", name, statusText(w.Current, w.Message), statusText(ag.Current, ag.Message))
			if ag.Life != "" {
				why += " (" + ag.Life + ")"
			}
			st.pending = append(st.pending, why)
		}
	}
	for _, app := range spec.Apps {
		as, ok := fs.Applications[app]
		if !ok {
			st.pending = append(st.pending, fmt.Sprintf("application %s: not in the model yet", app))
			continue
		}
		for _, un := range SortedUnitNames(as.Units) {
			check(un, as.Units[un])
		}
		// A subordinate's units live under its principals' units; each
		// principal unit gets one once the integration is made.
		for _, pn := range as.SubordinateTo {
			for _, un := range SortedUnitNames(fs.Applications[pn].Units) {
				subs := fs.Applications[pn].Units[un].Subordinates
				found := false
				for _, sn := range SortedUnitNames(subs) {
					if strings.HasPrefix(sn, app+"/") {
						check(sn, subs[sn])
						found = true
					}
				}
				if !found {
					st.pending = append(st.pending, fmt.Sprintf("%s: no %s unit yet", un, app))
				}
			}
		}
	}
	for _, un := range spec.Units {
		if u, ok := units[un]; ok {
			check(un, u)
		} else {
			st.total++
			st.pending = append(st.pending, un+": not in the model yet")
		}
	}
	for _, app := range SortedKeys(spec.Scale) {
		want, n, alive := spec.Scale[app], len(fs.Applications[app].Units), 0
		for _, u := range fs.Applications[app].Units {
			if u.JujuStatus.Life == "" {
				alive++
			}
		}
		// The units still to come count among the units to settle, so
		// progress reads against the scale asked for.
		if alive < want {
			st.total += want - alive
		}
		switch {
		case n < want:
			st.pending = append(st.pending, fmt.Sprintf("application %s: %d of %d units", app, n, want))
		case n > want:
			st.pending = append(st.pending, fmt.Sprintf("application %s: %d unit(s) still to remove (scaling to %d)", app, n-want, want))
		}
	}
	return st
}

func statusText(s, msg string) string {
	if msg == "" {
		return s
	}
	return fmt.Sprintf("%s %q", s, msg)
}

// WaitSettled follows the model's watch until every unit of spec is
// settled, a unit fails, or limit (0: none) passes.
func (a *Env) WaitSettled(ctx context.Context, mc *ModelConn, spec WaitSpec, limit time.Duration) error {
	wctx, cancel := ctx, context.CancelFunc(func() {})
	if limit > 0 {
		wctx, cancel = context.WithTimeout(ctx, limit)
	}
	defer cancel()
	src, err := a.Follow(wctx, mc)
	if err != nil {
		return err
	}
	defer src.Close()
	p := a.NewProgress("Waiting for units to settle...")
	var last waitState
	for {
		f, err := src.Next(wctx)
		var fs *api.FullStatus
		if err == nil {
			fs = f.Status
			if f.Type != api.FrameReset || fs == nil {
				fs, err = mc.Client.Model(mc.UUID).Status(wctx, api.ReadOptions{Index: f.Index})
			}
		}
		if err != nil {
			p.Done("")
			if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
				return waitTimeout(limit, last)
			}
			return err
		}
		last = evaluate(fs, spec)
		switch {
		case len(last.failed) > 0:
			p.Done("")
			return waitFailed(last.failed)
		case last.done():
			p.Done(fmt.Sprintf("%d/%d units settled", last.settled, last.total))
			return nil
		}
		p.Update("%d/%d units settled; waiting for %s...", last.settled, last.total, last.pending[0])
	}
}

func waitTimeout(limit time.Duration, st waitState) error {
	var b strings.Builder
	fmt.Fprintf(&b, "timed out after %s with %d/%d units settled; still pending:", limit, st.settled, st.total)
	for _, p := range st.pending {
		b.WriteString("\n  " + p)
	}
	b.WriteString("\n'drover status' shows the model; 'drover debug-log' what the agents are doing")
	return errors.New(b.String())
}

func waitFailed(failed []unitFailure) error {
	var b strings.Builder
	names := make([]string, 0, len(failed))
	for _, f := range failed {
		names = append(names, f.unit)
	}
	slices.Sort(names)
	fmt.Fprintf(&b, "%d unit(s) in error:", len(failed))
	for _, f := range failed {
		fmt.Fprintf(&b, "\n  %s: %s", f.unit, statusText(f.status, f.message))
	}
	fmt.Fprintf(&b, "\nsee what happened with 'drover debug-log --replay --no-tail --include %s'; once fixed, "+
		"retry the hook with 'drover resolved %s' (or skip it with --no-retry)", names[0], names[0])
	return errors.New(b.String())
}

// WaitForever is the --wait value when given without a duration.
const WaitForever = "forever"
