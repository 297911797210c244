package hub_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/hub"
	"github.com/droverhq/drover/spoke"
	"github.com/droverhq/drover/tests/testkit"
)

// TestAdoptionIsBounded: the index adopts at most MaxControllerModels
// models made on one controller directly, so a controller an organization
// runs cannot fill the hub's database with models; the rest are counted in
// the controller's health and a metric, and adopted once there is room
// and the controller tells of them again. A model placed through the hub
// is never refused.
func TestAdoptionIsBounded(t *testing.T) {
	e := newServedEnv(t, func(c *hub.Config) { c.MaxControllerModels, c.IndexResyncEvery = 3, 2*time.Second })
	ctx := t.Context()
	_, stop, admin, _ := runRegisteredNode(t, e, t.TempDir(), func(c *spoke.Config) { c.KeepaliveInterval = 200 * time.Millisecond })
	defer stop()
	if code, out := e.do(http.MethodPost, "/v1/models", e.hubAdmin(), map[string]string{"name": "placed", "region": "east"}); code != http.StatusCreated {
		t.Fatalf("add-model placed: %d %s", code, out)
	}
	east := e.controllerNamed("east")
	testkit.EventuallyWithin(t, 30*time.Second, func() (bool, error) {
		n, err := e.st.Controllers.CountModels(ctx, east.UUID)
		return n == 1, err
	}, "the placed model indexed")
	var made []*api.Model
	for _, name := range []string{"m1", "m2", "m3", "m4"} {
		m, err := admin.AddModel(ctx, api.AddModelRequest{Name: name})
		if err != nil {
			t.Fatal(err)
		}
		made = append(made, m)
	}
	indexed := func() (in, out []string) {
		for _, m := range made {
			if _, err := e.st.Models.ByUUID(ctx, m.UUID); err == nil {
				in = append(in, m.Name)
			} else {
				out = append(out, m.Name)
			}
		}
		return in, out
	}
	testkit.EventuallyWithin(t, 30*time.Second, func() (bool, error) {
		c, err := e.st.Controllers.ByName(ctx, "east")
		return err == nil && c.EventIndex >= admin.Index() && c.Health["models-not-indexed"] != nil, err
	}, "the controller's health says models are left out")
	in, out := indexed()
	if len(in) != 2 || len(out) != 2 {
		t.Fatalf("indexed %v, left out %v: want 2 of the 4 (the limit of 3 less the placed model)", in, out)
	}
	c := e.controllerNamed("east")
	if c.Health["models-not-indexed"] != float64(2) || c.Health["model-limit"] != float64(3) {
		t.Errorf("health %v: want 2 models not indexed, limit 3", c.Health)
	}
	if n := e.metric("drover_hub_models_not_adopted_total"); n < 2 {
		t.Errorf("drover_hub_models_not_adopted_total %v, want at least 2", n)
	}
	// A placed model still goes: the bound is on adoption.
	if code, out := e.do(http.MethodPost, "/v1/models", e.hubAdmin(), map[string]string{"name": "placed-2", "region": "east"}); code != http.StatusCreated {
		t.Fatalf("add-model placed-2 at the bound: %d %s", code, out)
	}

	// Room again: two adopted models go; the left-out ones are adopted
	// when the controller lists them again (its next reset, here every 2s).
	for _, name := range in {
		for _, m := range made {
			if m.Name == name {
				if _, err := admin.Model(m.UUID).Destroy(ctx, true); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	testkit.EventuallyWithin(t, 30*time.Second, func() (bool, error) {
		in, left := indexed()
		got, err := e.st.Controllers.ByName(ctx, "east")
		return len(in) == 1 && len(left) == 3 && err == nil && got.Health["models-not-indexed"] == float64(1), err
	}, "one left-out model adopted (with the two placed, at the limit again), one still left out")
}

// TestIndexWritesArePaced: a controller whose events write to the index
// faster than IndexWriteRate is read more slowly, so it cannot keep the
// hub's database busy; what it says still all reaches the index.
func TestIndexWritesArePaced(t *testing.T) {
	e := newServedEnv(t, func(c *hub.Config) { c.IndexWriteRate = 2 }) // bursts of 20
	ctx := t.Context()
	_, stop, admin, _ := runRegisteredNode(t, e, t.TempDir(), func(c *spoke.Config) { c.KeepaliveInterval = 200 * time.Millisecond })
	defer stop()
	var made []string
	for i := range 25 {
		m, err := admin.AddModel(ctx, api.AddModelRequest{Name: fmt.Sprintf("m%d", i)})
		if err != nil {
			t.Fatal(err)
		}
		made = append(made, m.UUID)
	}
	testkit.EventuallyWithin(t, 60*time.Second, func() (bool, error) {
		for _, id := range made {
			if _, err := e.st.Models.ByUUID(ctx, id); err != nil {
				return false, nil
			}
		}
		return true, nil
	}, "all 25 models indexed")
	if n := e.metric("drover_hub_index_writes_slowed_total"); n < 1 {
		t.Errorf("drover_hub_index_writes_slowed_total %v: 25 writes at 2/s in bursts of 20 waited none", n)
	}
}
