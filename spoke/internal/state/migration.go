package state

import (
	"bytes"
	"maps"
	"reflect"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/spoke/internal/state/tables"
)

// A model migration's part on a controller (hub/internal/migration drives
// it, docs/decisions/0033-migration-state-machine.md):
//
//   - the source quiesces the model (QuiesceModel): every command that
//     changes it is refused with api.CodeMigrating, but those its agents
//     send while they finish the hook they were running (agentWrites);
//     leases neither expire nor change hands, so leadership holds;
//     ReleaseModel (an abort) ends it;
//   - the target imports the model's export (ImportModel) as a hidden
//     model that every command but the migration's refuses, then either
//     activates it (ActivateModel) or removes every row of it
//     (AbortImport). An import claim moves importing → activated | gone,
//     never back: an activated model refuses AbortImport, an aborted one
//     is not found by ActivateModel. An import left by another migration
//     (a driver that crashed mid-import) is replaced by the next one;
//   - the source's phase moves QUIESCE → VALIDATION → SUCCESS
//     (SetMigrationPhase). SUCCESS is the point of no return: ReleaseModel
//     is refused, and every command but successWrites is answered with a
//     redirect to the target; ReapModel then drops the model's rows and
//     keeps a tombstone (migration_reap.go).
//
// Each command is idempotent for its migration, so a driver that lost its
// answer asks again and gets the same outcome.

// migrationCommands are the commands of a migration itself: the guard
// lets them through, they check the model's migration themselves.
var migrationCommands = map[MessageType]bool{
	QuiesceModelType: true, ReleaseModelType: true, ImportModelType: true,
	ActivateModelType: true, AbortImportType: true, SetMigrationPhaseType: true,
	ReapModelType: true,
}

// agentWrites are the commands a quiesced source model still accepts:
// what its agents send while they finish the hook, action or command
// they were running when it was quiesced. Lease claims are among them
// (the holder's renewal; with expiry frozen no other unit can take a
// lease), so the leader stays leader.
var agentWrites = map[MessageType]bool{
	CommitHookChangesType: true, SetStatusType: true, SetUnitPortsType: true,
	SetWorkloadVersionType: true, StartTaskType: true, AppendTaskLogType: true,
	FinishTaskType: true, EnterScopeType: true, LeaveScopeType: true,
	SetRelationDataType: true, SetMachineProvisionedType: true, ClaimLeaseType: true,
	ReportMinionType: true,
}

// successWrites are the commands a source model whose migration reached
// SUCCESS still accepts (beside migrationCommands): its agents' reports
// of the phase. Every other command, an agent's too, is answered with
// api.Redirect to the target.
var successWrites = map[MessageType]bool{ReportMinionType: true}

// guardMigrations makes every command that names a model (a ModelUUID
// field) refuse a model the migration rules close to it.
func guardMigrations(t *[256]*commandEntry) {
	for _, e := range t {
		if e == nil || migrationCommands[e.typ] {
			continue
		}
		f, ok := e.request.FieldByName("ModelUUID")
		if !ok || f.Type.Kind() != reflect.String {
			continue
		}
		apply, agent, success, idx := e.apply, agentWrites[e.typ], successWrites[e.typ], f.Index
		e.apply = func(tx *Txn, req any) (any, error) {
			model := reflect.ValueOf(req).Elem().FieldByIndex(idx).String()
			if err := tx.openToCommand(model, agent, success); err != nil {
				return nil, err
			}
			return apply(tx, req)
		}
	}
}

