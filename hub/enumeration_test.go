package hub_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/droverhq/drover/hub/internal/store"
	"github.com/droverhq/drover/tests/testkit"
)

// TestNoUserEnumeration (issue 26, finding 12): an organization's
// administrator, who may not see another organization's users, gets the
// same answer naming one of them (olga, of globex) as naming nobody: from
// the audit log's user= filter, and from a grant by email.
func TestNoUserEnumeration(t *testing.T) {
	f := newFixture(t)
	alice := f.token(f.alice, time.Minute, "")
	audit := func(user string) (int, string) {
		code, b := f.do("GET", "/v1/audit?user="+url.QueryEscape(user), alice, nil)
		return code, string(b)
	}
	oc, ob := audit(f.olga.Email)
	nc, nb := audit("nobody@example.com")
	if oc != nc || ob != nb {
		t.Errorf("/v1/audit?user= tells another organization's user from nobody: %d %s, and %d %s", oc, ob, nc, nb)
	}
	grant := func(user string) (int, string) {
		code, b := f.do("POST", "/v1/grants", alice, map[string]string{"user": user, "level": "read", "model": f.model.UUID})
		var out struct {
			PendingUser string `json:"pending-user"`
		}
		_ = json.Unmarshal(b, &out)
		if out.PendingUser == user {
			return code, "pending"
		}
		return code, string(b)
	}
	oc, ob = grant(f.olga.Email)
	nc, nb = grant("ghost@example.com")
	if oc != nc || ob != nb || oc >= http.StatusBadRequest {
		t.Errorf("a grant tells another organization's user from nobody: %d %s, and %d %s", oc, ob, nc, nb)
	}
}

// TestNoUserEnumerationByID (issue 26, finding 12): naming another
// organization's user by identity id, or its service account by client
// id, in a grant, a revoke or a group membership gets an organization's
// administrator the answer an unknown id gets, and changes nothing. A
// revoke or a removal naming them by email, when they hold nothing there,
// is answered as for an unknown email (a grant by email is answered as
// pending: TestNoUserEnumeration).
func TestNoUserEnumerationByID(t *testing.T) {
	f := newFixture(t)
	code, sa := f.form("/v1/auth/token", url.Values{"grant_type": {"client_credentials"}, "client_id": {saGlobex.ID}, "client_secret": {saGlobex.Secret}})
	if code != http.StatusOK {
		t.Fatalf("service account login: %d %+v", code, sa)
	}
	f.whoami(sa.AccessToken)
	alice := f.token(f.alice, time.Minute, "")
	grant := func(user string) any { return map[string]string{"user": user, "level": "read", "model": f.model.UUID} }
	groupPath := "/v1/groups/" + f.group.ID + "/members"
	asks := []struct {
		name         string
		method, path string
		body         func(ref string) any
		byEmail      bool
	}{
		{"grant", "POST", "/v1/grants", grant, false},
		{"revoke", "DELETE", "/v1/grants", grant, true},
		{"add member", "POST", groupPath, func(ref string) any { return map[string]string{"user": ref} }, false},
		{"remove member", "DELETE", groupPath + "/{ref}", nil, true},
	}
	// answer is what alice is told about ref, then what the audit log
	// tells her of it, with ref itself blanked out (both may quote the name
	// she gave) and what differs between any two entries (id, time,
	// address) left out.
	answer := func(method, path, ref string, body func(string) any) string {
		var b any
		if body != nil {
			b = body(ref)
		}
		code, out := f.do(method, strings.ReplaceAll(path, "{ref}", url.PathEscape(ref)), alice, b)
		var entry []byte
		testkit.Eventually(t.Context(), t, func() (bool, error) {
			code, b := f.do("GET", "/v1/audit?limit=1", alice, nil)
			var log struct {
				Entries []map[string]any `json:"entries"`
			}
			if code != http.StatusOK || json.Unmarshal(b, &log) != nil || len(log.Entries) != 1 {
				return false, fmt.Errorf("audit: %d %s", code, b)
			}
			e := log.Entries[0]
			if e["result"] == store.ResultPending {
				return false, nil
			}
			delete(e, "id")
			delete(e, "at")
			delete(e, "remote-addr")
			entry, _ = json.Marshal(e)
			return true, nil
		}, "alice's request audited")
		return strings.ReplaceAll(fmt.Sprintf("%d %s, audited as %s", code, out, entry), ref, "REF")
	}
	for _, ask := range asks {
		for _, c := range []struct{ what, foreign, unknown string }{
			{"identity id", f.olga.ID, uuid.NewString()},
			{"client id", saGlobex.ID, "ci-nobody"},
			{"email", f.olga.Email, "ghost@example.com"},
		} {
			if c.what == "email" && !ask.byEmail {
				continue
			}
			got, want := answer(ask.method, ask.path, c.foreign, ask.body), answer(ask.method, ask.path, c.unknown, ask.body)
			if got != want {
				t.Errorf("%s by %s tells another organization's user from nobody: %s, and %s", ask.name, c.what, got, want)
			}
		}
	}
	// The grants and the membership asked for did not happen: olga sees
	// nothing of acme's and is in none of its groups.
	if code, b := f.do("GET", "/v1/models/"+f.model.UUID, f.token(f.olga, time.Minute, ""), nil); code != http.StatusNotFound {
		t.Errorf("olga reads acme's model after grants by id: %d %s", code, b)
	}
	members, err := f.st.Groups.ListMembers(t.Context(), f.group.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(members) != 0 {
		t.Errorf("acme/ops has members after memberships answered as for nobody: %+v", members)
	}
}
