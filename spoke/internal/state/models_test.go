package state

import (
	"testing"
	"time"

	"github.com/droverhq/drover/api"
)

func TestModelCommands(t *testing.T) {
	h := newHarness(t)
	h.seed()
	for _, tc := range []struct {
		name string
		typ  MessageType
		req  any
		want error
	}{
		{"duplicate uuid", AddModelType, &AddModelRequest{UUID: testModel, Name: "other", Owner: "admin"}, api.ErrAlreadyExists},
		{"duplicate name", AddModelType, &AddModelRequest{UUID: "u2", Name: "m", Owner: "admin"}, api.ErrAlreadyExists},
		{"bad name", AddModelType, &AddModelRequest{UUID: "u2", Name: "Bad_Name", Owner: "admin"}, api.ErrInvalid},
		{"missing owner", AddModelType, &AddModelRequest{UUID: "u2", Name: "x"}, api.ErrInvalid},
		{"config of missing model", SetModelConfigType, &SetModelConfigRequest{ModelUUID: "nope"}, api.ErrNotFound},
		{"set and unset", SetModelConfigType, &SetModelConfigRequest{ModelUUID: testModel,
			Set: map[string]any{"a": 1}, Unset: []string{"a"}}, api.ErrInvalid},
		{"remove missing", RemoveModelType, &RemoveModelRequest{ModelUUID: "nope"}, api.ErrNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) { h.t = t; h.fails(tc.typ, tc.req, tc.want) })
	}
	h.t = t
	// Same name, other owner, is fine.
	h.must(AddModelType, &AddModelRequest{UUID: "u2", Name: "m", Owner: "bob", Now: t0})
	if _, err := h.snap().ModelByName("", "m"); !errorsIs(err, api.ErrInvalid) {
		t.Errorf("ambiguous ModelByName: %v", err)
	}
	changed := h.must(SetModelConfigType, &SetModelConfigRequest{ModelUUID: testModel,
		Set: map[string]any{"update-status-hook-interval": "1m", "x": true}}).(map[string]any)
	if len(changed) != 2 || changed["x"] != true {
		t.Errorf("changed %v", changed)
	}
	changed = h.must(SetModelConfigType, &SetModelConfigRequest{ModelUUID: testModel, Unset: []string{"x"}}).(map[string]any)
	if v, ok := changed["x"]; !ok || v != nil {
		t.Errorf("unset answer %v", changed)
	}
	m, _ := h.snap().ModelByUUID(testModel)
	if len(m.Config) != 1 || m.Config["update-status-hook-interval"] != "1m" {
		t.Errorf("config %v", m.Config)
	}

	h.deploy("kv", "kv", 1)
	h.fails(RemoveModelType, &RemoveModelRequest{ModelUUID: testModel}, api.ErrConflict)
	h.must(DestroyModelType, &DestroyModelRequest{ModelUUID: testModel, Now: t0})
	if h.app("kv").Life != api.Dying || h.unit("kv/0").Life != api.Dying {
		t.Fatalf("destroy model did not cascade")
	}
	h.fails(AddApplicationType, &AddApplicationRequest{ModelUUID: testModel, Name: "web", CharmSHA256: sha("web")}, api.ErrConflict)
	h.must(EnsureUnitDeadType, &EnsureUnitDeadRequest{ModelUUID: testModel, Unit: "kv/0"})
	h.must(RemoveUnitType, &RemoveUnitRequest{ModelUUID: testModel, Unit: "kv/0"})
	if h.app("kv") != nil {
		t.Fatal("dying application without units and relations not removed")
	}
	// The machine its last unit left is dying now (the provisioner
	// releases it); the model waits for it, and goes with it.
	h.fails(RemoveModelType, &RemoveModelRequest{ModelUUID: testModel}, api.ErrConflict)
	if mc, _ := h.snap().MachineByID(testModel, "0"); mc == nil || mc.Life != api.Dying {
		t.Fatalf("machine 0 of a dying model, left without units: %+v", mc)
	}
	h.must(RemoveMachineType, &RemoveMachineRequest{ModelUUID: testModel, ID: "0"})
	if m, _ := h.snap().ModelByUUID(testModel); m != nil {
		t.Fatal("dying model not removed with its last machine")
	}
}

// TestDyingModelRetiresEmptyMachines: a machine its last unit left is
// released, as in Juju, while one that never had units stays; destroying
// the model releases every machine without units at once.
func TestDyingModelRetiresEmptyMachines(t *testing.T) {
	h := newHarness(t)
	h.seed()
	h.deploy("kv", "kv", 2)
	h.must(AddMachineType, &AddMachineRequest{ModelUUID: testModel})
	h.must(DestroyUnitsType, &DestroyUnitsRequest{ModelUUID: testModel, Units: []string{"kv/0"}})
	h.must(EnsureUnitDeadType, &EnsureUnitDeadRequest{ModelUUID: testModel, Unit: "kv/0"})
	h.must(RemoveUnitType, &RemoveUnitRequest{ModelUUID: testModel, Unit: "kv/0"})
	if mc, _ := h.snap().MachineByID(testModel, "0"); mc == nil || mc.Life != api.Dying {
		t.Fatalf("the machine kv/0 left: %+v", mc)
	}
	h.must(RemoveMachineType, &RemoveMachineRequest{ModelUUID: testModel, ID: "0"})
	if mc, _ := h.snap().MachineByID(testModel, "2"); mc == nil || mc.Life != api.Alive {
		t.Fatalf("the added machine: %+v", mc)
	}
	h.must(DestroyModelType, &DestroyModelRequest{ModelUUID: testModel, Now: t0})
	life := func(id string) api.Life {
		mc, _ := h.snap().MachineByID(testModel, id)
		if mc == nil {
			return "gone"
		}
		return mc.Life
	}
	if life("1") != api.Alive || life("2") != api.Dying {
		t.Fatalf("after the destroy: machine 1 (kv/1 on it) %s, machine 2 (empty) %s", life("1"), life("2"))
	}
	// Destroying it again changes nothing.
	h.must(DestroyModelType, &DestroyModelRequest{ModelUUID: testModel, Now: t0.Add(time.Hour)})
	if m, _ := h.snap().ModelByUUID(testModel); m == nil || m.Life != api.Dying || !m.Status.Since.Equal(t0) {
		t.Fatalf("destroyed again: %+v", m)
	}
	h.must(RemoveMachineType, &RemoveMachineRequest{ModelUUID: testModel, ID: "2"})
	h.must(EnsureUnitDeadType, &EnsureUnitDeadRequest{ModelUUID: testModel, Unit: "kv/1"})
	h.must(RemoveUnitType, &RemoveUnitRequest{ModelUUID: testModel, Unit: "kv/1"})
	if life("1") != api.Dying {
		t.Fatalf("machine 1 after its last unit went: %s", life("1"))
	}
	if m, _ := h.snap().ModelByUUID(testModel); m == nil {
		t.Fatal("model removed while a machine is left")
	}
	h.must(RemoveMachineType, &RemoveMachineRequest{ModelUUID: testModel, ID: "1"})
	if m, _ := h.snap().ModelByUUID(testModel); m != nil {
		t.Fatal("dying model not removed with its last machine")
	}
}

