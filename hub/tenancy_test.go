package hub_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/authz"
	"github.com/droverhq/drover/hub/internal/store"
)

// TestPlacementStaysInTheModelsOrganization (issue 26, finding 1): globex's
// administrator registers a private controller, west, and opens add-model
// on it to everyone. A user of acme never gets a model placed there, even
// with west the least loaded, nor by naming it; globex's administrator
// gains nothing over acme's model; and a member of globex needs the
// organization's add-model as well as the controller's.
func TestPlacementStaysInTheModelsOrganization(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	olga, gus, bob := e.user("olga", "globex"), e.user("gus", "globex"), e.user("bob", "acme")
	e.grant(authz.UserObject(olga.ID), authz.Administrator, authz.OrgObject("globex"))
	east := startSpoke(t, e) // shared, open to everyone
	west := startNamedSpoke(t, e, "west", "globex", false)
	for range 3 { // east is busy, west idle: least-loaded would pick west
		if err := e.st.Models.Insert(ctx, store.Model{UUID: newUUID(), Name: "load-" + newUUID()[:8], Org: "acme",
			Owner: bob.ID, ControllerUUID: east.UUID, UnitCount: 5}); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []string{east.UUID, west.UUID} {
		if err := e.st.Controllers.SetHealth(ctx, c, "connected", nil, 0, "", time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	e.settle()
	olgaTok, bobTok, gusTok := e.token(olga, time.Minute, ""), e.token(bob, time.Minute, ""), e.token(gus, time.Minute, "")

	// An organization's controller is not everyone's to use.
	if code, b := e.do(http.MethodPost, "/v1/grants", olgaTok,
		map[string]string{"user": "everyone", "level": "add-model", "controller": "west"}); code != http.StatusBadRequest {
		t.Errorf("grant add-model on a private controller to everyone: %d %s, want 400", code, b)
	}
	// Such grants written before they were refused reach no other tenant.
	e.grant(authz.Everyone, authz.CanAddModel, authz.ControllerObject(west.UUID))
	e.grant(authz.Everyone, authz.Reader, authz.ControllerObject(west.UUID))
	e.settle()

	b := e.want(t, "bob adds a model", http.StatusCreated, bobTok, http.MethodPost, "/v1/models", map[string]string{"name": "b1"})
	var m struct {
		UUID           string `json:"uuid"`
		ControllerUUID string `json:"controller-uuid"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if m.ControllerUUID != east.UUID {
		t.Errorf("acme's model went to controller %s, want the shared east (%s)", m.ControllerUUID, east.UUID)
	}
	if code, b := e.do(http.MethodPost, "/v1/models", bobTok, map[string]string{"name": "b2", "controller": "west"}); code != http.StatusForbidden ||
		!strings.Contains(string(b), "belongs to organization globex") {
		t.Errorf("bob names globex's controller: %d %s, want 403 saying whose it is", code, b)
	}
	if code, b := e.do(http.MethodGet, "/v1/models/"+m.UUID, olgaTok, nil); code != http.StatusNotFound {
		t.Errorf("globex's administrator reads acme's model: %d %s, want 404", code, b)
	}
	if code, b := e.do(http.MethodDelete, "/v1/models/"+m.UUID, olgaTok, nil); code != http.StatusNotFound {
		t.Errorf("globex's administrator destroys acme's model: %d %s, want 404", code, b)
	}

	// Within globex: the controller's add-model is not enough without the
	// organization's.
	if code, b := e.do(http.MethodPost, "/v1/models", gusTok, map[string]string{"name": "g1", "controller": "west"}); code != http.StatusForbidden {
		t.Errorf("gus, without globex's add-model, adds a model on west: %d %s, want 403", code, b)
	}
	if ms, err := west.Admin.Models(ctx); err != nil || len(ms) != 0 {
		t.Errorf("west hosts %+v (%v), want no models", ms, err)
	}
	e.want(t, "olga grants gus add-model on globex", http.StatusNoContent, olgaTok, http.MethodPost, "/v1/grants",
		map[string]string{"user": gus.ID, "level": "add-model", "organization": "globex"})
	e.want(t, "gus adds a model on west", http.StatusCreated, gusTok, http.MethodPost, "/v1/models",
		map[string]string{"name": "g1", "controller": "west"})
}

// TestOrgAdminCannotTouchAHubAdmin (issue 26, finding 3): an organization's
// administrator may not disable, enable or remove a hub administrator who
// is a member of the organization, nor change the members of a group that
// holds the hub's administration or remove it; a hub administrator may.
func TestOrgAdminCannotTouchAHubAdmin(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	alice, root, other := e.user("alice", "acme"), e.user("root", "acme"), e.user("other", "acme")
	e.grant(authz.UserObject(alice.ID), authz.Administrator, authz.OrgObject("acme"))
	e.grant(authz.UserObject(root.ID), authz.Administrator, authz.HubObject())
	e.grant(authz.UserObject(other.ID), authz.Administrator, authz.HubObject())
	ops, err := e.st.Groups.Create(ctx, "acme", "operators")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.st.Groups.AddMember(ctx, ops.ID, other.ID); err != nil {
		t.Fatal(err)
	}
	e.grant(authz.GroupMembers(ops.ID), authz.Administrator, authz.HubObject())
	e.settle()
	aliceTok, rootTok := e.token(alice, time.Minute, ""), e.token(root, time.Minute, "")

	for _, c := range []struct {
		what, method, path string
		body               any
	}{
		{"alice disables a hub administrator", http.MethodPost, "/v1/users/root@example.com/disable", nil},
		{"alice removes a hub administrator", http.MethodDelete, "/v1/users/root@example.com", nil},
		{"alice joins a group holding the hub's administration", http.MethodPost, "/v1/groups/" + ops.ID + "/members",
			map[string]string{"user": "alice@example.com"}},
		{"alice removes a member of that group", http.MethodDelete, "/v1/groups/" + ops.ID + "/members/other@example.com", nil},
		{"alice removes that group", http.MethodDelete, "/v1/groups/" + ops.ID, nil},
	} {
		if code, b := e.do(c.method, c.path, aliceTok, c.body); code != http.StatusForbidden {
			t.Errorf("%s: %d %s, want 403", c.what, code, b)
		}
	}
	if id, err := e.st.Identities.ByID(ctx, root.ID); err != nil || id.DisabledAt != nil {
		t.Errorf("root after alice's attempts: %+v %v, want present and enabled", id, err)
	}
	e.want(t, "root is still the hub's administrator", http.StatusOK, rootTok, http.MethodGet, "/v1/hub/signing-keys", nil)
	e.want(t, "the operators group is still there", http.StatusOK, rootTok, http.MethodGet, "/v1/groups/"+ops.ID, nil)
	e.want(t, "alice is not", http.StatusForbidden, aliceTok, http.MethodGet, "/v1/hub/signing-keys", nil)

	e.want(t, "a hub administrator disables another", http.StatusNoContent, rootTok, http.MethodPost, "/v1/users/other@example.com/disable", nil)
	e.want(t, "and removes them", http.StatusNoContent, rootTok, http.MethodDelete, "/v1/users/other@example.com", nil)
	e.want(t, "and adds alice to the operators", http.StatusNoContent, rootTok, http.MethodPost,
		"/v1/groups/"+ops.ID+"/members", map[string]string{"user": "alice@example.com"})
	e.want(t, "and removes the group", http.StatusNoContent, rootTok, http.MethodDelete, "/v1/groups/"+ops.ID, nil)
}
