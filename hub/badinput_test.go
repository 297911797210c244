package hub_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/hub/internal/store"
)

// TestBadInputsGetClearErrors: what a client can send wrong to the hub's
// own routes comes back as a 4xx saying what is wrong, never a 500.
func TestBadInputsGetClearErrors(t *testing.T) {
	f := newFixture(t)
	admin := f.token(f.alice, time.Minute, "")
	model := f.model.UUID
	for _, c := range []struct {
		method, path string
		body         any
		code         int
		says         string
	}{
		{"POST", "/v1/groups", map[string]string{"org": "acme", "name": "Bad Name"}, 400, `group name "Bad Name"`},
		{"POST", "/v1/groups", map[string]string{"org": "acme", "name": ""}, 400, "lowercase letters"},
		{"POST", "/v1/groups", map[string]string{"org": "acme", "name": "nul\x00byte"}, 400, "lowercase letters"},
		{"POST", "/v1/groups", map[string]string{"org": "acme", "name": strings.Repeat("a", 300)}, 400, "at most 63"},
		{"POST", "/v1/grants", map[string]string{"user": "nul\x00@example.com", "level": "read", "model": model}, 400, "not an email address"},
		{"POST", "/v1/grants", map[string]string{"user": "Bob <bob@example.com>", "level": "read", "model": model}, 400, "not an email address"},
		{"POST", "/v1/grants", map[string]string{"user": "everyone", "level": "admin", "model": model}, 400, "cannot be granted to everyone"},
		{"POST", "/v1/grants", map[string]string{"group": "acme", "level": "read", "model": model}, 400, "ORG/NAME"},
		{"POST", "/v1/grants", map[string]string{"user": "rita@example.com", "level": "read", "organization": "acme"}, 400,
			`level "read" is not valid on an organization (add-model, admin, audit_viewer, member)`},
		{"POST", "/v1/grants", map[string]string{"user": "rita@example.com", "level": "read", "controller": "nope"}, 404, `controller "nope"`},
		{"POST", "/v1/grants", map[string]string{"user": "rita@example.com", "level": "read"}, 400, "exactly one of model, controller and organization"},
		{"POST", "/v1/models", map[string]string{"name": "x", "owner": "someone-else"}, 400, "owned by its creator"},
		{"POST", "/v1/models", map[string]string{"nam": "x"}, 400, `unknown field "nam"`},
		{"GET", "/v1/audit?after=-1", nil, 400, "cursor"},
		{"GET", "/v1/audit?until=2020", nil, 400, "RFC 3339"},
		{"GET", "/v1/audit?limit=5000", nil, 400, "1..1000"},
		{"DELETE", "/v1/groups/acme%2Fops/members/nobody@example.com", nil, 404, "nobody by that name has logged in or been granted access"},
		{"DELETE", "/v1/grants", map[string]string{"user": "acme/ops", "level": "read", "model": model}, 404, "a group is granted as one: drover grant --group ORG/NAME"},
		{"DELETE", "/v1/grants", map[string]string{"user": "rita@example.com", "level": "write", "model": model}, 404,
			"rita@example.com holds no write access on model prod (nothing to revoke"},
		{"POST", "/v1/models", map[string]string{"name": "prod"}, 409, `model "prod" already exists in organization acme`},
		{"POST", "/v1/groups", nil, 400, "the request needs a JSON body"},
		{"PATCH", "/v1/groups/acme%2Fops", map[string]string{"name": "Bad Name"}, 400, `group name "Bad Name"`},
		{"PATCH", "/v1/groups/acme%2Fops", map[string]string{"name": ""}, 400, "lowercase letters"},
		{"PATCH", "/v1/groups/acme%2Fops", map[string]string{"name": strings.Repeat("a", 64)}, 400, "at most 63"},
		{"PATCH", "/v1/groups/acme%2Fops", map[string]string{"name": "globex/ops"}, 400, "lowercase letters"},
		{"PATCH", "/v1/groups/acme%2Fops", map[string]string{"nam": "x"}, 400, `unknown field "nam"`},
		{"PATCH", "/v1/groups/acme%2Fops", nil, 400, "the request needs a JSON body"},
		{"PATCH", "/v1/groups/acme%2Fnope", map[string]string{"name": "x"}, 404, `group "acme/nope"`},
		{"DELETE", "/v1/groups/acme%2Fnope", nil, 404, `group "acme/nope"`},
		{"DELETE", "/v1/groups/not-a-uuid", nil, 404, `group "not-a-uuid"`},
		{"GET", "/v1/groups/acme%2Fnope", nil, 404, `group "acme/nope"`},
		{"GET", "/v1/groups?org=nope", nil, 404, `organization "nope"`},
	} {
		code, b := f.do(c.method, c.path, admin, c.body)
		var e api.Error
		if err := json.Unmarshal(b, &e); err != nil || code != c.code || !strings.Contains(e.Message, c.says) {
			t.Errorf("%s %s %q: %d %s, want %d saying %q", c.method, c.path, c.body, code, b, c.code, c.says)
		}
		if strings.Contains(e.Message, "\n") { // the code says what kind; the message says what
			t.Errorf("%s %s %q: a message of several lines: %q", c.method, c.path, c.body, e.Message)
		}
	}
}

// TestRefusalsSayWhatIsMissing: a 403 names the access in grant's words
// and the object by its name, as 'drover grant' takes them.
func TestRefusalsSayWhatIsMissing(t *testing.T) {
	f := newFixture(t)
	for _, c := range []struct {
		who          store.Identity
		method, path string
		body         any
		says         string
	}{
		{f.rita, "PATCH", "/v1/models/" + f.model.UUID + "/config", map[string]any{"set": map[string]any{"a": 1}},
			"rita@example.com needs write access to model alice@example.com/prod"},
		{f.will, "DELETE", "/v1/models/" + f.model.UUID, nil, "will@example.com needs admin access to model alice@example.com/prod"},
		{f.rita, "POST", "/v1/groups", map[string]string{"org": "acme", "name": "x"}, "rita@example.com needs admin access to organization acme"},
		{f.rita, "DELETE", "/v1/groups/acme%2Fops", nil, "rita@example.com needs admin access to organization acme"},
		{f.will, "PATCH", "/v1/groups/acme%2Fops", map[string]string{"name": "x"}, "will@example.com needs admin access to organization acme"},
		{f.rita, "POST", "/v1/grants", map[string]string{"user": "will@example.com", "level": "read", "model": f.model.UUID},
			"rita@example.com needs admin access to model alice@example.com/prod"},
	} {
		code, b := f.do(c.method, c.path, f.token(c.who, time.Minute, ""), c.body)
		var e api.Error
		if err := json.Unmarshal(b, &e); err != nil || code != 403 || !strings.Contains(e.Message, c.says) {
			t.Errorf("%s %s as %s: %d %s, want 403 saying %q", c.method, c.path, c.who.Email, code, b, c.says)
		}
	}
}