// openToCommand refuses a command on a model being imported, one that is
// not an agent's on a quiesced model, and one that is not in
// successWrites on a model that migrated away (a redirect).
func (t *Txn) openToCommand(model string, agent, success bool) error {
	m, err := first[api.Model](&t.reader, tables.Models, "id", model)
	if err != nil || m == nil || m.Migration == nil {
		return err
	}
	switch {
	case MigratedAway(m):
		if success {
			return nil
		}
		return api.Redirect(m.Name, *m.Migration.Target)
	case m.Migration.Role == api.MigrationTarget:
		return api.Errorf(api.CodeMigrating, "model %q is being migrated to this controller (migration %s)", m.Name, m.Migration.ID)
	case !agent && !success:
		return api.Errorf(api.CodeMigrating, "model %q is being migrated (migration %s): changes are refused until the migration ends", m.Name, m.Migration.ID)
	}
	return nil
}

func quiesceModel(t *Txn, req *QuiesceModelRequest) error {
	m, err := t.model(req.ModelUUID)
	if err != nil {
		return err
	}
	if err := requireMigrationID(req.MigrationID); err != nil {
		return err
	}
	switch {
	case m.Migration != nil && m.Migration.ID == req.MigrationID && m.Migration.Role == api.MigrationSource:
		return nil
	case m.Migration != nil:
		return api.Errorf(api.CodeMigrating, "model %q is already part of migration %s", m.Name, m.Migration.ID)
	case m.Life != api.Alive:
		return api.Errorf(api.CodeConflict, "model %q is %s: it cannot migrate", m.Name, m.Life)
	}
	next := *m
	next.Migration = &api.ModelMigration{ID: req.MigrationID, Role: api.MigrationSource, Since: req.Now, Phase: api.MigrationQuiesce}
	return t.put(tables.Models, &next)
}

func releaseModel(t *Txn, req *ReleaseModelRequest) error {
	m, err := t.model(req.ModelUUID)
	if err != nil {
		return err
	}
	switch {
	case m.Migration == nil:
		return nil
	case m.Migration.ID != req.MigrationID || m.Migration.Role != api.MigrationSource:
		return api.Errorf(api.CodeMigrating, "model %q is part of migration %s, not %s", m.Name, m.Migration.ID, req.MigrationID)
	case m.Migration.Phase == api.MigrationSuccess:
		return api.Errorf(api.CodeConflict, "migration %s reached SUCCESS; the model belongs to the target", req.MigrationID)
	}
	next := *m
	next.Migration = nil
	return t.put(tables.Models, &next)
}

func importModel(t *Txn, req *ImportModelRequest) error {
	if err := requireMigrationID(req.MigrationID); err != nil {
		return err
	}
	rows, err := tables.ReadModel(bytes.NewReader(req.Export))
	if err != nil {
		return api.Errorf(api.CodeInvalid, "%v", err)
	}
	in := rows.Model
	if old, err := first[api.Model](&t.reader, tables.Models, "id", in.UUID); err != nil {
		return err
	} else if old != nil {
		switch {
		case old.Importing() && old.Migration.ID == req.MigrationID:
			return nil
		case old.Importing():
			// A leftover of another migration's import (its driver
			// crashed or gave up): it never served anyone, and a retry
			// must not be blocked by it (Juju #20361).
			if err := t.deleteModel(old); err != nil {
				return err
			}
		default:
			return api.Errorf(api.CodeAlreadyExists, "model %s (%q) already exists on this controller", in.UUID, old.Name)
		}
	}
	if same, err := first[api.Model](&t.reader, tables.Models, "name", in.Owner, in.Name); err != nil {
		return err
	} else if same != nil {
		return api.Errorf(api.CodeAlreadyExists, "%s already has a model called %q on this controller", in.Owner, in.Name)
	}
	for _, c := range rows.Charms {
		if old, err := first[api.Charm](&t.reader, tables.Charms, "id", c.SHA256); err != nil {
			return err
		} else if old == nil {
			if err := t.put(tables.Charms, fresh(c)); err != nil {
				return err
			}
		}
	}
	if err := t.dropTombstone(in.UUID); err != nil {
		return err
	}
	m := fresh(in)
	m.Migration = &api.ModelMigration{ID: req.MigrationID, Role: api.MigrationTarget, Since: req.Now}
	m.ImportedBy = ""
	if err := t.put(tables.Models, m); err != nil {
		return err
	}
	for _, table := range tables.ModelTables {
		for _, row := range rows.Rows[table] {
			if err := t.put(table, fresh(row)); err != nil {
				return err
			}
			if e, ok := row.(*tables.ModelConfigEntry); ok {
				t.config.wrote(e.ModelUUID, e.Key, e)
			}
		}
	}
	return nil
}

