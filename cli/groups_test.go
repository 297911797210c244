package cli

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/api"
)

var groupsFixture = []api.Group{
	{ID: "0b6c3c1e-6a43-4e0c-9f2a-5b1f3a8d7e01", Org: "acme", Name: "ops", CreatedAt: time.Date(2026, 11, 2, 9, 30, 5, 123e6, time.UTC), MemberCount: 12},
	{ID: "5d0e6f3a-1c2b-4e5f-8a9b-0c1d2e3f4a5b", Org: "globex", Name: "sre.oncall", CreatedAt: time.Date(2026, 11, 20, 18, 4, 0, 0, time.FixedZone("CET", 3600)), MemberCount: 3},
}

// TestGroupCommandsHelpAndUsage: each group command explains itself, and
// a mistake on the command line is a usage error (exit 2) before the hub
// is asked anything.
func TestGroupCommandsHelpAndUsage(t *testing.T) {
	for _, c := range []struct {
		cmd  string
		says []string
	}{
		{"groups", []string{"organizations you are a member of", "--org string", "tabular|json|yaml", "drover groups --org demo"}},
		{"show-group", []string{"its members (people\nby email, service accounts by client id)", "yaml|json", "drover show-group demo/ops"}},
		{"remove-group", []string{"every grant made to it", "-y, --yes", "drover remove-group demo/ops -y"}},
		{"rename-group", []string{"Its members and the access granted to it stay", "drover rename-group demo/ops sre"}},
	} {
		a, out, errb := testApp(t)
		if code := a.Run(context.Background(), []string{c.cmd, "--help"}); code != 0 {
			t.Fatalf("%s --help: exit %d: %s", c.cmd, code, errb)
		}
		for _, s := range c.says {
			if !strings.Contains(out.String(), s) {
				t.Errorf("%s --help lacks %q:\n%s", c.cmd, s, out)
			}
		}
	}

	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"show-group", "ops"}, `ERROR group "ops": want ORG/NAME`},
		{[]string{"remove-group", "acme/"}, `ERROR group "acme/": want ORG/NAME`},
		{[]string{"rename-group", "/ops", "sre"}, `ERROR group "/ops": want ORG/NAME`},
		{[]string{"rename-group", "acme/ops"}, "ERROR rename-group: expected ORG/NAME and NEW-NAME, got 1 argument(s)"},
		{[]string{"rename-group", "acme/ops", "globex/ops"}, `"globex/ops" is not in organization acme`},
		{[]string{"groups", "--format", "csv"}, `ERROR --format "csv": want one of tabular, json, yaml`},
		{[]string{"groups", "extra"}, "ERROR groups: expected no arguments"},
		{[]string{"remove-group", "acme/ops"}, "refusing without confirmation: pass -y"},
	} {
		a, _, errb := testApp(t)
		if code := a.Run(context.Background(), c.args); code != 2 || !strings.Contains(errb.String(), c.says) {
			t.Errorf("%q: exit %d %q, want 2 saying %q", c.args, code, errb, c.says)
		}
	}
}

// TestGroupCommandsAtAHub: the group commands make the hub's calls, the
// group named as one escaped path segment, and print what it answers; a
// grant or membership for someone who never logged in says so.
func TestGroupCommandsAtAHub(t *testing.T) {
	var calls []string
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		calls = append(calls, strings.TrimSpace(r.Method+" "+r.URL.RequestURI()+" "+string(body)))
		if r.Header.Get("Authorization") != "Bearer tok" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == http.MethodGet && r.URL.Path == "/v1/groups":
			_ = json.NewEncoder(w).Encode(map[string]any{"groups": groupsFixture})
		case r.Method == http.MethodGet:
			_ = json.NewEncoder(w).Encode(api.GroupDetails{Group: groupsFixture[0],
				Members: []api.GroupMember{{Name: "bob@example.com", Kind: "user"}}})
		case r.Method == http.MethodPatch && strings.Contains(string(body), `"taken"`):
			w.WriteHeader(http.StatusConflict)
			_ = json.NewEncoder(w).Encode(api.Error{Code: api.CodeAlreadyExists, Message: "group acme/taken: already exists"})
		case r.Method == http.MethodPatch:
			_ = json.NewEncoder(w).Encode(groupsFixture[0])
		case r.Method == http.MethodPost && strings.Contains(string(body), "new@example.com"):
			_ = json.NewEncoder(w).Encode(map[string]string{"pending-user": "new@example.com"})
		default:
			w.WriteHeader(http.StatusNoContent)
		}
	})
	a, out, errb := atFakeHub(t, mux)
	for _, c := range []struct {
		args       []string
		code       int
		call, says string
	}{
		{[]string{"groups", "--org", "acme"}, 0, "GET /v1/groups?org=acme", "acme    ops              12  2026-11-02 09:30:05Z\n"},
		{[]string{"show-group", "acme/ops"}, 0, "GET /v1/groups/acme%2Fops", "acme/ops:\n  id: 0b6c3c1e"},
		{[]string{"show-group", "acme/ops", "--format", "json"}, 0, "GET /v1/groups/acme%2Fops", `"members":[{"name":"bob@example.com","kind":"user"}],"grants":[]`},
		{[]string{"rename-group", "acme/ops", "acme/sre"}, 0, `PATCH /v1/groups/acme%2Fops {"name":"sre"}`, ""},
		{[]string{"rename-group", "acme/ops", "taken"}, 1, `PATCH /v1/groups/acme%2Fops {"name":"taken"}`, "ERROR group acme/taken: already exists\n"},
		{[]string{"remove-group", "acme/ops", "-y"}, 0, "DELETE /v1/groups/acme%2Fops", ""},
		// Someone who never logged in: the hub says so, and so does drover.
		{[]string{"grant", "new@example.com", "member", "org:acme"}, 0, `POST /v1/grants {"level":"member","organization":"acme","user":"new@example.com"}`,
			"new@example.com has not logged in yet: this applies from their first login.\n"},
		{[]string{"add-member", "acme/ops", "new@example.com"}, 0, `POST /v1/groups/acme%2Fops/members {"user":"new@example.com"}`,
			"new@example.com has not logged in yet: this applies from their first login.\n"},
		{[]string{"add-member", "acme/ops", "bob@example.com"}, 0, `POST /v1/groups/acme%2Fops/members {"user":"bob@example.com"}`, ""},
	} {
		calls = nil
		out.Reset()
		errb.Reset()
		code := a.Run(t.Context(), c.args)
		if code != c.code || len(calls) != 1 || calls[0] != c.call {
			t.Errorf("%q: exit %d (%s), calls %q; want exit %d and %q", c.args, code, errb, calls, c.code, c.call)
		}
		if got := out.String() + errb.String(); !strings.Contains(got, c.says) || (c.says == "" && got != "") {
			t.Errorf("%q printed %q, want %q", c.args, got, c.says)
		}
	}
}
