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

// TestShowModelShapeGolden: show-model --format json is juju show-model's
// shape keyed by the model's name, with every field jubilant's ModelInfo
// requires (name, short-name, model-uuid, model-type, controller-uuid,
// controller-name, is-controller, cloud, life).
func TestShowModelShapeGolden(t *testing.T) {
	created := time.Date(2026, 11, 21, 20, 0, 0, 0, time.UTC)
	m := &api.Model{UUID: "6a1f0c2e-0000-4000-8000-0000000000dd", Name: "demo", Owner: "admin", Life: api.Alive,
		Status: api.Status{Status: "available", Since: created}, CreatedAt: created, Config: map[string]any{"automatically-retry-hooks": true}}
	st := &api.ModelStatus{Cloud: "localhost", Region: "localhost", Version: "0.1.0"}
	var out bytes.Buffer
	if err := modelcmd.WriteFormatted(&out, "json", map[string]any{m.Name: modelInfoView(m, "local", "c0ffee00-0000-4000-8000-000000000001", st)}); err != nil {
		t.Fatal(err)
	}
	modelcmdtest.Golden(t, "show-model-json.golden", out.Bytes())
	var back map[string]map[string]any
	if err := json.Unmarshal(out.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"name", "short-name", "model-uuid", "model-type", "controller-uuid", "controller-name", "is-controller", "cloud", "life"} {
		if _, ok := back["demo"][k]; !ok {
			t.Errorf("show-model lacks %q, which jubilant requires", k)
		}
	}
}

// TestShowModelMigratingAtController: a controller's model record that
// takes part in a migration shows in status as Juju's migration and
// migration-start; the source says its minion phase and target.
func TestShowModelMigratingAtController(t *testing.T) {
	since := time.Date(2026, 11, 21, 21, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		mm   api.ModelMigration
		want string
	}{
		{api.ModelMigration{ID: "mig-1", Role: api.MigrationSource, Since: since}, "migrating: QUIESCE"},
		{api.ModelMigration{ID: "mig-1", Role: api.MigrationSource, Since: since, Phase: api.MigrationValidation,
			Target: &api.TargetController{ControllerName: "west"}}, "migrating: VALIDATION (to controller west)"},
		{api.ModelMigration{ID: "mig-1", Role: api.MigrationTarget, Since: since}, "importing: migration mig-1"},
	} {
		m := &api.Model{UUID: "6a1f0c2e-0000-4000-8000-0000000000dd", Name: "demo", Owner: "admin", Life: api.Alive, Migration: &c.mm}
		view := modelInfoView(m, "local", "c0ffee00-0000-4000-8000-000000000001", nil)
		addModelMigration(view, m.Migration)
		st := view["status"].(map[string]any)
		if st["migration"] != c.want || st["migration-start"] != since {
			t.Errorf("%+v: status %v, want migration %q", c.mm, st, c.want)
		}
	}
}
