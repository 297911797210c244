package hub_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/hub"
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
		var out struct{ Users []hub.User }
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
	everyone := "acme/alice@example.com acme/bob@example.com(pending) acme/dave@example.com globex/olga@example.com acme/rita@example.com acme/root@example.com acme/will@example.com"
	if got := names(root, "/v1/users"); got != everyone {
		t.Errorf("a hub administrator sees %q, want %q", got, everyone)
	}
}
