package hub_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/hub/internal/store"
)

// TestGroupMembersByName: drover add-member and remove-member name the
// group as ORG/NAME (one escaped path segment) and the member by email or,
// for a service account, by client id; membership is what grants to the
// group reach, from the member's next request on.
func TestGroupMembersByName(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	ci, _, err := f.st.Login(ctx, store.Identity{Issuer: "https://idp.test", Subject: "sa-ci-deployer",
		Kind: store.KindServiceAccount, DisplayName: "ci-deployer"}, "acme", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	admin, dave, bot := f.token(f.alice, time.Minute, ""), f.token(f.dave, time.Minute, ""), f.token(ci, time.Minute, "")
	model := "/v1/models/" + f.model.UUID
	members := "/v1/groups/acme%2Fops/members"
	want := func(what string, code int, tok, method, path string, body any) {
		t.Helper()
		if got, b := f.do(method, path, tok, body); got != code {
			t.Fatalf("%s: %d %s, want %d", what, got, b, code)
		}
	}
	want("grant the group", http.StatusNoContent, admin, http.MethodPost, "/v1/grants",
		map[string]string{"group": "acme/ops", "level": "read", "model": f.model.UUID})
	want("dave before he joins", http.StatusNotFound, dave, http.MethodGet, model, nil)
	want("add dave", http.StatusNoContent, admin, http.MethodPost, members, map[string]string{"user": "dave@example.com"})
	want("dave a member", http.StatusOK, dave, http.MethodGet, model, nil)
	want("add the service account by client id", http.StatusNoContent, admin, http.MethodPost, members, map[string]string{"user": "ci-deployer"})
	want("the service account a member", http.StatusOK, bot, http.MethodGet, model, nil)
	want("remove dave", http.StatusNoContent, admin, http.MethodDelete, members+"/dave%40example.com", nil)
	want("dave removed", http.StatusNotFound, dave, http.MethodGet, model, nil)
	want("the service account still a member", http.StatusOK, bot, http.MethodGet, model, nil)
	want("by group id too", http.StatusNoContent, admin, http.MethodDelete, "/v1/groups/"+f.group.ID+"/members/ci-deployer", nil)
	want("the service account removed", http.StatusNotFound, bot, http.MethodGet, model, nil)

	// Errors speak of groups, not of the hub's packages.
	code, b := f.do(http.MethodPost, "/v1/groups", admin, map[string]string{"org": "acme", "name": "ops"})
	if code != http.StatusConflict || !strings.Contains(string(b), "already exists") || strings.Contains(string(b), "store:") {
		t.Errorf("the group again: %d %s", code, b)
	}
	code, b = f.do(http.MethodPost, "/v1/groups/acme%2Fnope/members", admin, map[string]string{"user": "dave@example.com"})
	if code != http.StatusNotFound || !strings.Contains(string(b), "acme/nope") {
		t.Errorf("an unknown group: %d %s", code, b)
	}
	code, b = f.do(http.MethodPost, members, admin, map[string]string{"user": "never-logged-in"})
	if code != http.StatusNotFound || !strings.Contains(string(b), "first login") {
		t.Errorf("an unknown service account: %d %s", code, b)
	}
	want("a reader of the model adding members", http.StatusForbidden, f.token(f.rita, time.Minute, ""), http.MethodPost, members,
		map[string]string{"user": "dave@example.com"})
}
