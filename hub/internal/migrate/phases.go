package migrate

import (
	"context"
	"errors"
	"fmt"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/hub/internal/migration"
	"github.com/droverhq/drover/hub/internal/store"
)

// call is one try of a phase's step: the migration, its step key and the
// two controllers' clients.
type call struct {
	d        *Driver
	m        store.Migration
	src, dst Client
	step     api.MigrationStep
}

// classify makes a controller's refusal abort (before SUCCESS) at once.
func classify(what string, err error) error {
	if err == nil {
		return nil
	}
	if refused(err) {
		return &abortError{reason: fmt.Sprintf("%s: %v", what, err)}
	}
	return fmt.Errorf("%s: %w", what, err)
}

func (c call) precheck(ctx context.Context) (outcome, error) {
	model := c.m.ModelUUID
	res, err := c.src.MigrationPrecheck(ctx, model, c.step, api.MigrationPrecheckRequest{Role: api.MigrationSource})
	if err != nil {
		return outcome{}, classify("the source's precheck", err)
	}
	c.d.setMessage(ctx, c.m, "performing target prechecks")
	if _, err := c.dst.MigrationPrecheck(ctx, model, c.step, api.MigrationPrecheckRequest{Role: api.MigrationTarget, Source: res}); err != nil {
		return outcome{}, classify("the target's precheck", err)
	}
	if err := c.d.store.Migrations.SetMinions(ctx, c.m.ID, agents{Expected: res.Machines, Tags: res.Agents,
		MigrationAgents: api.MigrationAgents{Pending: res.Machines}}.json(), c.d.cfg.Now()); err != nil {
		return outcome{}, err
	}
	return outcome{next: migration.Quiesce,
		message: fmt.Sprintf("prechecks passed: %d machines, %d units", res.Machines, res.Units)}, nil
}

func (c call) quiesce(ctx context.Context) (outcome, error) {
	if _, err := c.src.MigrationQuiesce(ctx, c.m.ModelUUID, c.step); err != nil {
		return outcome{}, classify("quiescing the source", err)
	}
	sum, err := c.d.waitAgents(ctx, c.m, c.src, api.MigrationQuiesce, "quiescing, waiting for agents to report back", true)
	if err != nil {
		return outcome{}, err
	}
	return outcome{next: migration.Export, message: fmt.Sprintf("quiesced: %d agents reported", sum.OK)}, nil
}

func (c call) export(ctx context.Context) (outcome, error) {
	data, sha, index, err := c.src.MigrationExport(ctx, c.m.ModelUUID, c.step)
	if err != nil {
		return outcome{}, classify("exporting the model", err)
	}
	c.d.mu.Lock()
	c.d.exports[c.m.ID] = export{data: data, sha: sha}
	c.d.mu.Unlock()
	return outcome{next: migration.Import,
		message: fmt.Sprintf("exported %d bytes at index %d, sha256 %s", len(data), index, sha)}, nil
}

func (c call) importModel(ctx context.Context) (outcome, error) {
	c.d.mu.Lock()
	ex, ok := c.d.exports[c.m.ID]
	c.d.mu.Unlock()
	if !ok {
		// A restarted hub: the model is quiesced, so it exports the same.
		data, sha, _, err := c.src.MigrationExport(ctx, c.m.ModelUUID, c.step)
		if err != nil {
			return outcome{}, classify("exporting the model again", err)
		}
		ex = export{data: data, sha: sha}
		c.d.mu.Lock()
		c.d.exports[c.m.ID] = ex
		c.d.mu.Unlock()
	}
	if _, err := c.dst.MigrationImport(ctx, c.m.ModelUUID, c.step, ex.data, ex.sha); err != nil {
		return outcome{}, classify("importing the model into the target", err)
	}
	n, err := c.copyBlobs(ctx)
	if err != nil {
		return outcome{}, err
	}
	return outcome{next: migration.Validation,
		message: fmt.Sprintf("imported %d bytes, sha256 %s, and %d charm archives and resources", len(ex.data), ex.sha, n)}, nil
}

// copyBlobs puts on the target the charm archives and resource content
// its import names and it lacks, read from the source by SHA-256 (each
// checked on both ends). The target's list is asked again at the end, so
// a node that could not keep one fails the step.
func (c call) copyBlobs(ctx context.Context) (int, error) {
	missing, err := c.dst.MigrationMissingBlobs(ctx, c.m.ModelUUID, c.m.ID)
	if err != nil {
		return 0, classify("listing the charm archives and resources the target lacks", err)
	}
	for _, sha := range missing {
		data, err := c.src.MigrationBlob(ctx, c.m.ModelUUID, c.m.ID, sha)
		if err != nil {
			return 0, classify("reading charm archive or resource "+sha+" from the source", err)
		}
		if err := c.dst.MigrationPutBlob(ctx, c.m.ModelUUID, c.step, sha, data); err != nil {
			return 0, classify("putting charm archive or resource "+sha+" on the target", err)
		}
	}
	if left, err := c.dst.MigrationMissingBlobs(ctx, c.m.ModelUUID, c.m.ID); err != nil {
		return 0, classify("listing the charm archives and resources the target lacks", err)
	} else if len(left) > 0 {
		return 0, fmt.Errorf("the target still lacks %d charm archives or resources", len(left))
	}
	return len(missing), nil
}

