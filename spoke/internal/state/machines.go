package state

import (
	"strconv"
	"strings"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/spoke/internal/state/tables"
)

// MachineByID returns a machine, or nil.
func (r *reader) MachineByID(model, id string) (*api.Machine, error) {
	return first[api.Machine](r, tables.Machines, "id", model, id)
}

// ListMachines returns a model's machines, by ID.
func (r *reader) ListMachines(model string) ([]*api.Machine, error) {
	return list[api.Machine](r, tables.Machines, "model", model)
}

func (t *Txn) machine(model, id string) (*api.Machine, error) {
	m, err := t.MachineByID(model, id)
	if err != nil {
		return nil, err
	}
	if m == nil {
		return nil, api.Errorf(api.CodeNotFound, "machine %q not found", id)
	}
	return m, nil
}

// newMachine creates the model's next machine, with the model's
// constraints under the given ones (an application's, or add-machine's).
func (t *Txn) newMachine(m *api.Model, base, constraints string) (*api.Machine, error) {
	mc := &api.Machine{
		ModelUUID: m.UUID, ID: strconv.Itoa(m.NextMachine), Base: base, Constraints: api.MergeConstraints(m.Constraints, constraints),
		Life: api.Alive, AgentStatus: api.Status{Status: "pending"}, InstanceStatus: api.Status{Status: "pending"},
	}
	m.NextMachine++
	return mc, t.put(tables.Machines, mc)
}

// placeUnit returns the machine for a new unit of a: "" is a new machine,
// "N" or "lxd:N" machine N, "app/N" the machine of that unit.
func (t *Txn) placeUnit(m *api.Model, a *api.Application, p, base string, res *AddApplicationResult) (string, error) {
	switch {
	case p == "":
		mc, err := t.newMachine(m, base, a.Constraints)
		if err != nil {
			return "", err
		}
		res.Machines = append(res.Machines, mc.ID)
		return mc.ID, nil
	case unitApp(p) != "":
		u, err := t.unit(m.UUID, p)
		if err != nil {
			return "", err
		}
		if u.Life != api.Alive || u.MachineID == "" {
			return "", api.Errorf(api.CodeConflict, "cannot place next to unit %q", p)
		}
		return u.MachineID, nil
	}
	id := strings.TrimPrefix(p, "lxd:")
	if _, err := strconv.Atoi(id); err != nil {
		return "", api.Errorf(api.CodeInvalid, "invalid placement %q", p)
	}
	mc, err := t.machine(m.UUID, id)
	if err != nil {
		return "", err
	}
	if mc.Life != api.Alive {
		return "", api.Errorf(api.CodeConflict, "machine %q is %s", id, mc.Life)
	}
	return id, nil
}

// addMachine adds an empty machine.
func addMachine(t *Txn, req *AddMachineRequest) (*api.Machine, error) {
	m, err := t.aliveModel(req.ModelUUID)
	if err != nil {
		return nil, err
	}
	m = copyModel(m)
	mc, err := t.newMachine(m, req.Base, req.Constraints)
	if err != nil {
		return nil, err
	}
	return mc, t.put(tables.Models, m)
}

// setMachineProvisioned records a machine's provider instance.
func setMachineProvisioned(t *Txn, req *SetMachineProvisionedRequest) (*api.Machine, error) {
	mc, err := t.machine(req.ModelUUID, req.ID)
	if err != nil {
		return nil, err
	}
	if req.ProviderID == "" {
		return nil, api.Errorf(api.CodeInvalid, "provider id is required")
	}
	if mc.ProviderID != "" && mc.ProviderID != req.ProviderID {
		return nil, api.Errorf(api.CodeConflict, "machine %q already provisioned as %q", mc.ID, mc.ProviderID)
	}
	mc = copyMachine(mc)
	mc.ProviderID = req.ProviderID
	mc.Addresses = append([]string(nil), req.Addresses...)
	if mc.Base == "" {
		mc.Base = req.Base
	}
	if req.Area != "" {
		mc.Area = req.Area
	}
	return mc, t.put(tables.Machines, mc)
}

// destroyMachine makes a machine dying; with Force its units are removed.
func destroyMachine(t *Txn, req *DestroyMachineRequest) error {
	mc, err := t.machine(req.ModelUUID, req.ID)
	if err != nil {
		return err
	}
	units, err := t.UnitsByMachine(mc.ModelUUID, mc.ID)
	if err != nil {
		return err
	}
	if len(units) > 0 && !req.Force {
		return api.Errorf(api.CodeConflict, "machine %q still hosts unit %q: remove its units first, or the machine with force", mc.ID, units[0].Name)
	}
	for _, u := range units {
		// A principal's removal takes its subordinates with it.
		cur, err := t.UnitByName(u.ModelUUID, u.Name)
		if err != nil {
			return err
		}
		if cur != nil {
			if err := t.forceRemoveUnit(cur); err != nil {
				return err
			}
		}
	}
	if mc.Life == api.Alive {
		mc = copyMachine(mc)
		mc.Life = api.Dying
		return t.put(tables.Machines, mc)
	}
	return nil
}

// removeMachine deletes a dying or dead machine that hosts no units.
func removeMachine(t *Txn, req *RemoveMachineRequest) error {
	mc, err := t.machine(req.ModelUUID, req.ID)
	if err != nil {
		return err
	}
	if mc.Life == api.Alive {
		return api.Errorf(api.CodeConflict, "machine %q is alive", mc.ID)
	}
	if u, err := t.txn.First(tables.Units, "machine", mc.ModelUUID, mc.ID); err != nil {
		return internalf("unit lookup: %v", err)
	} else if u != nil {
		return api.Errorf(api.CodeConflict, "machine %q still hosts unit %q", mc.ID, u.(*api.Unit).Name)
	}
	for _, kind := range []string{api.StatusKindMachine, api.StatusKindInstance} {
		if err := t.deleteHistory(mc.ModelUUID, mc.ID, kind); err != nil {
			return err
		}
	}
	if err := t.deleteCredential("machine-" + mc.ModelUUID + "-" + mc.ID); err != nil {
		return err
	}
	if err := t.del(tables.Machines, mc); err != nil {
		return err
	}
	return t.settleDyingModel(mc.ModelUUID)
}
