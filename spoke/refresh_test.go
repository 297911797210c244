package spoke

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"testing"

	"github.com/droverhq/drover/api"
)

// kvVariant writes a charm named kv, with kv's metadata and the given
// config.yaml, and uploads it.
func (e *agentEnv) kvVariant(t *testing.T, config string) *api.Charm {
	t.Helper()
	dir := t.TempDir()
	meta, err := os.ReadFile("testdata/charms/kv/metadata.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"metadata.yaml": meta, "config.yaml": []byte(config)} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ch, err := e.cl.UploadCharm(t.Context(), bytes.NewReader(archive(t, dir)))
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

// TestRefreshChecksTheCharmAndCarriesSettings: a refresh refuses the
// charm the application already runs and, without switch, a charm of
// another name; it keeps the settings the new charm accepts, drops the
// others, applies the caller's, and tells the agents whether units in
// error are forced.
func TestRefreshChecksTheCharmAndCarriesSettings(t *testing.T) {
	e := newAgentEnv(t, 1)
	ctx := t.Context()
	kv0 := e.dial(t, 0, "0")
	if _, err := e.cl.Model(e.model).SetApplicationConfig(ctx, "kv", api.ConfigChange{
		Set: map[string]any{"port": 7001, "mode": "disk", "debug": true}}); err != nil {
		t.Fatal(err)
	}
	kv, err := e.cl.Model(e.model).Application(ctx, "kv")
	if err != nil {
		t.Fatal(err)
	}
	web, err := e.cl.Model(e.model).Application(ctx, "web")
	if err != nil {
		t.Fatal(err)
	}

	_, err = e.cl.Model(e.model).SetCharm(ctx, "kv", api.SetCharmRequest{CharmSHA256: kv.CharmSHA256})
	wantCode(t, "the same charm", err, api.CodeInvalid, "already runs this charm")
	// Constraints (set-constraints) are checked and kept normalized.
	if a, err := e.cl.Model(e.model).SetConstraints(ctx, "kv", "mem=4G  cores=2"); err != nil || a.Constraints != "mem=4096M cores=2" {
		t.Fatalf("set-constraints: %+v %v", a, err)
	}
	_, err = e.cl.Model(e.model).SetConstraints(ctx, "kv", "cores=many")
	wantCode(t, "bad constraints", err, api.CodeInvalid, "whole number")
	_, err = e.cl.Model(e.model).SetCharm(ctx, "kv", api.SetCharmRequest{CharmSHA256: web.CharmSHA256})
	wantCode(t, "another charm without switch", err, api.CodeInvalid, "crossgrade")
	// With switch the name passes; web lacks the endpoints kv's
	// integrations use, which the state refuses.
	_, err = e.cl.Model(e.model).SetCharm(ctx, "kv", api.SetCharmRequest{CharmSHA256: web.CharmSHA256, Switch: true})
	wantCode(t, "a switch breaking integrations", err, api.CodeConflict, `it has no endpoint "cluster", which relation "kv:cluster" uses (a peer relation`)
	_, err = e.cl.Model(e.model).SetCharm(ctx, "kv", api.SetCharmRequest{CharmSHA256: kv.CharmSHA256[:60] + "0000"})
	wantCode(t, "an unknown charm", err, api.CodeNotFound, "")

	// kv2 drops "mode", makes "debug" a string and adds "size".
	kv2 := e.kvVariant(t, `options:
  port: {type: int, default: 7000}
  debug: {type: string, default: "off"}
  size: {type: int, default: 1}
`)
	_, err = e.cl.Model(e.model).SetCharm(ctx, "kv", api.SetCharmRequest{CharmSHA256: kv2.SHA256, Config: map[string]any{"mode": "x"}})
	wantCode(t, "an option the new charm lacks", err, api.CodeInvalid, `unknown option "mode"`)
	a, err := e.cl.Model(e.model).SetCharm(ctx, "kv", api.SetCharmRequest{CharmSHA256: kv2.SHA256,
		Config: map[string]any{"size": 4}, ConfigStrs: map[string]string{"debug": "loud"}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"port": float64(7001), "size": float64(4), "debug": "loud"}
	if a.CharmSHA256 != kv2.SHA256 || a.CharmRevision != kv.CharmRevision+1 || !maps.Equal(a.Config, want) || a.ForceCharmUpgrade {
		t.Fatalf("after the refresh: sha %.12s revision %d config %v forced %v; want %.12s, %d, %v, false",
			a.CharmSHA256, a.CharmRevision, a.Config, a.ForceCharmUpgrade, kv2.SHA256, kv.CharmRevision+1, want)
	}
	kv0.waitState(t, "the new charm and its config", func(st *api.MachineState) bool {
		u := st.Units["kv/0"]
		_, mode := u.Config["mode"]
		return u.CharmSHA256 == kv2.SHA256 && !mode && u.Config["debug"] == "loud" && !u.ForceCharmUpgrade
	})

	// Forced: the agents hear it. Back to kv, not forced: they hear that
	// too, and "loud" (not a boolean) and "size" are dropped.
	kv3 := e.kvVariant(t, `options:
  port: {type: int, default: 7000}
  debug: {type: string, default: "on"}
  size: {type: int, default: 1}
`)
	if _, err := e.cl.Model(e.model).SetCharm(ctx, "kv", api.SetCharmRequest{CharmSHA256: kv3.SHA256, ForceUnits: true}); err != nil {
		t.Fatal(err)
	}
	kv0.waitState(t, "a forced upgrade", func(st *api.MachineState) bool {
		u := st.Units["kv/0"]
		return u.CharmSHA256 == kv3.SHA256 && u.ForceCharmUpgrade
	})
	a, err = e.cl.Model(e.model).SetCharm(ctx, "kv", api.SetCharmRequest{CharmSHA256: kv.CharmSHA256})
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]any{"port": float64(7001)}; !maps.Equal(a.Config, want) || a.CharmRevision != kv.CharmRevision+3 {
		t.Fatalf("back to kv: config %v revision %d; want %v, %d", a.Config, a.CharmRevision, want, kv.CharmRevision+3)
	}
	kv0.waitState(t, "no longer forced", func(st *api.MachineState) bool {
		u := st.Units["kv/0"]
		return u.CharmSHA256 == kv.CharmSHA256 && !u.ForceCharmUpgrade
	})

	// Trust (juju trust) reaches the agents, and goes again.
	for _, trust := range []bool{true, false} {
		if a, err := e.cl.Model(e.model).SetTrust(ctx, "kv", trust); err != nil || a.Trust != trust {
			t.Fatalf("trust %v: %+v %v", trust, a, err)
		}
		kv0.waitState(t, fmt.Sprintf("trust %v", trust), func(st *api.MachineState) bool { return st.Units["kv/0"].Trust == trust })
	}
}
