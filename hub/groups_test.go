package hub_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/authz"
	"github.com/droverhq/drover/hub/internal/store"
)

// TestGroupMembersByName: drover add-member and remove-member name the
// group as ORG/NAME (one escaped path segment) and the member by email or,
// for a service account, by client id; membership is what grants to the
// group reach, from the member's next request on.
func TestGroupMembersByName(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	ci, _, err := f.st.Identities.Login(ctx, store.Identity{Issuer: "https://idp.test", Subject: "sa-ci-deployer",
		Kind: store.KindServiceAccount, DisplayName: "ci-deployer"}, "acme", time.Now())

	if err != nil {
		t.Fatal(err)
	}
	admin, dave, bot := f.token(f.alice, time.Minute, ""), f.token(f.dave, time.Minute, ""), f.token(ci, time.Minute, "")
	model := "/v1/models/" + f.model.UUID
	members := "/v1/groups/acme%2Fops/members"
	want := func(what string, code int, tok, method, path string, body any) {
		f.want(t, what, code, tok, method, path, body)
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
	if code != http.StatusNotFound || !strings.Contains(string(b), "nobody by that name has logged in") {
		t.Errorf("an unknown service account: %d %s", code, b)
	}
	want("a reader of the model adding members", http.StatusForbidden, f.token(f.rita, time.Minute, ""), http.MethodPost, members,
		map[string]string{"user": "dave@example.com"})
}

// summary is "ORG/NAME:MEMBERS" for each group, as listed.
func summary(gs []api.Group) string {
	var out []string
	for _, g := range gs {
		out = append(out, fmt.Sprintf("%s/%s:%d", g.Org, g.Name, g.MemberCount))
	}
	return strings.Join(out, " ")
}

// TestListAndShowGroups: each caller lists the groups of the organizations
// they are a member of (a hub administrator every one), and sees a group's
// members and grants named as drover names them; other tenants learn
// nothing, not even whether an organization exists.
func TestListAndShowGroups(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	if _, _, err := f.st.Identities.Login(ctx, store.Identity{Issuer: "https://idp.test", Subject: "sa-ci-deployer",
		Kind: store.KindServiceAccount, DisplayName: "ci-deployer"}, "acme", time.Now()); err != nil {
		t.Fatal(err)
	}
	for _, g := range [][2]string{{"acme", "dev"}, {"globex", "sre"}} {
		if _, err := f.st.Groups.Create(ctx, g[0], g[1]); err != nil {
			t.Fatal(err)
		}
	}
	admin, root := f.token(f.alice, time.Minute, ""), f.hubAdmin()
	for _, call := range []struct {
		method, path string
		body         map[string]string
	}{
		{"POST", "/v1/groups/acme%2Fops/members", map[string]string{"user": "rita@example.com"}},
		{"POST", "/v1/groups/acme%2Fops/members", map[string]string{"user": "ci-deployer"}},
		{"POST", "/v1/grants", map[string]string{"group": "acme/ops", "level": "write", "model": f.model.UUID}},
		{"POST", "/v1/grants", map[string]string{"group": "acme/ops", "level": "read", "model": f.model.UUID}},
		{"POST", "/v1/grants", map[string]string{"group": "acme/ops", "level": "audit_viewer", "organization": "acme"}},
		{"POST", "/v1/grants", map[string]string{"group": "acme/ops", "level": "login", "controller": "east"}},
	} {
		if code, b := f.do(call.method, call.path, admin, call.body); code != http.StatusNoContent {
			t.Fatalf("%s %s %v: %d %s", call.method, call.path, call.body, code, b)
		}
	}
	// Globex's administrator may not grant to acme's groups: told, as
	// for a group nobody made, nothing of them (docs/decisions/0010),
	// and neither when revoking.
	secret, err := f.st.Models.ByName(ctx, "globex", "prod")
	if err != nil {
		t.Fatal(err)
	}
	for _, method := range []string{"POST", "DELETE"} {
		for _, group := range []string{"acme/ops", "acme/nosuch"} {
			code, b := f.do(method, "/v1/grants", f.token(f.olga, time.Minute, ""),
				map[string]string{"group": group, "level": "read", "model": secret.UUID})
			if want := `{"code":"not-found","message":"not found: group \"` + group + `\""}`; code != http.StatusNotFound || strings.TrimSpace(string(b)) != want {
				t.Errorf("%s globex's model to %s by globex's administrator: %d %s, want 404 %s", method, group, code, b, want)
			}
		}
	}
	// A hub administrator may: acme's members who cannot see that model
	// are not told of it.
	if code, b := f.do("POST", "/v1/grants", root,
		map[string]string{"group": "acme/ops", "level": "read", "model": secret.UUID}); code != http.StatusNoContent {
		t.Fatalf("grant globex's model to acme/ops: %d %s", code, b)
	}

	list := func(who, path string) string {
		t.Helper()
		var out struct{ Groups []api.Group }
		f.get(path, who, &out)
		for _, g := range out.Groups {
			if g.ID == "" || g.CreatedAt.IsZero() {
				t.Errorf("%s: group %+v lacks its id or creation time", path, g)
			}
		}
		return summary(out.Groups)
	}
	rita, olga := f.token(f.rita, time.Minute, ""), f.token(f.olga, time.Minute, "")
	for _, c := range []struct {
		who, as, path, want string
	}{
		{rita, "a member of acme", "/v1/groups", "acme/dev:0 acme/ops:2"},
		{rita, "a member of acme", "/v1/groups?org=acme", "acme/dev:0 acme/ops:2"},
		{olga, "globex's administrator", "/v1/groups", "globex/sre:0"},
		{root, "a hub administrator", "/v1/groups", "acme/dev:0 acme/ops:2 globex/sre:0"},
		{root, "a hub administrator", "/v1/groups?org=globex", "globex/sre:0"},
		{f.token(f.dave, time.Minute, ""), "a member of acme in no group", "/v1/groups", "acme/dev:0 acme/ops:2"},
	} {
		if got := list(c.who, c.path); got != c.want {
			t.Errorf("%s, %s: %q, want %q", c.as, c.path, got, c.want)
		}
	}
	for _, c := range []struct{ who, path string }{
		{olga, "/v1/groups?org=acme"}, {olga, "/v1/groups?org=nope"}, {rita, "/v1/groups?org=globex"},
		{olga, "/v1/groups/acme%2Fops"}, {olga, "/v1/groups/" + f.group.ID},
	} {
		code, b := f.do(http.MethodGet, c.path, c.who, nil)
		if code != http.StatusNotFound || strings.Contains(string(b), "acme/ops") {
			t.Errorf("%s from another tenant: %d %s, want 404 naming nothing", c.path, code, b)
		}
	}

	want := api.GroupDetails{
		Group:   api.Group{ID: f.group.ID, Org: "acme", Name: "ops", CreatedAt: f.group.CreatedAt, MemberCount: 2},
		Members: []api.GroupMember{{Name: "ci-deployer", Kind: store.KindServiceAccount}, {Name: "rita@example.com", Kind: store.KindUser}},
		Grants: []api.GroupGrant{
			{Level: "login", Target: "controller east", Object: authz.ControllerObject(f.ctrl.UUID)},
			{Level: "read", Target: "model prod", Object: authz.ModelObject(f.model.UUID)},
			{Level: "write", Target: "model prod", Object: authz.ModelObject(f.model.UUID)},
			{Level: "audit_viewer", Target: "organization acme", Object: authz.OrgObject("acme")},
		},
	}
	for _, path := range []string{"/v1/groups/acme%2Fops", "/v1/groups/" + f.group.ID} {
		var got api.GroupDetails
		f.get(path, f.token(f.will, time.Minute, ""), &got) // a member of acme, not of the group
		if !got.CreatedAt.Equal(want.CreatedAt) {
			t.Errorf("%s: created %v, want %v", path, got.CreatedAt, want.CreatedAt)
		}
		got.CreatedAt = want.CreatedAt
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\n got %+v\nwant %+v", path, got, want)
		}
	}
	// A member of the group sees the model through it, and so the grant.
	var asMember api.GroupDetails
	f.get("/v1/groups/acme%2Fops", rita, &asMember)
	if n := len(asMember.Grants); n != len(want.Grants)+1 || !strings.Contains(fmt.Sprint(asMember.Grants), secret.UUID) {
		t.Errorf("a member of the group sees %d grants, want %d with globex's model: %+v", n, len(want.Grants)+1, asMember.Grants)
	}
	var dev api.GroupDetails
	f.get("/v1/groups/acme%2Fdev", rita, &dev)
	if dev.Members == nil || dev.Grants == nil || len(dev.Members)+len(dev.Grants) != 0 {
		t.Errorf("an empty group: members %#v, grants %#v; want empty lists", dev.Members, dev.Grants)
	}
}

