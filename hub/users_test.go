package hub_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/authz"
	"github.com/droverhq/drover/hub/internal/store"
)

// TestListUsers: an organization's administrators see its people and
// service accounts (someone granted access before a first login among
// them, pending), a hub administrator everyone, anyone else only
// themselves; org= narrows it and tells another tenant nothing.
func TestListUsers(t *testing.T) {
	f := newFixture(t)
	alice := f.token(f.alice, time.Minute, "")
	if code, b := f.do("POST", "/v1/grants", alice, map[string]string{"user": "bob@example.com", "level": "read", "model": f.model.UUID}); code != http.StatusOK {
		t.Fatalf("grant to bob: %d %s", code, b)
	}
	root := f.hubAdmin()
	names := func(tok, path string) string {
		t.Helper()
		var out struct{ Users []api.HubUser }
		f.get(path, tok, &out)
		var ns []string
		for _, u := range out.Users {
			n := u.Org + "/" + u.Name
			if u.Pending {
				n += "(pending)"
			}
			if u.CreatedAt.IsZero() || (u.LastLogin == nil) != u.Pending {
				t.Errorf("%s: %+v: a creation time, and a last connection unless pending", path, u)
			}
			ns = append(ns, n)
		}
		return strings.Join(ns, " ")
	}
	acme := "acme/alice@example.com acme/bob@example.com(pending) acme/dave@example.com acme/rita@example.com acme/root@example.com acme/will@example.com"
	for _, c := range []struct{ who, as, path, want string }{
		{alice, "acme's administrator", "/v1/users", acme},
		{alice, "acme's administrator", "/v1/users?org=acme", acme},
		{alice, "acme's administrator", "/v1/users?org=globex", ""},
		{f.token(f.rita, time.Minute, ""), "a member of acme", "/v1/users", "acme/rita@example.com"},
		{f.token(f.rita, time.Minute, ""), "a member of acme", "/v1/users?org=acme", "acme/rita@example.com"},
		{f.token(f.olga, time.Minute, ""), "globex's administrator", "/v1/users", "globex/olga@example.com"},
		{f.token(f.olga, time.Minute, ""), "globex's administrator", "/v1/users?org=acme", ""},
		{root, "a hub administrator", "/v1/users?org=globex", "globex/olga@example.com"},
	} {
		if got := names(c.who, c.path); got != c.want {
			t.Errorf("%s, %s:\n got %q\nwant %q", c.as, c.path, got, c.want)
		}
	}
	// show-user: one's own, and an administrator's of the organization's,
	// with the groups they are in.
	if code, b := f.do("POST", "/v1/groups/acme%2Fops/members", alice, map[string]string{"user": "rita@example.com"}); code != http.StatusNoContent {
		t.Fatalf("add rita to acme/ops: %d %s", code, b)
	}
	for _, who := range []string{f.token(f.rita, time.Minute, ""), alice} {
		var u api.HubUser
		f.get("/v1/users/rita@example.com", who, &u)
		if u.Name != "rita@example.com" || u.Org != "acme" || len(u.Groups) != 1 || u.Groups[0] != "acme/ops" {
			t.Errorf("show-user rita: %+v", u)
		}
	}
	if code, _ := f.do("GET", "/v1/users/bob@example.com", f.token(f.rita, time.Minute, ""), nil); code != http.StatusNotFound {
		t.Errorf("a member showing another user: %d, want 404", code)
	}
	everyone := "acme/alice@example.com acme/bob@example.com(pending) acme/dave@example.com globex/olga@example.com acme/rita@example.com acme/root@example.com acme/will@example.com"
	if got := names(root, "/v1/users"); got != everyone {
		t.Errorf("a hub administrator sees %q, want %q", got, everyone)
	}
}

