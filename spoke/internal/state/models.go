package state

import (
	"slices"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/spoke/internal/state/tables"
)

// byModel is the index and arguments that find a model's rows in a model
// table: its "model" index, or for model config (which has none) the
// prefix of its primary key (model, key).
func byModel(table, model string) (string, []any) {
	if table == tables.ModelConfig {
		return "id_prefix", []any{model, ""}
	}
	return "model", []any{model}
}

// ModelByUUID returns a model with its config, or nil. ListModels leaves
// Config nil: listings do not need it, and assembling it per model would
// make every listing O(config keys).
func (r *reader) ModelByUUID(uuid string) (*api.Model, error) {
	m, err := first[api.Model](r, tables.Models, "id", uuid)
	if err != nil {
		return nil, err
	}
	return r.withConfig(m)
}

// ModelByName returns owner's model called name, or nil. With owner empty
// it looks across owners and fails with ErrInvalid if the name is ambiguous.
func (r *reader) ModelByName(owner, name string) (*api.Model, error) {
	if owner != "" {
		return first[api.Model](r, tables.Models, "name", owner, name)
	}
	all, err := r.ListModels()
	if err != nil {
		return nil, err
	}
	var found *api.Model
	for _, m := range all {
		if m.Name != name {
			continue
		}
		if found != nil {
			return nil, api.Errorf(api.CodeInvalid, "model name %q is ambiguous: owned by %q and %q", name, found.Owner, m.Owner)
		}
		found = m
	}
	return found, nil
}

// ListModels returns every model, by UUID.
func (r *reader) ListModels() ([]*api.Model, error) {
	return list[api.Model](r, tables.Models, "id")
}

// model returns a model or a NotFound error.
func (t *Txn) model(uuid string) (*api.Model, error) {
	m, err := first[api.Model](&t.reader, tables.Models, "id", uuid)
	if err != nil {
		return nil, err
	}
	if m == nil {
		return nil, api.Errorf(api.CodeNotFound, "model %q not found", uuid)
	}
	return m, nil
}

// aliveModel returns a model that accepts new entities.
func (t *Txn) aliveModel(uuid string) (*api.Model, error) {
	m, err := t.model(uuid)
	if err != nil {
		return nil, err
	}
	if m.Life != api.Alive {
		return nil, api.Errorf(api.CodeConflict, "model %q is %s", m.Name, m.Life)
	}
	return m, nil
}

// addModel creates a model.
func addModel(t *Txn, req *AddModelRequest) (*api.Model, error) {
	if req.UUID == "" || req.Name == "" || req.Owner == "" {
		return nil, api.Errorf(api.CodeInvalid, "model uuid, name and owner are required")
	}
	if err := validName("model", req.Name); err != nil {
		return nil, err
	}
	if m, err := first[api.Model](&t.reader, tables.Models, "id", req.UUID); err != nil {
		return nil, err
	} else if m != nil {
		return nil, api.Errorf(api.CodeAlreadyExists, "model %q already exists", req.UUID)
	}
	if m, err := t.ModelByName(req.Owner, req.Name); err != nil {
		return nil, err
	} else if m != nil {
		return nil, api.Errorf(api.CodeAlreadyExists, "model %q already exists for %q", req.Name, req.Owner)
	}
	m := &api.Model{
		UUID: req.UUID, Name: req.Name, Owner: req.Owner, Life: api.Alive,
		Status:    api.Status{Status: "available", Since: req.Now},
		CreatedAt: req.Now,
	}
	if err := t.put(tables.Models, m); err != nil {
		return nil, err
	}
	if _, err := t.setModelConfigKeys(m.UUID, req.Config, nil); err != nil {
		return nil, err
	}
	return t.withConfig(m)
}

// setModelConfig sets and unsets model config keys. Value: the changed
// keys with their new values (nil for an unset key).
// setModelConstraints sets a model's constraints: its new machines'
// defaults, under their application's own.
func setModelConstraints(t *Txn, req *SetModelConstraintsRequest) (*api.Model, error) {
	m, err := t.aliveModel(req.ModelUUID)
	if err != nil {
		return nil, err
	}
	m = copyModel(m)
	m.Constraints = req.Constraints
	return m, t.put(tables.Models, m)
}

func setModelConfig(t *Txn, req *SetModelConfigRequest) (map[string]any, error) {
	if _, err := t.aliveModel(req.ModelUUID); err != nil {
		return nil, err
	}
	if err := checkSetUnset(req.Set, req.Unset); err != nil {
		return nil, err
	}
	return t.setModelConfigKeys(req.ModelUUID, req.Set, req.Unset)
}

// checkSetUnset rejects empty keys and a key both set and unset.
func checkSetUnset[V any](set map[string]V, unset []string) error {
	for k := range set {
		if k == "" {
			return api.Errorf(api.CodeInvalid, "empty key")
		}
		if slices.Contains(unset, k) {
			return api.Errorf(api.CodeInvalid, "key %q both set and unset", k)
		}
	}
	return nil
}

