package model

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/spf13/cobra"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/cli/internal/clientstore"
	"github.com/droverhq/drover/cli/internal/modelcmd/modelcmdtest"
)

const hubModelUUID = "6a1f0c2e-0000-4000-8000-0000000000cc"

// runAtFakeHub runs the command mk makes with args on model "m" of a fake
// hub serving h (GET /v1/models is served here), as a script would.
func runAtFakeHub(t *testing.T, h http.Handler, mk func(*Commands) *cobra.Command, args ...string) (string, string, error) {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"models": []api.Model{{UUID: hubModelUUID, Name: "m", Owner: "alice@example.com"}}})
	})
	mux.Handle("/", h)
	e, out, errb := modelcmdtest.AtFakeHub(t, mux)
	dir, err := clientstore.DefaultStoreDir(e.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	e.Store = &clientstore.Store{Dir: dir}
	cmd := mk(&Commands{Env: e})
	cmd.SetArgs(append([]string{"-m", "m"}, args...))
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetErr(&bytes.Buffer{})
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	err = cmd.ExecuteContext(t.Context())
	return out.String(), errb.String(), err
}

func fixtureModelConfig() map[string]any {
	return map[string]any{"update-status-hook-interval": "10m", "automatically-retry-hooks": true,
		"logging-config": "<root>=INFO", "ftp-proxy": "http://proxy:3128"}
}

// TestModelConfigShapeGolden: model-config lists Attribute, From, Value
// as Juju's table does, and {KEY: {Value, Source}} in JSON and YAML, which
// jubilant reads.
func TestModelConfigShapeGolden(t *testing.T) {
	for _, format := range []string{"tabular", "json", "yaml"} {
		var out bytes.Buffer
		if err := writeModelConfig(&out, format, fixtureModelConfig()); err != nil {
			t.Fatal(err)
		}
		modelcmdtest.Golden(t, "model-config-"+format+".golden", out.Bytes())
	}
}

// TestModelConfigWarnsOfUnknownKeys: setting a key the model's config does
// not hold warns as Juju does, and sets it all the same.
func TestModelConfigWarnsOfUnknownKeys(t *testing.T) {
	var patched api.ConfigChange
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models/"+hubModelUUID+"/config", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(fixtureModelConfig())
	})
	mux.HandleFunc("PATCH /v1/models/"+hubModelUUID+"/config", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewDecoder(r.Body).Decode(&patched)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(patched.Set)
	})
	_, stderr, err := runAtFakeHub(t, mux, (*Commands).ModelConfigCmd, "update-stauts-hook-interval=1m", "ftp-proxy=x")
	if err != nil {
		t.Fatal(err)
	}
	if want := `WARNING key "update-stauts-hook-interval" is not defined in the current model configuration: possible misspelling` + "\n"; stderr != want {
		t.Errorf("stderr %q, want %q", stderr, want)
	}
	if patched.Set["update-stauts-hook-interval"] != "1m" || patched.Set["ftp-proxy"] != "x" {
		t.Errorf("set %v", patched.Set)
	}
}

// TestModelConstraints: set-model-constraints sends the constraints
// normalized (sizes in M), and model-constraints prints the model's, as
// text or, with --format json, as Juju's object.
func TestModelConstraints(t *testing.T) {
	cons := "cores=2"
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models/"+hubModelUUID+"/constraints", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(api.ModelConstraints{Constraints: cons})
	})
	mux.HandleFunc("POST /v1/models/"+hubModelUUID+"/constraints", func(w http.ResponseWriter, r *http.Request) {
		var req api.SetModelConstraintsRequest
		_ = json.NewDecoder(r.Body).Decode(&req)
		cons = req.Constraints
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(api.Model{UUID: hubModelUUID, Name: "m", Constraints: cons})
	})
	if _, _, err := runAtFakeHub(t, mux, (*Commands).SetModelConstraintsCmd, "mem=4G", "arch=amd64"); err != nil {
		t.Fatal(err)
	}
	if cons != "mem=4096M arch=amd64" {
		t.Errorf("constraints sent %q", cons)
	}
	out, _, err := runAtFakeHub(t, mux, (*Commands).ModelConstraintsCmd)
	if err != nil || out != "mem=4096M arch=amd64\n" {
		t.Errorf("model-constraints: %q %v", out, err)
	}
	out, _, err = runAtFakeHub(t, mux, (*Commands).ModelConstraintsCmd, "--format", "json")
	if err != nil || out != `{"arch":"amd64","mem":4096}`+"\n" {
		t.Errorf("model-constraints --format json: %q %v", out, err)
	}
	if _, _, err := runAtFakeHub(t, mux, (*Commands).SetModelConstraintsCmd, "memory=4G"); err == nil {
		t.Error("an unknown constraint was accepted")
	}
}
