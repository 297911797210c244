package store_test

import (
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/droverhq/drover/authz"
	"github.com/droverhq/drover/hub/internal/store"
)

// TestModelUsers: who holds a grant on a model itself, named as people
// read them, each once at the highest level granted.
func TestModelUsers(t *testing.T) {
	f := newAdoptFixture(t)
	ctx := t.Context()
	m := uuid.NewString()
	if err := f.s.Models.Insert(ctx, store.Model{UUID: m, Name: "prod", Org: "acme", Owner: f.bob.ID, ControllerUUID: f.ctrl, Status: "active"}); err != nil {
		t.Fatal(err)
	}
	ann, _, err := f.s.Identities.Login(ctx, store.Identity{Issuer: "https://idp.test", Subject: "ann", Email: "ann@example.com", DisplayName: "Ann"}, "acme", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	ci, _, err := f.s.Identities.Login(ctx, store.Identity{Issuer: "https://idp.test", Subject: "sa-ci", Kind: store.KindServiceAccount, DisplayName: "ci"}, "acme", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	ops, err := f.s.Groups.Create(ctx, "acme", "ops")
	if err != nil {
		t.Fatal(err)
	}
	model := authz.ModelObject(m)
	for _, g := range []authz.Tuple{
		{User: authz.UserObject(ann.ID), Relation: authz.Reader, Object: model},
		{User: authz.UserObject(ann.ID), Relation: authz.Writer, Object: model}, // the higher one shows
		{User: authz.UserObject(ci.ID), Relation: authz.Reader, Object: model},
		{User: authz.GroupMembers(ops.ID), Relation: authz.Writer, Object: model},
		{User: authz.Everyone, Relation: authz.Reader, Object: model},
		{User: authz.UserObject(ann.ID), Relation: authz.Administrator, Object: authz.OrgObject("acme")}, // not on the model
	} {
		if err := f.s.Grants.Add(ctx, g); err != nil {
			t.Fatalf("grant %s: %v", g, err)
		}
	}
	got, err := f.s.Models.Users(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	type row struct{ name, display, kind, access string }
	want := []row{
		{"ann@example.com", "Ann", "user", "write"},
		{"bob@example.com", "", "user", "admin"}, // the owner, as Models.Insert grants
		{"ci", "ci", "service-account", "read"},
		{"everyone", "", "everyone", "read"},
		{"ops", "", "group", "write"},
	}
	if len(got) != len(want) {
		t.Fatalf("model users %+v, want %d", got, len(want))
	}
	for i, u := range got {
		if (row{u.Name, u.DisplayName, u.Kind, u.Access}) != want[i] {
			t.Errorf("user %d: %+v, want %+v", i, u, want[i])
		}
		if (u.LastLogin != nil) != (u.Kind == "user" || u.Kind == "service-account") {
			t.Errorf("%s: last connection %v", u.Name, u.LastLogin)
		}
	}
	if none, err := f.s.Models.Users(ctx, uuid.NewString()); err != nil || len(none) != 0 {
		t.Errorf("an unknown model's users: %+v %v", none, err)
	}
}
