package controller

import (
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/cli/internal/clientstore"
	"github.com/droverhq/drover/cli/internal/modelcmd/modelcmdtest"
)

// TestControllersColumnsAsJuju: the controllers table has Juju's
// Cloud/Region and Models columns (the models the client knows there),
// and the JSON carries cloud, region and model-count.
func TestControllersColumnsAsJuju(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/controller" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(api.ControllerInfo{UUID: "c0ffee00-0000-4000-8000-000000000001", Name: "lab", Version: "0.1.0",
			Nodes: []api.NodeInfo{{ID: "0", Voter: true}}})
	}))
	t.Cleanup(srv.Close)
	e, out, _ := modelcmdtest.NewEnv(t)
	err := e.Store.Update(func(s *clientstore.State) error {
		s.Controllers["lab"] = &clientstore.ControllerDetails{UUID: "c0ffee00-0000-4000-8000-000000000001",
			APIAddresses: []string{strings.TrimPrefix(srv.URL, "https://")},
			CACert:       string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}))}
		s.Accounts["lab"] = &clientstore.Account{User: "admin", Password: "x", Access: "superuser"}
		s.Models["lab"] = &clientstore.ControllerModels{Models: map[string]clientstore.ModelDetails{"a": {UUID: "u1"}, "b": {UUID: "u2"}}, CurrentModel: "a"}
		s.CurrentController = "lab"
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	a := &Commands{Env: e}
	if err := a.controllers(t.Context(), "tabular"); err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^Controller\s+Model\s+User\s+Access\s+Cloud/Region\s+Models\s+Nodes\s+HA\s+Version$`).MatchString(out.String()) ||
		!regexp.MustCompile(`(?m)^lab\*\s+a\s+admin\s+superuser\s+localhost\s+2\s+1\s+none\s+0\.1\.0$`).MatchString(out.String()) {
		t.Errorf("controllers:\n%s", out)
	}
	out.Reset()
	if err := a.controllers(t.Context(), "json"); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Controllers map[string]map[string]any `json:"controllers"`
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if c := got.Controllers["lab"]; c["cloud"] != "localhost" || c["model-count"] != float64(2) {
		t.Errorf("controllers --format json: %v", c)
	}
}
