package state

import (
	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/spoke/internal/state/tables"
)

// The source's side of a migration after the import: the phases its
// agents follow (SetMigrationPhase), then the reap that drops the model
// and keeps a tombstone (ReapModel). From SUCCESS on the model is the
// target's: every command on it but the migration's and successWrites is
// answered with api.Redirect, and once reaped its tombstone says where it
// went.

// Tombstone is what the controller keeps of a model that migrated away.
type Tombstone = tables.Tombstone

// migrationPhases are the source's phases in the order they are taken.
var migrationPhases = []string{api.MigrationQuiesce, api.MigrationValidation, api.MigrationSuccess}

// phaseRank is the position of a phase in migrationPhases, -1 for an
// unknown one. A model quiesced without a phase is in QUIESCE.
func phaseRank(phase string) int {
	if phase == "" {
		phase = api.MigrationQuiesce
	}
	for i, p := range migrationPhases {
		if p == phase {
			return i
		}
	}
	return -1
}

// MigratedAway reports whether m is a source model whose migration
// reached SUCCESS: the target's, whatever this controller still holds.
func MigratedAway(m *api.Model) bool {
	return m != nil && m.Migration != nil && m.Migration.Role == api.MigrationSource &&
		m.Migration.Phase == api.MigrationSuccess && m.Migration.Target != nil
}

// MigratedTo is where the model uuid went if it migrated away from this
// controller: its tombstone's target once reaped, its migration's target
// from SUCCESS until then. ok is false for a model this controller serves
// or does not know.
func (r *reader) MigratedTo(uuid string) (name string, target *api.TargetController, ok bool, err error) {
	m, err := first[api.Model](r, tables.Models, "id", uuid)
	if err != nil {
		return "", nil, false, err
	}
	if m != nil {
		if !MigratedAway(m) {
			return "", nil, false, nil
		}
		t := *m.Migration.Target
		return m.Name, &t, true, nil
	}
	tomb, err := first[Tombstone](r, tables.Tombstones, "id", uuid)
	if err != nil || tomb == nil {
		return "", nil, false, err
	}
	t := tomb.Target
	return tomb.ModelName, &t, true, nil
}

// TombstoneByModel returns the tombstone of a model reaped after it
// migrated away, or an api.CodeNotFound error.
func (r *reader) TombstoneByModel(uuid string) (*Tombstone, error) {
	t, err := first[Tombstone](r, tables.Tombstones, "id", uuid)
	if err != nil {
		return nil, err
	}
	if t == nil {
		return nil, api.Errorf(api.CodeNotFound, "model %q has no tombstone on this controller", uuid)
	}
	return t, nil
}

// ListTombstones returns every tombstone, by model UUID.
func (r *reader) ListTombstones() ([]*Tombstone, error) {
	return list[Tombstone](r, tables.Tombstones, "id")
}

