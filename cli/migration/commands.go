// Package migration owns the commands that move models between the
// controllers of a hub: migrate (start, abort, retry a failed reap),
// migrations (list) and drain-controller (migrate every model off one
// controller).
//
// The hub drives every migration; these commands only ask it to start or
// abort one, and follow it by polling GET /v1/migrations/{id}. Stopping
// a command (Ctrl-C, --timeout) stops the following, never the
// migration.
package migration

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/cli/internal/modelcmd"
	"github.com/droverhq/drover/internal/safetext"
)

// Commands builds the migration commands on one invocation's environment.
type Commands struct {
	*modelcmd.Env
	// Poll is how often a followed migration is read again (0: every
	// second).
	Poll time.Duration
}

func (a *Commands) poll() time.Duration {
	if a.Poll > 0 {
		return a.Poll
	}
	return time.Second
}

// dialHub opens ctl (empty: the current controller), which must be a hub.
func (a *Commands) dialHub(ctl string) (*modelcmd.Conn, error) {
	c, err := a.Dial(ctl)
	if err != nil {
		return nil, err
	}
	if !c.Details.Hub {
		c.Client.Close()
		return nil, fmt.Errorf("controller %q is not a hub: models migrate between the controllers of a hub; log in to one with 'drover login HUB'", c.Name)
	}
	return c, nil
}

// Outcome errors: what a followed migration ended in, when not DONE.

// AbortedError is a migration that ended ABORTED: the model stays on its
// source controller.
type AbortedError struct{ M *api.Migration }

func (e *AbortedError) Error() string {
	m := e.M
	why := cmp.Or(m.Failure, m.Message, "no reason given")
	msg := fmt.Sprintf("migration %s of model %q to controller %q aborted: %s; the model stays on controller %q",
		m.ID, m.ModelName, m.TargetController, why, m.SourceController)
	if r := agentReasons(m.Agents); r != "" {
		msg += "\n" + r
	}
	return msg
}

// ReapFailedError is a migration that ended REAPFAILED: the model runs on
// its target controller, and its copy on the source was not removed.
type ReapFailedError struct{ M *api.Migration }

func (e *ReapFailedError) Error() string {
	m := e.M
	return fmt.Sprintf("migration %s is REAPFAILED: model %q migrated and runs on controller %q, but its copy on controller %q could not be removed (%s); retry with 'drover migrate --retry-reap %s'",
		m.ID, m.ModelName, m.TargetController, m.SourceController, cmp.Or(m.Failure, m.Message, "no reason given"), m.ID)
}

// DoneError is a migration asked to abort that reached DONE instead: it
// had passed SUCCESS, after which a migration only goes forward.
type DoneError struct{ M *api.Migration }

func (e *DoneError) Error() string {
	return fmt.Sprintf("migration %s was not aborted: it had passed SUCCESS and is DONE; model %q is on controller %q",
		e.M.ID, e.M.ModelName, e.M.TargetController)
}

// outcome is the error a final migration means for a caller that wanted
// it to end in want (DONE or ABORTED), nil when it did.
func outcome(m *api.Migration, want string) error {
	switch {
	case m.Phase == want:
		return nil
	case m.Phase == "ABORTED":
		return &AbortedError{M: m}
	case m.Phase == "REAPFAILED":
		return &ReapFailedError{M: m}
	case m.Phase == "DONE":
		return &DoneError{M: m}
	}
	return fmt.Errorf("migration %s ended in unknown phase %q", m.ID, m.Phase)
}

// errStoppedWaiting wraps the end of a wait that the user or --timeout
// cut short: the migration goes on.
var errStoppedWaiting = errors.New("stopped waiting")

// follow reads migration id every poll until it is final, calling show
// with each state that differs from the last one shown (phase, message,
// agents). A hub that cannot answer for a moment is waited out. It
// returns the final state, or the last one read with ctx's error.
func (a *Commands) follow(ctx context.Context, c *api.Client, id string, show func(*api.Migration)) (*api.Migration, error) {
	var last *api.Migration
	t := time.NewTicker(a.poll())
	defer t.Stop()
	for {
		m, err := c.Migration(ctx, id)
		switch {
		case err == nil:
			if last == nil || progressKey(m) != progressKey(last) {
				show(m)
			}
			last = m
			if m.Final() {
				return m, nil
			}
		case ctx.Err() != nil:
			return last, ctx.Err()
		case api.CodeOf(err) != api.CodeUnavailable:
			return last, err
		}
		select {
		case <-ctx.Done():
			return last, ctx.Err()
		case <-t.C:
		}
	}
}

// progressKey is what a progress line shows of m.
func progressKey(m *api.Migration) string {
	return fmt.Sprintf("%s\x00%s\x00%d/%d/%d", m.Phase, m.Message, m.Agents.OK, m.Agents.Failed, m.Agents.Pending)
}

// progressLine is one line of a followed migration: its phase, the
// hub's message and the agents' reports.
func progressLine(m *api.Migration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-11s", m.Phase)
	if m.Message != "" {
		b.WriteString(" " + m.Message)
	}
	if ag := m.Agents; ag.OK+ag.Failed+ag.Pending > 0 {
		fmt.Fprintf(&b, " (agents: %s)", agentCounts(ag))
	}
	// The hub's words, shown so that they cannot drive the terminal.
	return safetext.Terminal(strings.TrimRight(b.String(), " "))
}

func agentCounts(ag api.MigrationAgents) string {
	return fmt.Sprintf("%d ok, %d failed, %d pending", ag.OK, ag.Failed, ag.Pending)
}

// agentReasons lists the agents that reported a failure, with why.
func agentReasons(ag api.MigrationAgents) string {
	if len(ag.Reasons) == 0 {
		return ""
	}
	var b strings.Builder
	for i, tag := range modelcmd.SortedKeys(ag.Reasons) {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "  %s: %s", tag, ag.Reasons[tag])
	}
	return b.String()
}
