package model

import (
	"cmp"
	"fmt"

	"github.com/droverhq/drover/api"
)

// addMigration adds a hub's record of the model's latest migration to
// show-model's view: Juju's status fields (migration, migration-start,
// migration-end), shown while it migrates and after, and Drover's
// migration section {id, phase, from, to, message, failure, start, end,
// agents}.
func addMigration(view map[string]any, mig *api.Migration) {
	if status, ok := view["status"].(map[string]any); ok {
		status["migration"] = migrationStatus(mig)
		status["migration-start"] = mig.StartedAt
		if mig.EndedAt != nil {
			status["migration-end"] = *mig.EndedAt
		}
	}
	agents := map[string]any{"ok": mig.Agents.OK, "failed": mig.Agents.Failed, "pending": mig.Agents.Pending}
	if len(mig.Agents.Reasons) > 0 {
		agents["reasons"] = mig.Agents.Reasons
	}
	sec := map[string]any{"id": mig.ID, "phase": mig.Phase, "from": mig.SourceController, "to": mig.TargetController,
		"start": mig.StartedAt, "agents": agents}
	if mig.Message != "" {
		sec["message"] = mig.Message
	}
	if mig.Failure != "" {
		sec["failure"] = mig.Failure
	}
	if mig.EndedAt != nil {
		sec["end"] = *mig.EndedAt
	}
	view["migration"] = sec
}

// migrationStatus is status.migration: the hub's message while the
// migration runs, and how it ended once it has.
func migrationStatus(mig *api.Migration) string {
	switch mig.Phase {
	case "DONE":
		return fmt.Sprintf("migrated from controller %s to %s", mig.SourceController, mig.TargetController)
	case "ABORTED":
		if mig.Failure != "" {
			return "migration aborted: " + mig.Failure
		}
		return "migration aborted"
	case "REAPFAILED":
		return fmt.Sprintf("migrated to controller %s; its copy on %s was not removed: 'drover migrate --retry-reap %s'",
			mig.TargetController, mig.SourceController, mig.ID)
	}
	if mig.Message != "" {
		return "migrating: " + mig.Message
	}
	return "migrating: " + mig.Phase
}

// addModelMigration adds what a controller's model record says of a
// migration it takes part in (the source's quiesce, the target's import)
// to show-model's status, as Juju shows it while a model migrates: a
// hub's record (addMigration), when there is one, says more.
func addModelMigration(view map[string]any, mm *api.ModelMigration) {
	status, ok := view["status"].(map[string]any)
	if !ok {
		return
	}
	what := "migrating: " + cmp.Or(mm.Phase, "QUIESCE")
	if mm.Role == api.MigrationTarget {
		what = "importing: migration " + mm.ID
	} else if mm.Target != nil && mm.Target.ControllerName != "" {
		what += " (to controller " + mm.Target.ControllerName + ")"
	}
	status["migration"] = what
	status["migration-start"] = mm.Since
}