// TestRemoveGroupRemovesItsAccess: removing a group takes away what it
// gave its members, in PostgreSQL and in OpenFGA alike, from their next
// request on; the removal is audited.
func TestRemoveGroupRemovesItsAccess(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	admin, dave := f.token(f.alice, time.Minute, ""), f.token(f.dave, time.Minute, "")
	model := "/v1/models/" + f.model.UUID
	want := func(what string, code int, tok, method, path string, body any) {
		f.want(t, what, code, tok, method, path, body)
	}
	want("grant the group", http.StatusNoContent, admin, http.MethodPost, "/v1/grants",
		map[string]string{"group": "acme/ops", "level": "write", "model": f.model.UUID})
	want("add dave", http.StatusNoContent, admin, http.MethodPost, "/v1/groups/acme%2Fops/members", map[string]string{"user": "dave@example.com"})
	want("dave reads the model through the group", http.StatusOK, dave, http.MethodGet, model, nil)
	if len(f.tuplesNaming(t, f.group.ID)) != 2 {
		t.Fatalf("tuples on the group before: %q", f.tuplesNaming(t, f.group.ID))
	}

	want("a member of acme removing it", http.StatusForbidden, f.token(f.rita, time.Minute, ""), http.MethodDelete, "/v1/groups/acme%2Fops", nil)
	want("dave still reads the model", http.StatusOK, dave, http.MethodGet, model, nil)
	want("remove the group", http.StatusNoContent, admin, http.MethodDelete, "/v1/groups/acme%2Fops", nil)
	want("dave no longer sees the model", http.StatusNotFound, dave, http.MethodGet, model, nil)
	want("nor the group", http.StatusNotFound, admin, http.MethodGet, "/v1/groups/acme%2Fops", nil)
	want("which is gone", http.StatusNotFound, admin, http.MethodDelete, "/v1/groups/acme%2Fops", nil)
	want("nothing is granted to it any more", http.StatusNotFound, admin, http.MethodPost, "/v1/grants",
		map[string]string{"group": "acme/ops", "level": "read", "model": f.model.UUID})

	for _, rel := range []authz.Relation{authz.Reader, authz.Writer} {
		if ok, err := f.hub.Authz().Check(ctx, authz.UserObject(f.dave.ID), rel, authz.ModelObject(f.model.UUID)); err != nil || ok {
			t.Errorf("OpenFGA: dave %s of the model: %v %v", rel, ok, err)
		}
	}
	if got := f.tuplesNaming(t, f.group.ID); len(got) != 0 {
		t.Errorf("expected tuples left on the group: %q", got)
	}
	expected, err := f.st.Outbox.ExpectedTuples(ctx)
	if err != nil {
		t.Fatal(err)
	}
	actual, err := f.hub.Authz().ReadAll(ctx, authz.ReadFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if e, a := tupleSet(expected), tupleSet(actual); !slices.Equal(e, a) {
		t.Errorf("PostgreSQL expects\n%q\nOpenFGA holds\n%q", e, a)
	}

	var out struct{ Entries []store.AuditEntry }
	f.get("/v1/audit?operation=remove-group", admin, &out)
	var got []string
	for _, e := range out.Entries {
		got = append(got, fmt.Sprintf("%s %d %s %v", e.Actor, e.Status, e.Org, e.Details["target"]))
	}
	if w := []string{"alice@example.com 404 acme <nil>", "alice@example.com 204 acme acme/ops", "rita@example.com 403 acme acme/ops"}; !slices.Equal(got, w) {
		t.Errorf("audited removals (newest first):\n%q\nwant\n%q", got, w)
	}
}

// TestRenameGroupKeepsMembersAndGrants: a group renamed keeps its members
// and what was granted to it (tuples name it by id); grants then name it
// by its new name; its old name is free, a taken one is refused.
func TestRenameGroupKeepsMembersAndGrants(t *testing.T) {
	f := newFixture(t)
	admin, dave := f.token(f.alice, time.Minute, ""), f.token(f.dave, time.Minute, "")
	want := func(what string, code int, method, path string, body any) []byte {
		return f.want(t, what, code, admin, method, path, body)
	}
	want("grant the group", http.StatusNoContent, http.MethodPost, "/v1/grants",
		map[string]string{"group": "acme/ops", "level": "read", "model": f.model.UUID})
	want("add dave", http.StatusNoContent, http.MethodPost, "/v1/groups/acme%2Fops/members", map[string]string{"user": "dave@example.com"})
	tuples := f.tuplesNaming(t, f.group.ID)

	var renamed store.Group
	if err := json.Unmarshal(want("rename", http.StatusOK, http.MethodPatch, "/v1/groups/acme%2Fops", map[string]string{"name": "sre"}), &renamed); err != nil {
		t.Fatal(err)
	}
	if renamed.ID != f.group.ID || renamed.Org != "acme" || renamed.Name != "sre" {
		t.Errorf("renamed: %+v", renamed)
	}
	if code, b := f.do(http.MethodGet, "/v1/models/"+f.model.UUID, dave, nil); code != http.StatusOK {
		t.Errorf("dave after the rename: %d %s", code, b)
	}
	if got := f.tuplesNaming(t, f.group.ID); !slices.Equal(got, tuples) {
		t.Errorf("tuples after the rename: %q, want %q", got, tuples)
	}
	var sre api.GroupDetails
	f.get("/v1/groups/acme%2Fsre", admin, &sre)
	if sre.ID != f.group.ID || len(sre.Members) != 1 || sre.Members[0].Name != "dave@example.com" ||
		len(sre.Grants) != 1 || sre.Grants[0].Level+" "+sre.Grants[0].Target != "read model prod" {
		t.Errorf("acme/sre: %+v", sre)
	}
	want("the old name", http.StatusNotFound, http.MethodGet, "/v1/groups/acme%2Fops", nil)
	want("grant by the new name", http.StatusNoContent, http.MethodPost, "/v1/grants",
		map[string]string{"group": "acme/sre", "level": "write", "model": f.model.UUID})
	want("a new group under the old name", http.StatusCreated, http.MethodPost, "/v1/groups", map[string]string{"org": "acme", "name": "ops"})
	b := want("a taken name", http.StatusConflict, http.MethodPatch, "/v1/groups/acme%2Fsre", map[string]string{"name": "ops"})
	if !strings.Contains(string(b), "group acme/ops: already exists") || strings.Contains(string(b), "store:") {
		t.Errorf("a taken name: %s", b)
	}

	var out struct{ Entries []store.AuditEntry }
	f.get("/v1/audit?operation=rename-group", admin, &out)
	if len(out.Entries) != 2 {
		t.Fatalf("audited renames: %+v", out.Entries)
	}
	ok := out.Entries[1] // oldest
	body, _ := ok.Details["body"].(map[string]any)
	if ok.Status != http.StatusOK || ok.Details["target"] != "acme/ops" || body["name"] != "sre" || ok.Details["group-id"] != f.group.ID {
		t.Errorf("the rename's audit entry: %+v", ok)
	}
}

// tuplesNaming returns the expected tuples that name id, as strings.
func (f *fixture) tuplesNaming(t *testing.T, id string) []string {
	t.Helper()
	ts, err := f.st.Outbox.ExpectedTuples(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var out []authz.Tuple
	for _, tu := range ts {
		if strings.Contains(tu.User, id) || strings.Contains(tu.Object, id) {
			out = append(out, tu)
		}
	}
	return tupleSet(out)
}

// tupleSet is ts as sorted strings.
func tupleSet(ts []authz.Tuple) []string {
	out := make([]string, len(ts))
	for i, tu := range ts {
		out[i] = tu.String()
	}
	slices.Sort(out)
	return out
}