// TestDisableEnableRemoveUsers: an organization's administrator disables
// one of its identities: its token stops working on its next request, its
// login is refused (audited), users shows it disabled; enabled again, it
// logs in and keeps its access. Removing an identity takes its grants;
// one that owns models is refused with their names. Nobody else may, and
// nobody may do it to themselves.
func TestDisableEnableRemoveUsers(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	alice := f.token(f.alice, time.Minute, "")
	login := func() (int, tokenResp) {
		return f.form("/v1/auth/token", url.Values{"grant_type": {"client_credentials"}, "client_id": {saAcme.ID}, "client_secret": {saAcme.Secret}})
	}
	code, sess := login()
	if code != http.StatusOK {
		t.Fatalf("service account login: %d %+v", code, sess)
	}
	ci := f.whoami(sess.AccessToken)
	f.grant(authz.UserObject(ci.ID), authz.Reader, authz.ModelObject(f.model.UUID))
	f.settle()
	model := "/v1/models/" + f.model.UUID
	want := func(what string, code int, tok, method, path string) string {
		t.Helper()
		got, b := f.do(method, path, tok, nil)
		if got != code {
			t.Errorf("%s: %d %s, want %d", what, got, b, code)
		}
		return string(b)
	}
	want("ci reads the model", http.StatusOK, sess.AccessToken, "GET", model)

	for _, who := range []store.Identity{f.rita, f.olga} {
		want(who.Email+" disabling ci", http.StatusNotFound, f.token(who, time.Minute, ""), "POST", "/v1/users/ci-acme/disable")
	}
	if b := want("alice disabling herself", http.StatusBadRequest, alice, "POST", "/v1/users/alice@example.com/disable"); !strings.Contains(b, "you cannot disable yourself") {
		t.Errorf("disabling oneself: %s", b)
	}
	if b := want("rita removing herself", http.StatusBadRequest, f.token(f.rita, time.Minute, ""), "DELETE", "/v1/users/rita@example.com"); !strings.Contains(b, "you cannot remove yourself") {
		t.Errorf("a member removing herself: %s", b)
	}
	want("alice disabling ci", http.StatusNoContent, alice, "POST", "/v1/users/ci-acme/disable")
	if b := want("ci's token once disabled", http.StatusForbidden, sess.AccessToken, "GET", model); !strings.Contains(b, "user ci-acme is disabled") {
		t.Errorf("a disabled identity's request: %s", b)
	}
	if code, tr := login(); code != http.StatusBadRequest || tr.Error != "access_denied" || tr.ErrorDescription != "user ci-acme is disabled" {
		t.Errorf("a disabled service account's login: %d %+v", code, tr)
	}
	var listed struct{ Users []api.HubUser }
	f.get("/v1/users", alice, &listed)
	for _, u := range listed.Users {
		if (u.Name == "ci-acme") != u.Disabled {
			t.Errorf("users: %+v", u)
		}
	}
	entries, _, err := f.st.Audit.Query(ctx, store.AuditQuery{All: true, Operation: "login-client-credentials", Limit: 1})
	if err != nil || len(entries) != 1 || entries[0].Result != store.ResultDenied || entries[0].IdentityID != ci.ID {
		t.Errorf("the refused login's audit entry: %+v %v", entries, err)
	}

	want("alice enabling ci", http.StatusNoContent, alice, "POST", "/v1/users/ci-acme/enable")
	code, sess = login()
	if code != http.StatusOK {
		t.Fatalf("login once enabled: %d %+v", code, sess)
	}
	want("ci reads the model again", http.StatusOK, sess.AccessToken, "GET", model)

	// Removing: ci's grants go with it; alice owns prod.
	want("alice removing ci", http.StatusNoContent, alice, "DELETE", "/v1/users/ci-acme")
	if ts := f.tuplesNaming(t, ci.ID); len(ts) != 0 {
		t.Errorf("tuples left after removing ci: %q", ts)
	}
	want("ci's token once removed", http.StatusUnauthorized, sess.AccessToken, "GET", model)
	if b := want("removing a model's owner", http.StatusConflict, f.hubAdmin(), "DELETE", "/v1/users/alice@example.com"); !strings.Contains(b, "alice@example.com owns alice@example.com/prod") {
		t.Errorf("removing a model's owner: %s", b)
	}
	ops := map[string]int{}
	all, _, err := f.st.Audit.Query(ctx, store.AuditQuery{All: true, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range all {
		if strings.HasSuffix(e.Operation, "-user") && e.Status < 300 {
			ops[e.Operation+" "+e.Details["target"].(string)]++
		}
	}
	if ops["disable-user ci-acme"] != 1 || ops["enable-user ci-acme"] != 1 || ops["remove-user ci-acme"] != 1 {
		t.Errorf("audited user changes: %v", ops)
	}
}