func setMigrationPhase(t *Txn, req *SetMigrationPhaseRequest) error {
	if err := requireMigrationID(req.MigrationID); err != nil {
		return err
	}
	to := phaseRank(req.Phase)
	if to < 0 || req.Phase == "" {
		return api.Errorf(api.CodeInvalid, "migration phase %q is not one of %v", req.Phase, migrationPhases)
	}
	if req.Phase != api.MigrationQuiesce {
		if tg := req.Target; tg == nil || tg.ControllerUUID == "" || len(tg.Addresses) == 0 {
			return api.Errorf(api.CodeInvalid, "migration phase %s needs the target controller (its UUID and addresses)", req.Phase)
		}
	}
	m, err := first[api.Model](&t.reader, tables.Models, "id", req.ModelUUID)
	if err != nil {
		return err
	}
	if m == nil {
		// A reaped model was at SUCCESS: asking for SUCCESS again is
		// answered as the first time.
		if tomb, err := first[Tombstone](&t.reader, tables.Tombstones, "id", req.ModelUUID); err != nil {
			return err
		} else if tomb != nil && tomb.MigrationID == req.MigrationID && req.Phase == api.MigrationSuccess {
			return nil
		}
		return api.Errorf(api.CodeNotFound, "model %q not found", req.ModelUUID)
	}
	switch {
	case m.Migration == nil || m.Migration.Role != api.MigrationSource:
		return api.Errorf(api.CodeConflict, "model %q is not quiesced for migration %s: quiesce it first", m.Name, req.MigrationID)
	case m.Migration.ID != req.MigrationID:
		return api.Errorf(api.CodeMigrating, "model %q is part of migration %s, not %s", m.Name, m.Migration.ID, req.MigrationID)
	}
	from := phaseRank(m.Migration.Phase)
	switch {
	case to == from && to > 0 && m.Migration.Target.ControllerUUID != req.Target.ControllerUUID:
		return api.Errorf(api.CodeConflict, "migration %s is in phase %s towards controller %s, not %s", req.MigrationID, req.Phase,
			m.Migration.Target.ControllerUUID, req.Target.ControllerUUID)
	case to == from:
		return nil
	case to < from:
		return api.Errorf(api.CodeConflict, "migration %s is in phase %s: it cannot go back to %s", req.MigrationID, migrationPhases[from], req.Phase)
	case to > from+1:
		return api.Errorf(api.CodeConflict, "migration %s is in phase %s: phase %s comes after %s", req.MigrationID, migrationPhases[from], req.Phase, migrationPhases[from+1])
	}
	next := *m
	mig := *m.Migration
	target := *req.Target
	target.Addresses = append([]string(nil), target.Addresses...)
	mig.Phase, mig.Target = req.Phase, &target
	next.Migration = &mig
	return t.put(tables.Models, &next)
}

func reapModel(t *Txn, req *ReapModelRequest) error {
	if err := requireMigrationID(req.MigrationID); err != nil {
		return err
	}
	m, err := first[api.Model](&t.reader, tables.Models, "id", req.ModelUUID)
	if err != nil {
		return err
	}
	if m == nil {
		tomb, err := first[Tombstone](&t.reader, tables.Tombstones, "id", req.ModelUUID)
		switch {
		case err != nil:
			return err
		case tomb != nil && tomb.MigrationID == req.MigrationID:
			return nil
		}
		return api.Errorf(api.CodeNotFound, "model %q not found", req.ModelUUID)
	}
	switch {
	case m.Migration == nil || m.Migration.Role != api.MigrationSource:
		return api.Errorf(api.CodeConflict, "model %q is not migrating away (migration %s): it cannot be reaped", m.Name, req.MigrationID)
	case m.Migration.ID != req.MigrationID:
		return api.Errorf(api.CodeMigrating, "model %q is part of migration %s, not %s", m.Name, m.Migration.ID, req.MigrationID)
	case !MigratedAway(m):
		return api.Errorf(api.CodeConflict, "migration %s is in phase %s: model %q is reaped only once the migration reached SUCCESS",
			req.MigrationID, migrationPhases[max(phaseRank(m.Migration.Phase), 0)], m.Name)
	}
	tomb := &Tombstone{ModelUUID: m.UUID, ModelName: m.Name, Owner: m.Owner, MigrationID: req.MigrationID,
		Target: *m.Migration.Target, Time: req.Now}
	creds, err := list[api.Credential](&t.reader, tables.Credentials, "model", m.UUID)
	if err != nil {
		return err
	}
	for _, c := range creds {
		if tomb.Agents == nil {
			tomb.Agents = map[string]string{}
		}
		tomb.Agents[c.Tag] = c.Hash
	}
	if err := t.deleteModel(m); err != nil {
		return err
	}
	return t.put(tables.Tombstones, tomb)
}

// dropTombstone removes the tombstone of a model that comes back to this
// controller, if it has one.
func (t *Txn) dropTombstone(uuid string) error {
	tomb, err := first[Tombstone](&t.reader, tables.Tombstones, "id", uuid)
	if err != nil || tomb == nil {
		return err
	}
	return t.del(tables.Tombstones, tomb)
}
