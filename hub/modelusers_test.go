package hub_test

import (
	"maps"
	"testing"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/authz"
)

// TestModelShowsItsUsersToItsAdministrators: GET /v1/models/{uuid} lists
// who holds a grant on the model (Juju's show-model users) to those who
// administer it, and to no one else.
func TestModelShowsItsUsersToItsAdministrators(t *testing.T) {
	f := newFixture(t)
	e := f.env
	path := "/v1/models/" + f.model.UUID
	users := func(tok string) map[string]string {
		t.Helper()
		var out struct {
			Users []api.ModelUser `json:"users"`
		}
		e.get(path, tok, &out)
		got := map[string]string{}
		for _, u := range out.Users {
			got[u.Name] = u.Access + " " + u.Kind
		}
		return got
	}
	want := map[string]string{"alice@example.com": "admin user", "rita@example.com": "read user", "will@example.com": "write user"}
	if got := users(e.token(f.alice, time.Minute, "")); !maps.Equal(got, want) {
		t.Errorf("the owner sees users %v, want %v", got, want)
	}
	for _, who := range []struct {
		name string
		tok  string
	}{{"a writer", e.token(f.will, time.Minute, "")}, {"a reader", e.token(f.rita, time.Minute, "")}} {
		if got := users(who.tok); len(got) != 0 {
			t.Errorf("%s sees users %v", who.name, got)
		}
	}
	e.grant(authz.UserObject(f.dave.ID), authz.Administrator, authz.ModelObject(f.model.UUID))
	e.grant(authz.GroupMembers(f.group.ID), authz.Reader, authz.ModelObject(f.model.UUID))
	e.settle()
	want["dave@example.com"], want["ops"] = "admin user", "read group"
	if got := users(e.token(f.dave, time.Minute, "")); !maps.Equal(got, want) {
		t.Errorf("a model administrator sees users %v, want %v", got, want)
	}
}
