package migrate

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/hub/internal/migration"
	"github.com/droverhq/drover/hub/internal/store"
)

// failedPrefix starts the recorded result of a failed try.
const failedPrefix = "failed: "

// abortError is a failure that aborts a migration before SUCCESS at once,
// without retrying: a controller's refusal, an agent's failure, agents
// that did not report in time, a user's request.
type abortError struct{ reason string }

func (e *abortError) Error() string { return e.reason }

func abortf(format string, args ...any) error {
	return &abortError{reason: fmt.Sprintf(format, args...)}
}

// refused reports whether a controller's answer is a refusal that asking
// again will not change.
func refused(err error) bool {
	switch api.CodeOf(err) {
	case api.CodeInvalid, api.CodeAlreadyExists, api.CodeBadRequest, api.CodeForbidden,
		api.CodeTooLarge, api.CodeNotFound, api.CodeConflict:
		return true
	}
	return false
}

// outcome is what a phase's work ends with: the next phase and the
// result to record.
type outcome struct {
	next    migration.Phase
	message string
}

// intents are the progress texts of each phase's step.
var intents = map[migration.Phase]string{
	migration.Precheck:    "performing source prechecks",
	migration.Quiesce:     "quiescing, waiting for agents to report back",
	migration.Export:      "exporting model",
	migration.Import:      "importing model into target controller",
	migration.Validation:  "validating: agents connecting to the target",
	migration.Success:     "activating the model on the target",
	migration.LogTransfer: "transferring logs",
	migration.Reap:        "removing the model from the source",
	migration.Aborting:    "aborting: removing the import from the target, releasing the source",
}

// step runs the current phase's step of m, retrying it, and moves m to
// the phase that follows. It returns once m's phase changed, or with the
// error that stopped it (ctx's end, a fault point, the store).
func (d *Driver) step(ctx context.Context, m store.Migration) error {
	phase := m.Phase
	if phase.Abortable() && m.AbortRequested {
		return d.advance(ctx, m, migration.Aborting, "aborted at the request of a user")
	}
	attempt, err := d.resumeAttempt(ctx, m)
	if err != nil {
		return err
	}
	backoff := d.cfg.Backoff
	for tries := 1; ; tries++ {
		m.Attempt = attempt
		if err := d.store.Migrations.Intend(ctx, m.ID, phase, attempt, intents[phase], d.cfg.Now()); err != nil {
			return err
		}
		if err := d.fault("before-call", phase); err != nil {
			return err
		}
		out, callErr := d.run(ctx, m)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err := d.fault("after-call", phase); err != nil {
			return err
		}
		if callErr == nil {
			if err := d.store.Migrations.Record(ctx, m.ID, phase, attempt, out.message, d.cfg.Now()); err != nil {
				return err
			}
			return d.advance(ctx, m, out.next, out.message)
		}
		if errors.Is(callErr, store.ErrPhaseMoved) {
			return callErr
		}
		failure := fmt.Sprintf("%s: %v", phase, callErr)
		d.cfg.Logger.Warn("migrate: a step failed", "migration", m.ID, "model", m.ModelName, "phase", phase,
			"attempt", attempt, "err", callErr)
		if err := d.store.Migrations.Record(ctx, m.ID, phase, attempt, failedPrefix+failure, d.cfg.Now()); err != nil {
			return err
		}
		var ab *abortError
		if phase.Abortable() && errors.As(callErr, &ab) {
			return d.advance(ctx, m, migration.Aborting, failure)
		}
		if tries >= d.cfg.Attempts {
			given := fmt.Sprintf("%s (gave up after %d attempts)", failure, tries)
			switch {
			case phase.Abortable():
				return d.advance(ctx, m, migration.Aborting, given)
			case phase == migration.Reap:
				return d.advance(ctx, m, migration.ReapFailed, given)
			case phase == migration.LogTransfer:
				return d.advance(ctx, m, migration.Reap, "logs not transferred: "+given)
			}
			// SUCCESS and ABORTING are retried until they succeed.
		}
		if err := sleep(ctx, backoff); err != nil {
			return err
		}
		backoff = min(2*backoff, d.cfg.MaxBackoff)
		if phase.Abortable() {
			now, err := d.store.Migrations.ByID(ctx, m.ID)
			if err != nil {
				return err
			}
			if now.AbortRequested || now.Phase != phase {
				return nil // drive reads it again and acts
			}
		}
		attempt++
	}
}

// advance moves m to phase to, between the fault points around the write.
func (d *Driver) advance(ctx context.Context, m store.Migration, to migration.Phase, message string) error {
	if err := d.fault("before-persist", m.Phase); err != nil {
		return err
	}
	if _, err := d.store.Migrations.Advance(ctx, m.ID, m.Phase, to, message, d.cfg.Now()); err != nil {
		return err
	}
	d.cfg.Logger.Info("migrate: phase", "migration", m.ID, "model", m.ModelName, "from", m.Phase, "to", to, "message", message)
	return d.fault("after-persist", m.Phase)
}

// resumeAttempt is the attempt m's step runs at: the recorded one when its
// result was not recorded as a failure (a restarted driver repeats the
// step with the same key), the next one after a failure, and after the
// last attempt the phase ever had when the phase starts (a REAP retried
// after REAPFAILED does not reuse keys).
func (d *Driver) resumeAttempt(ctx context.Context, m store.Migration) (int, error) {
	evs, err := d.store.Migrations.Events(ctx, m.ID)
	if err != nil {
		return 0, err
	}
	if m.Attempt == 0 {
		highest := 0
		for _, e := range evs {
			if e.Phase == m.Phase && e.Kind == store.EventIntent {
				highest = max(highest, e.Attempt)
			}
		}
		return highest + 1, nil
	}
	for i := len(evs) - 1; i >= 0; i-- {
		e := evs[i]
		if e.Phase != m.Phase || e.Attempt != m.Attempt {
			continue
		}
		if e.Kind == store.EventResult && strings.HasPrefix(e.Detail, failedPrefix) {
			return m.Attempt + 1, nil
		}
		break
	}
	return m.Attempt, nil
}

// run does m's phase's work once.
func (d *Driver) run(ctx context.Context, m store.Migration) (outcome, error) {
	src, err := d.cfg.Controllers.Client(ctx, m.SourceController)
	if err != nil {
		return outcome{}, fmt.Errorf("the source controller: %w", err)
	}
	defer src.Close()
	dst, err := d.cfg.Controllers.Client(ctx, m.TargetController)
	if err != nil {
		return outcome{}, fmt.Errorf("the target controller: %w", err)
	}
	defer dst.Close()
	c := call{d: d, m: m, src: src, dst: dst, step: api.MigrationStep{MigrationID: m.ID, Key: m.StepKey()}}
	switch m.Phase {
	case migration.Precheck:
		return c.precheck(ctx)
	case migration.Quiesce:
		return c.quiesce(ctx)
	case migration.Export:
		return c.export(ctx)
	case migration.Import:
		return c.importModel(ctx)
	case migration.Validation:
		return c.validate(ctx)
	case migration.Success:
		return c.succeed(ctx)
	case migration.LogTransfer:
		return c.transferLogs(ctx)
	case migration.Reap:
		return c.reap(ctx)
	case migration.Aborting:
		return c.abort(ctx)
	}
	return outcome{}, fmt.Errorf("migration %s: no step for phase %s", m.ID, m.Phase)
}
