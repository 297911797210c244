package hub_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"testing"
	"time"
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