func activateModel(t *Txn, req *ActivateModelRequest) error {
	m, err := t.model(req.ModelUUID)
	if err != nil {
		return err
	}
	switch {
	case m.Migration == nil && m.ImportedBy == req.MigrationID:
		return nil
	case m.Migration == nil || m.Migration.Role != api.MigrationTarget || m.Migration.ID != req.MigrationID:
		return api.Errorf(api.CodeConflict, "model %q is not being imported by migration %s", m.Name, req.MigrationID)
	}
	next := *m
	next.Migration, next.ImportedBy = nil, req.MigrationID
	return t.put(tables.Models, &next)
}

func abortImport(t *Txn, req *AbortImportRequest) error {
	m, err := first[api.Model](&t.reader, tables.Models, "id", req.ModelUUID)
	switch {
	case err != nil:
		return err
	case m == nil:
		return nil
	case m.Migration == nil && m.ImportedBy == req.MigrationID:
		return api.Errorf(api.CodeConflict, "model %q was activated by migration %s: its import cannot be aborted", m.Name, req.MigrationID)
	case m.Migration == nil || m.Migration.Role != api.MigrationTarget || m.Migration.ID != req.MigrationID:
		return api.Errorf(api.CodeConflict, "model %q is not being imported by migration %s", m.Name, req.MigrationID)
	}
	return t.deleteModel(m)
}

func requireMigrationID(id string) error {
	if id == "" || len(id) > 64 {
		return api.Errorf(api.CodeInvalid, "a migration ID of 1 to 64 characters is required")
	}
	return nil
}

// fresh is a copy of a row read from an export, with its raft indexes
// cleared so that put stamps this controller's.
func fresh[T any](row T) T {
	v := reflect.ValueOf(row)
	if v.Kind() != reflect.Pointer {
		return row
	}
	c := reflect.New(v.Elem().Type())
	c.Elem().Set(v.Elem())
	out := c.Interface().(T)
	if m := tables.Meta(out); m != nil {
		*m = api.Meta{}
	}
	return out
}

// reportMinion stores an agent's latest report on its model's migration
// (the minion protocol, docs/decisions/0036-minion-protocol.md).
func reportMinion(t *Txn, req *ReportMinionRequest) error {
	m, err := t.model(req.ModelUUID)
	if err != nil {
		return err
	}
	r := req.Report
	mig := m.Migration
	switch {
	case req.Tag == "":
		return api.Errorf(api.CodeInvalid, "a minion report needs the agent's tag")
	case r.Phase != api.MigrationQuiesce && r.Phase != api.MigrationValidation && r.Phase != api.MigrationSuccess:
		return api.Errorf(api.CodeInvalid, "a minion report's phase must be %s, %s or %s, not %q",
			api.MigrationQuiesce, api.MigrationValidation, api.MigrationSuccess, r.Phase)
	case mig == nil || mig.Role != api.MigrationSource:
		return api.Errorf(api.CodeConflict, "model %q is not migrating away: there is no migration %s to report on", m.Name, r.MigrationID)
	case mig.ID != r.MigrationID:
		return api.Errorf(api.CodeConflict, "model %q is part of migration %s, not %s", m.Name, mig.ID, r.MigrationID)
	}
	next, nm := *m, *mig
	nm.Minions = maps.Clone(mig.Minions)
	if nm.Minions == nil {
		nm.Minions = map[string]api.MinionReport{}
	}
	nm.Minions[req.Tag] = r
	next.Migration = &nm
	return t.put(tables.Models, &next)
}