// target is what agents and redirects need of m's target controller.
func (c call) target(ctx context.Context) (*api.TargetController, error) {
	t, err := c.d.store.Controllers.ByUUID(ctx, c.m.TargetController)
	if err != nil {
		return nil, fmt.Errorf("the target controller: %w", err)
	}
	return &api.TargetController{ControllerUUID: t.UUID, ControllerName: t.Name, Addresses: t.APIAddresses, CACert: t.CACert}, nil
}

func (c call) validate(ctx context.Context) (outcome, error) {
	target, err := c.target(ctx)
	if err != nil {
		return outcome{}, err
	}
	if _, err := c.src.MigrationSetPhase(ctx, c.m.ModelUUID, c.step, api.MigrationValidation, target); err != nil {
		return outcome{}, classify("moving the source's agents to VALIDATION", err)
	}
	sum, err := c.d.waitAgents(ctx, c.m, c.src, api.MigrationValidation, "validating: agents connecting to the target", true)
	if err != nil {
		return outcome{}, err
	}
	imported, err := c.dst.MigrationModel(ctx, c.m.ModelUUID, c.m.ID)
	if err != nil {
		return outcome{}, classify("reading the import on the target", err)
	}
	if !imported.Importing() || imported.Migration.ID != c.m.ID {
		return outcome{}, abortf("the target controller holds no import of model %s", c.m.ModelName)
	}
	return outcome{next: migration.Success, message: fmt.Sprintf("validated: %d agents reached the target", sum.OK)}, nil
}

func (c call) succeed(ctx context.Context) (outcome, error) {
	if _, err := c.dst.MigrationActivate(ctx, c.m.ModelUUID, c.step); err != nil {
		return outcome{}, fmt.Errorf("activating the model on the target: %w", err)
	}
	if err := c.d.store.Migrations.SwitchController(ctx, c.m, c.d.cfg.Now()); err != nil {
		return outcome{}, fmt.Errorf("switching the hub's index to the target: %w", err)
	}
	if c.d.cfg.Kick != nil {
		c.d.cfg.Kick()
	}
	target, err := c.target(ctx)
	if err != nil {
		return outcome{}, err
	}
	c.d.setMessage(ctx, c.m, "switching agents to the target")
	if _, err := c.src.MigrationSetPhase(ctx, c.m.ModelUUID, c.step, api.MigrationSuccess, target); err != nil {
		return outcome{}, fmt.Errorf("moving the source's agents to SUCCESS: %w", err)
	}
	sum, err := c.d.waitAgents(ctx, c.m, c.src, api.MigrationSuccess, "switching agents to the target", false)
	if err != nil {
		return outcome{}, err
	}
	msg := fmt.Sprintf("model active on the target; %d agents switched", sum.OK)
	if sum.Failed+sum.Pending > 0 {
		msg += fmt.Sprintf(", %d failed, %d did not report (the source redirects them)", sum.Failed, sum.Pending)
	}
	return outcome{next: migration.LogTransfer, message: msg}, nil
}

func (c call) transferLogs(ctx context.Context) (outcome, error) {
	recs, err := c.src.MigrationLogs(ctx, c.m.ModelUUID, c.m.ID)
	if err != nil {
		return outcome{}, fmt.Errorf("reading the source's log: %w", err)
	}
	if err := c.dst.MigrationSendLogs(ctx, c.m.ModelUUID, c.step, recs); err != nil {
		return outcome{}, fmt.Errorf("sending the log to the target: %w", err)
	}
	return outcome{next: migration.Reap, message: fmt.Sprintf("transferred %d log records", len(recs))}, nil
}

func (c call) reap(ctx context.Context) (outcome, error) {
	if err := c.src.MigrationReap(ctx, c.m.ModelUUID, c.step); err != nil {
		return outcome{}, fmt.Errorf("removing the model from the source: %w", err)
	}
	return outcome{next: migration.Done, message: "migrated"}, nil
}

// abort removes the target's import and releases the source: both
// idempotent, retried until they succeed.
func (c call) abort(ctx context.Context) (outcome, error) {
	if err := c.dst.MigrationAbortImport(ctx, c.m.ModelUUID, c.step); err != nil && api.CodeOf(err) != api.CodeNotFound {
		return outcome{}, fmt.Errorf("removing the import from the target: %w", err)
	}
	if _, err := c.src.MigrationRelease(ctx, c.m.ModelUUID, c.step); err != nil && api.CodeOf(err) != api.CodeNotFound {
		return outcome{}, fmt.Errorf("releasing the source: %w", err)
	}
	return outcome{next: migration.Aborted, message: "aborted: " + c.m.Failure}, nil
}

// setMessage records progress within a step; a failure to is only logged.
func (d *Driver) setMessage(ctx context.Context, m store.Migration, msg string) {
	if err := d.store.Migrations.Progress(ctx, m.ID, m.Phase, msg, nil, d.cfg.Now()); err != nil && !errors.Is(err, context.Canceled) {
		d.cfg.Logger.Warn("migrate: record progress", "migration", m.ID, "err", err)
	}
}
