package hub_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/authz"
)

// TestAccess: GET /v1/access answers the caller's read, write and admin
// on a model, controller (by name or UUID), organization and the hub; a
// model or controller the caller cannot see is not found, and a malformed
// object a bad request.
func TestAccess(t *testing.T) {
	f := newFedFixture(t)
	bea := f.user("bea", "acme")
	f.grant(authz.UserObject(bea.ID), authz.Writer, authz.ModelObject(f.m1))
	f.settle()
	bt := f.token(bea, 5*time.Minute, "")
	get := func(tok, object string, code int) api.Access {
		t.Helper()
		b := f.want(t, "access "+object, code, tok, http.MethodGet, "/v1/access?object="+url.QueryEscape(object), nil)
		var a api.Access
		if code == http.StatusOK {
			if err := json.Unmarshal(b, &a); err != nil {
				t.Fatal(err)
			}
			if a.Object != object {
				t.Fatalf("access %s answered for %s", object, a.Object)
			}
		}
		return a
	}
	for _, c := range []struct {
		tok, object string
		want        api.Access
	}{
		{bt, "model:" + f.m1, api.Access{Read: true, Write: true}},
		{f.tok, "model:" + f.m1, api.Access{Read: true, Write: true, Admin: true}},
		{f.tok, "controller:east", api.Access{Read: true, Write: true, Admin: true}},
		{f.tok, "controller:" + f.ctrl.UUID, api.Access{Read: true, Write: true, Admin: true}},
		{f.tok, "organization:acme", api.Access{Read: true, Write: true, Admin: true}},
		{bt, "organization:acme", api.Access{Read: true}},
		{bt, "hub", api.Access{Read: true}},
	} {
		got := get(c.tok, c.object, http.StatusOK)
		c.want.Object = c.object
		if got != c.want {
			t.Errorf("access %s: %+v, want %+v", c.object, got, c.want)
		}
	}
	for _, o := range []string{"model:" + f.m2, "model:" + f.other, "model:" + uuid.NewString(), "controller:west", "organization:globex"} {
		get(bt, o, http.StatusNotFound)
	}
	for _, o := range []string{"", "model:nope", "user:" + bea.ID, "controller:a#member", "hub:x"} {
		get(bt, o, http.StatusBadRequest)
	}
}

// TestWhoamiCapabilities: GET /v1/whoami says what the caller may do on
// the hub as a whole.
func TestWhoamiCapabilities(t *testing.T) {
	f := newFedFixture(t)
	bea := f.user("bea", "acme")
	root := f.hubAdmin()
	f.grant(authz.UserObject(bea.ID), authz.AuditViewer, authz.ModelObject(f.m1))
	f.settle()
	can := func(tok string) api.Capabilities {
		t.Helper()
		var w struct {
			Can *api.Capabilities `json:"can"`
		}
		if err := json.Unmarshal(f.want(t, "whoami", http.StatusOK, tok, http.MethodGet, "/v1/whoami", nil), &w); err != nil || w.Can == nil {
			t.Fatalf("whoami: no capabilities (%v)", err)
		}
		return *w.Can
	}
	if c := can(f.tok); c.Superuser || c.AuditViewer != true || !slices.Equal(c.AdminOrgs, []string{"acme"}) || !c.AddModel {
		t.Errorf("acme's administrator: %+v", c)
	}
	if c := can(f.token(bea, 5*time.Minute, "")); c.Superuser || !c.AuditViewer || len(c.AdminOrgs) != 0 || c.AddModel {
		t.Errorf("a model's audit viewer: %+v", c)
	}
	if c := can(f.token(f.user("cy", "acme"), 5*time.Minute, "")); c.Superuser || c.AuditViewer || c.AddModel || c.AdminOrgs == nil || len(c.AdminOrgs) != 0 {
		t.Errorf("a member with no grant: %+v", c)
	}
	if c := can(root); !c.Superuser || !c.AuditViewer || !c.AddModel || !slices.Contains(c.AdminOrgs, "globex") {
		t.Errorf("the hub's administrator: %+v", c)
	}
}
