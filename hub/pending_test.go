package hub_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/hub/internal/store"
)

// TestGrantBeforeFirstLogin: as in JAAS, an administrator grants access to
// (and adds to a group) someone who has never logged in, by email; the
// hub says the grant is pending, show-model lists them, and their first
// login through the real issuer takes the identity over with its access.
// Revoking from an unknown email still finds nobody.
func TestGrantBeforeFirstLogin(t *testing.T) {
	f := newFixture(t)
	admin := f.token(f.alice, time.Minute, "")
	grant := map[string]string{"user": "Bob@Example.com", "level": "read", "model": f.model.UUID}
	for range 2 { // granting again names the same pending identity
		code, b := f.do("POST", "/v1/grants", admin, grant)
		var out struct {
			PendingUser string `json:"pending-user"`
		}
		if code != http.StatusOK || json.Unmarshal(b, &out) != nil || out.PendingUser != bob[0] {
			t.Fatalf("grant to someone who never logged in: %d %s", code, b)
		}
	}
	if code, b := f.do("POST", "/v1/groups/acme%2Fops/members", admin, map[string]string{"user": bob[0]}); code != http.StatusOK ||
		!strings.Contains(string(b), `"pending-user":"bob@example.com"`) {
		t.Fatalf("add to a group someone who never logged in: %d %s", code, b)
	}
	pending, err := f.st.Identities.ByEmail(t.Context(), bob[0])
	if err != nil || !pending.Pending() || pending.Org != "acme" {
		t.Fatalf("the pending identity: %+v %v", pending, err)
	}
	var m struct{ Users []api.ModelUser }
	f.get("/v1/models/"+f.model.UUID, admin, &m)
	listed := false
	for _, u := range m.Users {
		listed = listed || (u.Name == bob[0] && u.Access == "read" && u.LastLogin == nil)
	}
	if !listed {
		t.Errorf("show-model's users lack the pending user: %+v", m.Users)
	}
	// Revoking from a pending user is a plain revoke (204), and the
	// grant is made again for the login below.
	if code, b := f.do("DELETE", "/v1/grants", admin, grant); code != http.StatusNoContent {
		t.Errorf("revoke from the pending user: %d %s", code, b)
	}
	if code, b := f.do("POST", "/v1/grants", admin, grant); code != http.StatusOK {
		t.Fatalf("grant again: %d %s", code, b)
	}
	if code, b := f.do("DELETE", "/v1/grants", admin, map[string]string{"user": "carol@example.com", "level": "read", "model": f.model.UUID}); code != http.StatusNotFound {
		t.Errorf("revoke from an unknown email: %d %s", code, b)
	}
	if _, err := f.st.Identities.ByEmail(t.Context(), "carol@example.com"); err == nil {
		t.Error("a revoke made a pending identity")
	}
	entries, _, err := f.st.Audit.Query(t.Context(), store.AuditQuery{All: true, Operation: "grant", Limit: 10})
	if err != nil || len(entries) == 0 || entries[0].Details["pending-user"] != bob[0] {
		t.Errorf("the grant's audit entry does not say it is pending: %+v %v", entries, err)
	}

	// Bob's first login: the same identity, with its grant and membership.
	sess := f.deviceLogin(bob[0], bob[1])
	me := f.whoami(sess.AccessToken)
	if me.ID != pending.ID || me.Email != bob[0] || me.Issuer != idp.URL() {
		t.Fatalf("bob logged in as %+v, want the pending identity %s", me, pending.ID)
	}
	if code, b := f.do("GET", "/v1/models/"+f.model.UUID, sess.AccessToken, nil); code != http.StatusOK {
		t.Errorf("bob reads the model granted before his first login: %d %s", code, b)
	}
	var g api.GroupDetails
	f.get("/v1/groups/acme%2Fops", admin, &g)
	if len(g.Members) != 1 || g.Members[0].Name != bob[0] {
		t.Errorf("acme/ops members after bob's login: %+v", g.Members)
	}
	if again, err := f.st.Identities.ByEmail(t.Context(), bob[0]); err != nil || again.ID != pending.ID || again.Pending() {
		t.Errorf("after the login, bob is %+v (%v)", again, err)
	}
}
