package migrate

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/hub/internal/store"
)

// agents is the summary of a model's agents' reports the driver stores
// with a migration (store.Migration.Minions): api.MigrationAgents for the
// phase, and how many agents must report (the source's machines).
type agents struct {
	Phase    string `json:"phase,omitempty"`
	Expected int    `json:"expected"`
	// Tags are the agents that must report, as the source's precheck
	// named them.
	Tags []string `json:"tags,omitempty"`
	api.MigrationAgents
}

func (a agents) json() json.RawMessage {
	data, _ := json.Marshal(a)
	return data
}

// expectedAgents is how many agents must report in m, and which, as its
// precheck recorded.
func expectedAgents(m store.Migration) (int, []string) {
	var a agents
	_ = json.Unmarshal(m.Minions, &a)
	return a.Expected, a.Tags
}

// silent are the tags that have no report for migration id's phase.
func silent(tags []string, reports map[string]api.MinionReport, id, phase string) []string {
	var out []string
	for _, tag := range tags {
		if r, ok := reports[tag]; !ok || r.MigrationID != id || r.Phase != phase {
			out = append(out, tag)
		}
	}
	return out
}

// summarize counts the reports for migration id's phase.
func summarize(reports map[string]api.MinionReport, id, phase string, expected int) (agents, []string) {
	a := agents{Phase: phase, Expected: expected}
	var others []string // agents whose latest report is of another phase
	for tag, r := range reports {
		switch {
		case r.MigrationID != id || r.Phase != phase:
			others = append(others, tag)
		case r.Success:
			a.OK++
		default:
			a.Failed++
			if a.Reasons == nil {
				a.Reasons = map[string]string{}
			}
			a.Reasons[tag] = r.Message
		}
	}
	a.Pending = max(expected-a.OK-a.Failed, 0)
	slices.Sort(others)
	return a, others
}

// waitAgents waits until every expected agent of m reported phase,
// storing their summary as it changes and progress as "<what> (ok/n)".
// With strict, an agent's failure, the MinionWait timeout and a user's
// abort request end the wait with an abortError naming the agents;
// without, the wait ends at the timeout with the summary as it is.
func (d *Driver) waitAgents(ctx context.Context, m store.Migration, src Client, phase, what string, strict bool) (agents, error) {
	expected, tags := expectedAgents(m)
	var reports map[string]api.MinionReport
	evs, err := d.store.Migrations.Events(ctx, m.ID)
	if err != nil {
		return agents{}, err
	}
	start := d.cfg.Now()
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Kind == store.EventPhase && evs[i].Phase == m.Phase {
			start = evs[i].At
			break
		}
	}
	deadline := start.Add(d.cfg.MinionWait)
	var last agents
	var others []string
	stored := ""
	for {
		model, err := src.MigrationModel(ctx, m.ModelUUID, m.ID)
		switch {
		case err != nil && (refused(err) || api.CodeOf(err) == api.CodeRedirect):
			// The source will not say: waiting longer changes nothing.
			if !strict {
				return last, nil
			}
			return last, abortf("reading the agents' reports from the source: %v", err)
		case err != nil:
			d.cfg.Logger.Info("migrate: reading agents' reports", "migration", m.ID, "err", err)
		case model.Migration == nil || model.Migration.ID != m.ID:
			if !strict {
				return last, nil
			}
			return agents{}, fmt.Errorf("the source model is not migrating in migration %s", m.ID)
		default:
			reports = model.Migration.Minions
			last, others = summarize(reports, m.ID, phase, expected)
			last.Tags = tags
			data := string(last.json())
			if data != stored {
				msg := fmt.Sprintf("%s (%d/%d)", what, last.OK, expected)
				if err := d.store.Migrations.Progress(ctx, m.ID, m.Phase, msg, last.json(), d.cfg.Now()); err != nil {
					return agents{}, err
				}
				stored = data
			}
			if strict && last.Failed > 0 {
				return last, abortf("agents failed %s: %s", phase, reasons(last.Reasons))
			}
			if last.OK >= expected {
				return last, nil
			}
		}
		if !d.cfg.Now().Before(deadline) {
			if !strict {
				return last, nil
			}
			msg := fmt.Sprintf("%d of %d agents did not report %s within %s", expected-last.OK-last.Failed, expected, phase, d.cfg.MinionWait)
			quiet := silent(tags, reports, m.ID, phase)
			if len(tags) == 0 {
				quiet = others
			}
			if len(quiet) > 0 {
				msg += " (not reported: " + strings.Join(quiet, ", ") + ")"
			}
			return last, abortf("%s", msg)
		}
		if strict {
			now, err := d.store.Migrations.ByID(ctx, m.ID)
			if err != nil {
				return agents{}, err
			}
			if now.AbortRequested {
				return last, abortf("aborted at the request of a user")
			}
		}
		if err := sleep(ctx, min(d.cfg.ReportPoll, max(deadline.Sub(d.cfg.Now()), time.Millisecond))); err != nil {
			return agents{}, err
		}
	}
}

// reasons lists agents and their failures, sorted.
func reasons(r map[string]string) string {
	tags := make([]string, 0, len(r))
	for tag := range r {
		tags = append(tags, tag)
	}
	slices.Sort(tags)
	for i, tag := range tags {
		if r[tag] != "" {
			tags[i] = tag + " (" + r[tag] + ")"
		}
	}
	return strings.Join(tags, ", ")
}
