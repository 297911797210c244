package hub_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/droverhq/drover/authz"
	"github.com/droverhq/drover/hub/internal/store"
)

// TestControllersByNameTellOthersNothing: every route that takes a
// controller's name answers a caller who cannot see it exactly as for a
// name nobody registered (404 naming what they gave, never the UUID), and
// the audit log's controller filter takes a name for those who may read
// the controller's entries.
func TestControllersByNameTellOthersNothing(t *testing.T) {
	f := newFixture(t)
	olga := f.token(f.olga, time.Minute, "")
	if code, b := f.do("GET", "/v1/audit?controller=east", olga, nil); code != http.StatusNotFound ||
		!strings.Contains(string(b), `controller \"east\"`) || strings.Contains(string(b), f.ctrl.UUID) {
		t.Errorf("the audit of another tenant's controller by name: %d %s", code, b)
	}
	// A name no controller has matches the entries recorded under it (a
	// removed controller's): none here.
	if code, b := f.do("GET", "/v1/audit?controller=nowhere", olga, nil); code != http.StatusOK || !strings.Contains(string(b), `"entries":[]`) {
		t.Errorf("the audit of a controller nobody registered: %d %s", code, b)
	}
	for _, name := range []string{"east", "nowhere"} {
		for _, c := range []struct{ method, path string }{
			{"GET", "/v1/controllers/" + name},
			{"DELETE", "/v1/controllers/" + name},
		} {
			code, b := f.do(c.method, c.path, olga, nil)
			if code != http.StatusNotFound || !strings.Contains(string(b), `controller \"`+name+`\"`) || strings.Contains(string(b), f.ctrl.UUID) {
				t.Errorf("%s %s as another tenant: %d %s", c.method, c.path, code, b)
			}
		}
		code, b := f.do("POST", "/v1/grants", olga, map[string]string{"user": "dave@example.com", "level": "login", "controller": name})
		if code != http.StatusNotFound || strings.Contains(string(b), f.ctrl.UUID) {
			t.Errorf("grant on controller %s as another tenant: %d %s", name, code, b)
		}
	}

	// Filtering by name: alice administers acme and so east; an auditor
	// who holds audit_viewer on east alone (no login there) may too.
	other := store.Controller{UUID: uuid.NewString(), Name: "north", Org: "acme", Region: "north"}
	if err := f.st.Controllers.Upsert(t.Context(), other); err != nil {
		t.Fatal(err)
	}
	for _, a := range []store.AuditEntry{
		{Org: "acme", ControllerUUID: f.ctrl.UUID, Operation: "add-model", Actor: "alice@example.com"},
		{Org: "acme", ControllerUUID: other.UUID, Operation: "add-model", Actor: "alice@example.com"},
	} {
		a.At, a.Result = time.Now(), store.ResultOK
		if err := f.st.Audit.Append(t.Context(), a); err != nil {
			t.Fatal(err)
		}
	}
	auditor := f.user("audrey", "acme")
	f.grant(authz.UserObject(auditor.ID), authz.AuditViewer, authz.ControllerObject(f.ctrl.UUID))
	f.settle()
	for _, who := range []store.Identity{f.alice, auditor} {
		code, b := f.do("GET", "/v1/audit?controller=east", f.token(who, time.Minute, ""), nil)
		var out struct {
			Entries []store.AuditEntry `json:"entries"`
		}
		if code != http.StatusOK || json.Unmarshal(b, &out) != nil || len(out.Entries) == 0 {
			t.Errorf("audit of controller east as %s: %d %s", who.Email, code, b)
			continue
		}
		for _, e := range out.Entries {
			if e.ControllerUUID != f.ctrl.UUID {
				t.Errorf("audit of controller east as %s has an entry of %q", who.Email, e.ControllerUUID)
			}
		}
	}
	if code, b := f.do("GET", "/v1/audit?controller=north", f.token(auditor, time.Minute, ""), nil); code != http.StatusNotFound {
		t.Errorf("audit of a controller the auditor may not read: %d %s", code, b)
	}
}