// TestDestroyingAModelOfUnitlessApplications removes it at once: its
// applications go with nothing to wait for, and so does the model.
func TestDestroyingAModelOfUnitlessApplications(t *testing.T) {
	h := newHarness(t)
	h.seed()
	h.deploy("kv", "kv", 0)
	if got := h.must(DestroyModelType, &DestroyModelRequest{ModelUUID: testModel, Now: t0}).(*api.Model); got.Life != api.Dead {
		t.Errorf("the destroy answered the model %s; want dead, it is gone", got.Life)
	}
	if m, _ := h.snap().ModelByUUID(testModel); m != nil {
		t.Fatalf("model left %s with nothing in it", m.Life)
	}
}

// TestForcedModelDestroyInOneCommand: destroy-model --force removes every
// application's units and marks every machine dying in the one command,
// whatever state each is in (a machine already dying, one already gone),
// so nothing a provisioner or an agent does between removals can fail it.
func TestForcedModelDestroyInOneCommand(t *testing.T) {
	h := newHarness(t)
	h.seed()
	h.deploy("kv", "kv", 2)
	h.deploy("web", "web", 1)
	h.must(AddMachineType, &AddMachineRequest{ModelUUID: testModel})
	// A machine released meanwhile, and one already dying.
	h.must(DestroyMachineType, &DestroyMachineRequest{ModelUUID: testModel, ID: "3"})
	h.must(RemoveMachineType, &RemoveMachineRequest{ModelUUID: testModel, ID: "3"})
	h.must(DestroyMachineType, &DestroyMachineRequest{ModelUUID: testModel, ID: "2", Force: true})
	m := h.must(DestroyModelType, &DestroyModelRequest{ModelUUID: testModel, Now: t0, Force: true}).(*api.Model)
	if m.Life != api.Dying {
		t.Fatalf("model %s, want dying (its machines go with their provisioner)", m.Life)
	}
	snap := h.snap()
	if apps, _ := snap.ListApplications(testModel); len(apps) != 0 {
		t.Errorf("applications left: %+v", apps)
	}
	if units, _ := snap.ListUnits(testModel); len(units) != 0 {
		t.Errorf("units left: %+v", units)
	}
	machines, _ := snap.ListMachines(testModel)
	for _, mc := range machines {
		if mc.Life == api.Alive {
			t.Errorf("machine %s still alive", mc.ID)
		}
	}
	if len(machines) != 3 {
		t.Errorf("%d machines, want 0, 1 and 2 (dying)", len(machines))
	}
}

// TestModelConstraintsUnderApplications: a model's constraints go to its
// new machines under their application's (or add-machine's) own, key by
// key, as Juju lays them; machines made before keep theirs.
func TestModelConstraintsUnderApplications(t *testing.T) {
	h := newHarness(t)
	h.seed()
	h.deploy("kv", "kv", 1)
	h.fails(SetModelConstraintsType, &SetModelConstraintsRequest{ModelUUID: "nope", Constraints: "cores=2"}, api.ErrNotFound)
	m := h.must(SetModelConstraintsType, &SetModelConstraintsRequest{ModelUUID: testModel, Constraints: "mem=2048M arch=amd64"}).(*api.Model)
	if m.Constraints != "mem=2048M arch=amd64" {
		t.Errorf("model constraints %q", m.Constraints)
	}
	h.must(SetConstraintsType, &SetConstraintsRequest{ModelUUID: testModel, App: "kv", Constraints: "mem=8192M"})
	h.must(AddUnitsType, &AddUnitsRequest{ModelUUID: testModel, App: "kv", N: 1, Now: t0})
	added := h.must(AddMachineType, &AddMachineRequest{ModelUUID: testModel, Constraints: "cores=4"}).(*api.Machine)
	for id, want := range map[string]string{
		h.unit("kv/0").MachineID: "",                             // made before
		h.unit("kv/1").MachineID: "arch=amd64 mem=8192M",         // the application's mem wins
		added.ID:                 "mem=2048M arch=amd64 cores=4", // add-machine's own added
	} {
		mc, err := h.snap().MachineByID(testModel, id)
		if err != nil {
			t.Fatal(err)
		}
		if mc.Constraints != want {
			t.Errorf("machine %s constraints %q, want %q", id, mc.Constraints, want)
		}
	}
}
