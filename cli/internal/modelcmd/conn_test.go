package modelcmd_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/cli/internal/clientstore"
	"github.com/droverhq/drover/cli/internal/modelcmd"
	"github.com/droverhq/drover/cli/internal/modelcmd/modelcmdtest"
)

// TestExplainKeepsTheServersRemedy: a refusal gets the generic hint unless
// the server already said what to do; at a hub, the hub's remedies (a
// controller's would say to re-register the controller, or to bootstrap
// one).
func TestExplainKeepsTheServersRemedy(t *testing.T) {
	for _, c := range []struct {
		code api.Code
		msg  string
		hub  bool
		want string
	}{
		{api.CodeForbidden, "user bob is disabled (an administrator may enable it again)", true, "user bob is disabled (an administrator may enable it again)"},
		{api.CodeForbidden, "reading the audit log needs audit_viewer", false, "reading the audit log needs audit_viewer\n(your user lacks the access this needs; ask a controller or model admin)"},
		{api.CodeForbidden, "reading the audit log needs audit_viewer", true, "reading the audit log needs audit_viewer\n(your user lacks the access this needs; ask an administrator of the model, its organization or the hub)"},
		{api.CodeUnauthorized, "authentication required", false, "authentication required\n(the controller rejected the credentials in the client store; re-register the controller)"},
		{api.CodeUnauthorized, "authentication required", true, "authentication required\n(the hub session has ended and could not be renewed; run 'drover login' again)"},
		{api.CodeUnavailable, "cannot reach the hub at h:1", true, "cannot reach the hub at h:1\n(is the hub running? 'drover show-controller' shows its address)"},
		{api.CodeUnavailable, "controller unavailable: east: refused ('drover controllers' shows their health)", true, "controller unavailable: east: refused ('drover controllers' shows their health)"},
	} {
		if got := modelcmd.Explain(fmt.Errorf("wrapped: %w", &api.Error{Code: c.code, Message: c.msg}), c.hub); got != "wrapped: "+c.want {
			t.Errorf("explain(%q, hub %v) = %q, want %q", c.msg, c.hub, got, "wrapped: "+c.want)
		}
	}
}

// TestModelNamedAsTheUserKnowsIt: a command on another owner's model
// names it OWNER/NAME, in its messages and in the client's cache (where
// destroy-model forgets it): the name alone means the user's own model.
func TestModelNamedAsTheUserKnowsIt(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"models": []api.Model{
			{UUID: "6a1f0c2e-0000-4000-8000-00000000000a", Name: "shop", Owner: "bob@example.com"},
			{UUID: "6a1f0c2e-0000-4000-8000-00000000000b", Name: "own", Owner: "alice@example.com"}}})
	})
	a, _, _ := modelcmdtest.AtFakeHub(t, mux) // logged in as alice@example.com
	dir, err := clientstore.DefaultStoreDir(a.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	a.Store = &clientstore.Store{Dir: dir} // as Run sets it
	for ref, want := range map[string]string{"shop": "bob@example.com/shop", "bob@example.com/shop": "bob@example.com/shop", "own": "own"} {
		mc, err := a.DialModel(t.Context(), ref)
		if err != nil {
			t.Fatalf("%s: %v", ref, err)
		}
		mc.Client.Close()
		if mc.Model != want {
			t.Errorf("%s: the command names the model %q, want %q", ref, mc.Model, want)
		}
	}
}
