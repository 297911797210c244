package hub_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/droverhq/drover/authz"
	"github.com/droverhq/drover/hub/internal/store"
)

// TestSetModelOwner: an organization's administrator gives a model a new
// owner (a model adopted from its controller has none), as jimmctl
// import-model --owner does: someone of the organization, enabled and
// logged in, who gets administrator on the model; the previous owner keeps
// what they hold; audited. Nobody else may, and the model's organization
// decides who may own it.
func TestSetModelOwner(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	path := "/v1/models/" + f.model.UUID
	as := func(who store.Identity) string { return f.token(who, time.Minute, "") }
	setOwner := func(who store.Identity, owner string) (int, string) {
		t.Helper()
		code, b := f.do(http.MethodPatch, path, as(who), map[string]string{"owner": owner})
		return code, string(b)
	}
	if code, _ := f.do(http.MethodGet, path, as(f.dave), nil); code != http.StatusNotFound {
		t.Fatalf("dave reads the model before: %d, want 404", code)
	}
	for _, c := range []struct {
		who   store.Identity
		owner string
		code  int
		says  string
	}{
		{f.rita, "dave@example.com", http.StatusForbidden, "needs admin access to organization acme"},
		{f.olga, "dave@example.com", http.StatusNotFound, ""},
		{f.alice, "olga@example.com", http.StatusBadRequest, "not a member of organization acme"},
		{f.alice, "nobody@example.com", http.StatusNotFound, "nobody by that name"},
		{f.alice, "", http.StatusBadRequest, "must name the new owner"},
	} {
		if code, b := setOwner(c.who, c.owner); code != c.code || !strings.Contains(b, c.says) {
			t.Errorf("%s sets owner %q: %d %s, want %d saying %q", c.who.Email, c.owner, code, b, c.code, c.says)
		}
	}
	if m, err := f.st.Models.ByUUID(ctx, f.model.UUID); err != nil || m.Owner != f.alice.ID {
		t.Fatalf("after the refusals: %+v %v, want alice still the owner", m, err)
	}

	code, b := setOwner(f.alice, "dave@example.com")
	var m store.Model
	if code != http.StatusOK || json.Unmarshal([]byte(b), &m) != nil || m.Owner != f.dave.ID || m.OwnerName != "dave@example.com" {
		t.Fatalf("alice makes dave the owner: %d %s", code, b)
	}
	if code, _ := f.do(http.MethodGet, path, as(f.dave), nil); code != http.StatusOK {
		t.Errorf("the new owner reads the model: %d, want 200", code)
	}
	expected, err := f.st.Outbox.ExpectedTuples(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, who := range []store.Identity{f.dave, f.alice} {
		if !slices.Contains(expected, authz.Tuple{User: authz.UserObject(who.ID), Relation: authz.Administrator, Object: authz.ModelObject(f.model.UUID)}) {
			t.Errorf("%s does not administer the model (the new owner, and the previous one until revoked)", who.Email)
		}
	}
	es, _, err := f.st.Audit.Query(ctx, store.AuditQuery{All: true, Operation: "set-model-owner", Limit: 20})
	es = slices.DeleteFunc(es, func(e store.AuditEntry) bool { return e.Result != store.ResultOK })
	if err != nil || len(es) != 1 || es[0].ModelUUID != f.model.UUID || es[0].Details["owner"] != "dave@example.com" ||
		es[0].Details["previous-owner-id"] != f.alice.ID || es[0].Details["target"] != "prod" {
		t.Fatalf("audit: %+v %v", es, err)
	}

	// An adopted model, owned by nobody, gets its first owner; a disabled
	// identity may not own one.
	adopted := store.Model{UUID: uuid.NewString(), Name: "found", Org: "acme", ControllerUUID: f.ctrl.UUID}
	if err := f.st.Models.Insert(ctx, adopted); err != nil {
		t.Fatal(err)
	}
	if _, err := f.st.Identities.SetDisabled(ctx, f.will.ID, true, time.Now()); err != nil {
		t.Fatal(err)
	}
	path = "/v1/models/" + adopted.UUID
	f.settle()
	if code, b := setOwner(f.alice, "will@example.com"); code != http.StatusBadRequest || !strings.Contains(b, "disabled") {
		t.Errorf("a disabled owner: %d %s", code, b)
	}
	if code, b := setOwner(f.alice, "rita@example.com"); code != http.StatusOK || !strings.Contains(b, `"owner":"rita@example.com"`) {
		t.Errorf("the adopted model's first owner: %d %s", code, b)
	}
}
