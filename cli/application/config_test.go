package application

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/cli/internal/clientstore"
	"github.com/droverhq/drover/cli/internal/modelcmd"
	"github.com/droverhq/drover/cli/internal/modelcmd/modelcmdtest"
)

// TestConfigShapeGolden: 'config APP --format json|yaml' is juju config's
// shape, which jubilant reads: application, application-config (trust),
// charm, and settings of {default, description, source, type, value}.
func TestConfigShapeGolden(t *testing.T) {
	cfg := &api.ApplicationConfig{Application: "kv", Charm: "kv", Settings: map[string]api.ConfigOption{
		"port":  {Type: "int", Description: "Port to listen on.", Default: 7000, Value: 7001, Source: "user"},
		"debug": {Type: "boolean", Description: "Log more.", Default: false, Value: false, Source: "default"},
		"name":  {Type: "string", Description: "No default.", Source: "unset"},
	}}
	for _, format := range []string{"json", "yaml"} {
		var out bytes.Buffer
		if err := modelcmd.WriteFormatted(&out, format, viewConfig(cfg, true)); err != nil {
			t.Fatal(err)
		}
		modelcmdtest.Golden(t, "config-"+format+".golden", out.Bytes())
	}
}

// TestTrustScope: 'trust APP --scope cluster' is accepted as Juju's
// scripts pass it, --remove takes the trust back, and another scope is a
// usage error.
func TestTrustScope(t *testing.T) {
	const uuid = "6a1f0c2e-0000-4000-8000-0000000000bb"
	var sent []bool
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"models": []api.Model{{UUID: uuid, Name: "m", Owner: "alice@example.com"}}})
	})
	mux.HandleFunc("POST /v1/models/"+uuid+"/applications/kv/trust", func(w http.ResponseWriter, r *http.Request) {
		var req api.SetTrustRequest
		_ = json.NewDecoder(r.Body).Decode(&req)
		sent = append(sent, req.Trust)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(api.Application{Name: "kv", Trust: req.Trust})
	})
	e, _, _ := modelcmdtest.AtFakeHub(t, mux)
	dir, err := clientstore.DefaultStoreDir(e.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	e.Store = &clientstore.Store{Dir: dir}
	run := func(args ...string) error {
		cmd := (&Commands{Env: e}).TrustCmd()
		cmd.SetArgs(append([]string{"-m", "m"}, args...))
		cmd.SetOut(&bytes.Buffer{})
		cmd.SetErr(&bytes.Buffer{})
		cmd.SilenceUsage, cmd.SilenceErrors = true, true
		return cmd.ExecuteContext(t.Context())
	}
	if err := run("kv", "--scope", "cluster"); err != nil {
		t.Fatal(err)
	}
	if err := run("kv", "--remove"); err != nil {
		t.Fatal(err)
	}
	if err := run("kv", "--scope", "namespace"); err == nil || !strings.Contains(err.Error(), "only cluster scope") {
		t.Errorf("--scope namespace: %v", err)
	}
	if !slices.Equal(sent, []bool{true, false}) {
		t.Errorf("trust sent %v, want [true false]", sent)
	}
}
