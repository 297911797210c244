package model

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/cli/internal/modelcmd"
	"github.com/droverhq/drover/cli/internal/modelcmd/modelcmdtest"
)

// TestModelsShapeGolden: models --format json is juju models' shape
// (Juju 3.6's ModelSummarySet): each model has the fields Juju always
// prints (name, short-name, model-uuid, model-type, controller-uuid,
// controller-name, is-controller, cloud, life), the cloud and its region
// apart, and its status as an object (current, message, since), at a
// controller and at a hub alike.
func TestModelsShapeGolden(t *testing.T) {
	created := time.Date(2026, 11, 21, 20, 0, 0, 0, time.UTC)
	onCtl := api.Model{UUID: "6a1f0c2e-0000-4000-8000-0000000000dd", Name: "demo", Owner: "admin", Life: api.Alive,
		Status: api.Status{Status: "available", Since: created}, CreatedAt: created}
	fs := &api.FullStatus{Model: api.ModelStatus{Cloud: "localhost", Region: "localhost", Version: "0.1.0"},
		Machines:     map[string]api.MachineStatus{"0": {}},
		Applications: map[string]api.ApplicationStatus{"kv": {Units: map[string]api.UnitStatus{"kv/0": {}, "kv/1": {}}}}}
	onHub := api.Model{UUID: "7b2f0c2e-0000-4000-8000-0000000000ee", Name: "shop", Owner: "bob@example.com", Life: api.Alive,
		Status: api.Status{Status: "busy", Message: "migrating"}, CreatedAt: created,
		Index: &api.ModelIndex{Controller: "east", ControllerUUID: "c0ffee00-0000-4000-8000-000000000002", Cloud: "lxd", Region: "home",
			Applications: 1, Machines: 2, Units: 3}}
	models := []modelSummary{
		summaryOf(onCtl, fs, "local", "c0ffee00-0000-4000-8000-000000000001", onCtl.UUID),
		summaryOf(onHub, nil, "hub", "", onCtl.UUID),
	}
	var out bytes.Buffer
	if err := modelcmd.WriteFormatted(&out, "json", map[string]any{"models": models, "current-model": "demo"}); err != nil {
		t.Fatal(err)
	}
	modelcmdtest.Golden(t, "models-json.golden", out.Bytes())

	var back struct {
		Models []map[string]any `json:"models"`
	}
	if err := json.Unmarshal(out.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	for _, m := range back.Models {
		for _, k := range []string{"name", "short-name", "model-uuid", "model-type", "controller-uuid", "controller-name", "is-controller", "cloud", "life", "status"} {
			if _, ok := m[k]; !ok {
				t.Errorf("model %v lacks %q, which Juju always prints", m["name"], k)
			}
		}
		if st, ok := m["status"].(map[string]any); !ok || st["current"] == "" {
			t.Errorf("model %v: status %v is not Juju's {current, message, since}", m["name"], m["status"])
		}
	}
	if m := back.Models[0]; m["cloud"] != "localhost" || m["region"] != "localhost" || m["controller-name"] != "local" {
		t.Errorf("a controller's model: %v", m)
	}
	if m := back.Models[1]; m["cloud"] != "lxd" || m["region"] != "home" || m["controller-name"] != "hub/east" ||
		m["controller-uuid"] != "c0ffee00-0000-4000-8000-000000000002" {
		t.Errorf("a hub's model: %v", m)
	}
}
