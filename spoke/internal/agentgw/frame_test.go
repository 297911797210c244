package agentgw

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/droverhq/drover/api"
)

func TestAppendMachineStateMatchesMarshal(t *testing.T) {
	// appendMachineState spells out every field; a new field must be added
	// there too (and counted here).
	for typ, n := range map[reflect.Type]int{
		reflect.TypeFor[api.MachineState]():        11,
		reflect.TypeFor[api.UnitRemoteState]():     20,
		reflect.TypeFor[api.RelationRemoteState](): 10,
		reflect.TypeFor[api.Status]():              4,
	} {
		if typ.NumField() != n {
			t.Errorf("%v has %d fields, appendMachineState knows %d: update it", typ, typ.NumField(), n)
		}
	}
	since := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	full := &api.UnitRemoteState{Unit: "web/10", Application: "web", Principal: "p/1", Life: api.Alive,
		Resolved: "retry-hook", RetryVersion: 3, CharmSHA256: "abc", CharmRevision: 7, ForceCharmUpgrade: true, Trust: true,
		CharmModifiedVersion: 2, Resources: map[string]api.AgentResource{"b": {Path: "b.bin", Revision: 1, SHA256: "s", Size: 3}, "a": {}},
		Config: map[string]any{"b": 1, "a": "x<y>&\"z\"\u2028", "c": json.Number("2.5"), "d": true},
		Leader: true, LeaseExpiry: since.Add(time.Minute), LeaderSettingsVersion: 4,
		Relations: map[int]*api.RelationRemoteState{
			2:  {ID: 2, Endpoint: "db", Interface: "kv", Role: "requirer", Scope: "global", RemoteApp: "kv", Life: api.Alive, Joined: true, Members: map[string]int{"kv/10": 1, "kv/2": 0, "kv/1": 5}, AppVersion: 9},
			10: {ID: 10, Endpoint: "peer", Members: map[string]int{}},
			1:  {ID: 1, Members: nil},
		},
		Tasks:          []api.TaskRef{{ID: "1", Action: "backup", Params: map[string]any{"x": 1}, Parallel: true, ExecutionGroup: "g", Status: "pending"}},
		OpenPorts:      []api.Port{{Protocol: "tcp", From: 80, To: 80}},
		WorkloadStatus: api.Status{Status: "active", Message: "ready ✓", Data: map[string]any{"k": "v"}, Since: since},
	}
	for name, ms := range map[string]*api.MachineState{
		"empty": {},
		"bare":  {ModelUUID: "u", Units: map[string]*api.UnitRemoteState{}, ControllerAddresses: []string{}},
		"dead":  {ModelUUID: "u", ModelName: "m", Machine: "0", Life: api.Dead, Units: map[string]*api.UnitRemoteState{}},
		"full": {ModelUUID: "u-1", ModelName: "bench\tmodel", Machine: "12", Life: api.Alive,
			Addresses: []string{"10.0.0.1"}, ControllerAddresses: []string{"127.0.0.1:1", "127.0.0.1:2"},
			UpdateStatusInterval: 5 * time.Minute, AutoRetry: true,
			Units: map[string]*api.UnitRemoteState{
				"web/10": full,
				"web/9":  {Unit: "web/9", Application: "web", Config: map[string]any{}, Relations: map[int]*api.RelationRemoteState{}},
				"sub/0":  {Unit: "sub/0", Config: nil, Relations: nil, WorkloadStatus: api.Status{Status: "waiting"}},
			},
			Tasks: []api.TaskRef{{ID: "4", Action: api.ExecAction, Params: map[string]any{"command": "uname -a"}, Parallel: true, Status: "running"}},
			Migration: &api.AgentMigration{ID: "mig-1", Phase: api.MigrationValidation,
				Target: &api.TargetController{ControllerUUID: "c", Addresses: []string{"127.0.0.1:3"}, CACert: "-----BEGIN CERTIFICATE-----\n"}}},
		"quiesced": {ModelUUID: "u", Units: map[string]*api.UnitRemoteState{}, Migration: &api.AgentMigration{ID: "mig-1", Phase: api.MigrationQuiesce}},
	} {
		want, err := json.Marshal(ms)
		if err != nil {
			t.Fatal(err)
		}
		got, err := appendMachineState([]byte("prefix"), ms)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if string(got[6:]) != string(want) {
			t.Errorf("%s:\n got %s\nwant %s", name, got[6:], want)
		}
	}
}