// destroyModel makes the model dying and destroys its applications, and
// retires its machines that host no units; a model left with nothing is
// removed at once, and answered dead. Again on a dying model it only
// retires machines (a model left dying by an older version settles).
func destroyModel(t *Txn, req *DestroyModelRequest) (*api.Model, error) {
	m, err := t.model(req.ModelUUID)
	if err != nil {
		return nil, err
	}
	if m.Life == api.Dead {
		return m, nil
	}
	if req.Force {
		// In one command, so nothing the provisioner or the agents do
		// between removals makes one fail (an application or machine
		// already gone).
		if err := t.forceEmptyModel(m.UUID); err != nil {
			return nil, err
		}
	}
	if m.Life == api.Alive {
		m = copyModel(m)
		m.Life = api.Dying
		m.Status = api.Status{Status: "destroying", Since: req.Now}
		if err := t.put(tables.Models, m); err != nil {
			return nil, err
		}
		apps, err := t.ListApplications(m.UUID)
		if err != nil {
			return nil, err
		}
		for _, a := range apps {
			if err := t.destroyApp(a, false); err != nil {
				return nil, err
			}
		}
	}
	machines, err := t.ListMachines(m.UUID)
	if err != nil {
		return nil, err
	}
	for _, mc := range machines {
		if err := t.retireMachine(mc); err != nil {
			return nil, err
		}
	}
	// Nothing to wait for: the model goes now, and the answer says so.
	if err := t.settleDyingModel(m.UUID); err != nil {
		return nil, err
	}
	if left, err := first[api.Model](&t.reader, tables.Models, "id", m.UUID); err != nil {
		return nil, err
	} else if left == nil {
		m = copyModel(m)
		m.Life = api.Dead
	}
	return m, nil
}

// A dying model winds down as Juju's does: each machine becomes dying once
// it hosts no units (the provisioner then releases it), and the model is
// removed once its last application and machine are gone.

// retireMachine makes an alive machine dying when it hosts no units: the
// last unit left it (in any model), or its model is being destroyed.
func (t *Txn) retireMachine(mc *api.Machine) error {
	if mc == nil || mc.Life != api.Alive {
		return nil
	}
	if u, err := t.txn.First(tables.Units, "machine", mc.ModelUUID, mc.ID); err != nil {
		return internalf("unit lookup: %v", err)
	} else if u != nil {
		return nil
	}
	mc = copyMachine(mc)
	mc.Life = api.Dying
	return t.put(tables.Machines, mc)
}

// settleDyingModel is called when something of model went: a dying model
// with nothing left is removed.
func (t *Txn) settleDyingModel(model string) error {
	m, err := first[api.Model](&t.reader, tables.Models, "id", model)
	if err != nil || m == nil || m.Life != api.Dying {
		return err
	}
	for _, tbl := range []string{tables.Applications, tables.Machines} {
		if obj, err := t.txn.First(tbl, "model", model); err != nil {
			return internalf("%s lookup: %v", tbl, err)
		} else if obj != nil {
			return nil
		}
	}
	return removeModel(t, &RemoveModelRequest{ModelUUID: model})
}

// removeModel deletes an empty or dead model and every row it still owns.
func removeModel(t *Txn, req *RemoveModelRequest) error {
	m, err := t.model(req.ModelUUID)
	if err != nil {
		return err
	}
	if m.Life != api.Dead {
		for _, tbl := range []string{tables.Applications, tables.Machines} {
			if obj, err := t.txn.First(tbl, "model", m.UUID); err != nil {
				return internalf("%s lookup: %v", tbl, err)
			} else if obj != nil {
				return api.Errorf(api.CodeConflict, "model %q is not empty", m.Name)
			}
		}
	}
	return t.deleteModel(m)
}

// deleteModel deletes model m and every row of it.
func (t *Txn) deleteModel(m *api.Model) error {
	for _, tbl := range tables.ModelTables {
		index, args := byModel(tbl, m.UUID)
		if _, err := t.txn.DeleteAll(tbl, index, args...); err != nil {
			return internalf("delete from %s: %v", tbl, err)
		}
	}
	t.config.removedModel(m.UUID)
	return t.del(tables.Models, m)
}

// forceEmptyModel removes every application of the model with force
// (their units at once) and every machine with force.
func (t *Txn) forceEmptyModel(model string) error {
	apps, err := t.ListApplications(model)
	if err != nil {
		return err
	}
	for _, a := range apps {
		if err := t.destroyApp(a, true); err != nil {
			return err
		}
	}
	machines, err := t.ListMachines(model)
	if err != nil {
		return err
	}
	for _, mc := range machines {
		if err := destroyMachine(t, &DestroyMachineRequest{ModelUUID: model, ID: mc.ID, Force: true}); err != nil {
			return err
		}
	}
	return nil
}
