package spoke

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/droverhq/drover/api"
)

// TestApplicationWritesAnswerWithTheirEffect sends an application's config
// changes, scale and expose to a follower: each answers with the
// application (or its config) as the write left it, at the write's index,
// though the leader applied it; config mistakes are refused with the
// option named, and nothing is written.
func TestApplicationWritesAnswerWithTheirEffect(t *testing.T) {
	c := newTestCluster(t, 3)
	ctx := t.Context()
	l := c.leader()
	lc := c.client(l)
	cl, other := c.client((l+1)%3), c.client((l+2)%3)
	model := deployKV(t, lc, "writes")
	// The writes below read the application on the follower before they
	// propose: let it catch up with the deploy first.
	if _, err := cl.Model(model).Application(ctx, "kv", api.ReadOptions{Index: lc.Index()}); err != nil {
		t.Fatal(err)
	}

	// checkConfig fails t unless cfg holds want (value and source by
	// option), and another node reading at the index the write answered
	// with sees the same.
	checkConfig := func(what string, cfg *api.ApplicationConfig, want map[string]api.ConfigOption) {
		t.Helper()
		got := map[string]api.ConfigOption{}
		for name, o := range cfg.Settings {
			got[name] = api.ConfigOption{Value: o.Value, Source: o.Source}
		}
		if cfg.Application != "kv" || !reflect.DeepEqual(got, want) {
			t.Fatalf("%s answered %s %v, want %v", what, cfg.Application, got, want)
		}
		again, err := other.Model(model).ApplicationConfig(ctx, "kv", api.ReadOptions{Index: cl.Index()})
		if err != nil || !reflect.DeepEqual(again, cfg) {
			t.Fatalf("%s: another node at index %d reads %+v, %v; the write answered %+v", what, cl.Index(), again, err, cfg)
		}
	}
	before := cl.Index()
	cfg, err := cl.Model(model).SetApplicationConfig(ctx, "kv", api.ConfigChange{Set: map[string]any{"port": 7100}, SetStrings: map[string]string{"debug": "true"}})
	if err != nil {
		t.Fatal(err)
	}
	if cl.Index() <= before {
		t.Fatalf("the config write answered at index %d, not after %d", cl.Index(), before)
	}
	checkConfig("setting port and debug", cfg, map[string]api.ConfigOption{
		"port":  {Value: float64(7100), Source: "user"},
		"debug": {Value: true, Source: "user"},
		"mode":  {Value: "memory", Source: "default"},
	})
	cfg, err = cl.Model(model).SetApplicationConfig(ctx, "kv", api.ConfigChange{Reset: []string{"port"}, SetStrings: map[string]string{"debug": ""}, Set: map[string]any{"mode": "disk"}})
	if err != nil {
		t.Fatal(err)
	}
	checkConfig("resetting port and debug", cfg, map[string]api.ConfigOption{
		"port":  {Value: float64(7000), Source: "default"},
		"debug": {Value: false, Source: "default"},
		"mode":  {Value: "disk", Source: "user"},
	})

	for _, tc := range []struct {
		name   string
		change api.ConfigChange
		msg    string
	}{
		{"unknown typed", api.ConfigChange{Set: map[string]any{"nope": 1}}, `unknown option "nope"`},
		{"unknown string", api.ConfigChange{SetStrings: map[string]string{"nope": "1"}}, `unknown option "nope"`},
		{"unknown reset", api.ConfigChange{Reset: []string{"nope"}}, `unknown option "nope"`},
		{"mistyped", api.ConfigChange{Set: map[string]any{"port": "seven"}}, "port: expected int"},
		{"mistyped string", api.ConfigChange{SetStrings: map[string]string{"debug": "yes"}, Set: map[string]any{"mode": "x"}}, "debug: expected boolean"},
	} {
		if _, err := cl.Model(model).SetApplicationConfig(ctx, "kv", tc.change); !errors.Is(err, api.ErrInvalid) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: %v, want invalid with %q", tc.name, err, tc.msg)
		}
	}
	if _, err := cl.Model(model).SetApplicationConfig(ctx, "nope", api.ConfigChange{Set: map[string]any{"port": 1}}); !errors.Is(err, api.ErrNotFound) {
		t.Errorf("config of a missing application: %v, want not found", err)
	}
	if cfg, err := cl.Model(model).ApplicationConfig(ctx, "kv", api.ReadOptions{Consistent: true}); err != nil || cfg.Settings["mode"].Value != "disk" {
		t.Fatalf("after the refused changes: %+v, %v", cfg, err)
	}

	at := cl.Index()
	app, err := cl.Model(model).Scale(ctx, "kv", 2)
	if err != nil || app.Name != "kv" || app.Scale != 2 || cl.Index() <= at {
		t.Fatalf("scale answered %+v at index %d, %v", app, cl.Index(), err)
	}
	at = cl.Index()
	app, err = cl.Model(model).Expose(ctx, "kv", true)
	if err != nil || app.Name != "kv" || !app.Exposed || app.Scale != 2 || cl.Index() <= at {
		t.Fatalf("expose answered %+v at index %d, %v", app, cl.Index(), err)
	}
	if _, err := cl.Model(model).Expose(ctx, "nope", true); !errors.Is(err, api.ErrNotFound) {
		t.Errorf("exposing a missing application: %v, want not found", err)
	}
}
