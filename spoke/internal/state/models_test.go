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

// TestDyingModelRetiresEmptyMachines: destroying a model makes its
// machines without units dying at once; an alive model keeps a machine
// its last unit left.
func TestDyingModelRetiresEmptyMachines(t *testing.T) {
	h := newHarness(t)
	h.seed()
	h.deploy("kv", "kv", 1)
	h.must(AddMachineType, &AddMachineRequest{ModelUUID: testModel})
	h.must(DestroyUnitsType, &DestroyUnitsRequest{ModelUUID: testModel, Units: []string{"kv/0"}})
	h.must(EnsureUnitDeadType, &EnsureUnitDeadRequest{ModelUUID: testModel, Unit: "kv/0"})
	h.must(RemoveUnitType, &RemoveUnitRequest{ModelUUID: testModel, Unit: "kv/0"})
	if mc, _ := h.snap().MachineByID(testModel, "0"); mc == nil || mc.Life != api.Alive {
		t.Fatalf("an alive model's machine after its unit went: %+v", mc)
	}
	h.must(DestroyModelType, &DestroyModelRequest{ModelUUID: testModel, Now: t0})
	machines, _ := h.snap().ListMachines(testModel)
	if len(machines) != 2 {
		t.Fatalf("machines: %d", len(machines))
	}
	for _, mc := range machines {
		if mc.Life != api.Dying {
			t.Errorf("machine %s of a destroyed model is %s", mc.ID, mc.Life)
		}
	}
	// Destroying it again changes nothing.
	h.must(DestroyModelType, &DestroyModelRequest{ModelUUID: testModel, Now: t0.Add(time.Hour)})
	if m, _ := h.snap().ModelByUUID(testModel); m == nil || m.Life != api.Dying || !m.Status.Since.Equal(t0) {
		t.Fatalf("destroyed again: %+v", m)
	}
	h.must(RemoveMachineType, &RemoveMachineRequest{ModelUUID: testModel, ID: machines[0].ID})
	if m, _ := h.snap().ModelByUUID(testModel); m == nil {
		t.Fatal("model removed while a machine is left")
	}
	h.must(RemoveMachineType, &RemoveMachineRequest{ModelUUID: testModel, ID: machines[1].ID})
	if m, _ := h.snap().ModelByUUID(testModel); m != nil {
		t.Fatal("dying model not removed with its last machine")
	}
}

// TestModelConfigIsPerModel checks that a model's config rows, found by
// the prefix of their primary key, never include those of a model whose
// UUID extends it, and that removing a model removes only its own rows.
func TestModelConfigIsPerModel(t *testing.T) {
	h := newHarness(t)
	for _, uuid := range []string{"m1", "m10", "m"} {
		h.must(AddModelType, &AddModelRequest{UUID: uuid, Name: "n" + uuid, Owner: "admin", Now: t0})
		h.must(SetModelConfigType, &SetModelConfigRequest{ModelUUID: uuid, Set: map[string]any{"of": uuid, uuid: true}})
	}
	for _, uuid := range []string{"m1", "m10", "m"} {
		cfg, err := h.snap().ModelConfig(uuid)
		if err != nil || len(cfg) != 2 || cfg["of"] != uuid || cfg[uuid] != true {
			t.Fatalf("config of %s: %v, %v", uuid, cfg, err)
		}
	}
	h.must(RemoveModelType, &RemoveModelRequest{ModelUUID: "m1"})
	if cfg, _ := h.snap().ModelConfig("m1"); len(cfg) != 0 {
		t.Fatalf("config of removed model: %v", cfg)
	}
	for _, uuid := range []string{"m10", "m"} {
		if cfg, _ := h.snap().ModelConfig(uuid); len(cfg) != 2 {
			t.Fatalf("config of %s after removing m1: %v", uuid, cfg)
		}
	}
}

func TestControllerCommands(t *testing.T) {
	h := newHarness(t)
	h.must(ControllerInitType, &ControllerInitRequest{UUID: "c1", Name: "east"})
	h.fails(ControllerInitType, &ControllerInitRequest{UUID: "c2", Name: "east"}, api.ErrConflict)
	h.must(UpsertControllerNodeType, &UpsertControllerNodeRequest{Node: api.ControllerNode{ID: "n1", RaftAddr: "a:1"}})
	h.fails(UpsertControllerNodeType, &UpsertControllerNodeRequest{Node: api.ControllerNode{ID: "n2"}}, api.ErrInvalid)
	h.fails(RemoveControllerNodeType, &RemoveControllerNodeRequest{ID: "n9"}, api.ErrNotFound)
	h.must(UpsertUserType, &UpsertUserRequest{User: api.User{Name: "admin", Access: "superuser"}, PasswordHash: "h1"})
	h.fails(UpsertUserType, &UpsertUserRequest{User: api.User{Name: "x", Access: "root"}}, api.ErrInvalid)
	h.must(UpsertUserType, &UpsertUserRequest{User: api.User{Name: "admin", Access: "superuser", DisplayName: "A"}})
	u, _ := h.snap().UserByName("admin")
	if u.PasswordHash != "h1" || u.DisplayName != "A" {
		t.Errorf("user %+v", u)
	}
	h.must(SetCredentialType, &SetCredentialRequest{Credential: api.Credential{Tag: "user-admin", Hash: "h"}})
	h.fails(SetCredentialType, &SetCredentialRequest{Credential: api.Credential{Tag: "unit-x-0", Hash: "h", ModelUUID: "nope"}}, api.ErrNotFound)
	h.must(RemoveUserType, &RemoveUserRequest{Name: "admin"})
	if c, _ := h.snap().CredentialByTag("user-admin"); c != nil {
		t.Error("user credential survived the user")
	}
	h.fails(RemoveCredentialType, &RemoveCredentialRequest{Tag: "user-admin"}, api.ErrNotFound)
}

// TestDestroyingAModelOfUnitlessApplications removes it at once: its
// applications go with nothing to wait for, and so does the model.
func TestDestroyingAModelOfUnitlessApplications(t *testing.T) {
	h := newHarness(t)
	h.seed()
	h.deploy("kv", "kv", 0)
	h.must(DestroyModelType, &DestroyModelRequest{ModelUUID: testModel, Now: t0})
	if m, _ := h.snap().ModelByUUID(testModel); m != nil {
		t.Fatalf("model left %s with nothing in it", m.Life)
	}
}
