package cli

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestUsersAtAHub: users lists what the hub answers, as Juju's users does,
// someone never logged in as "never connected".
func TestUsersAtAHub(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/users", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Query().Get("org") == "none" {
			_, _ = w.Write([]byte(`{"users":[]}`))
			return
		}
		_, _ = w.Write([]byte(`{"users":[
			{"name":"alice@example.com","display-name":"Alice","kind":"user","org":"acme","created-at":"2026-11-20T09:00:00Z","last-connection":"2026-11-22T09:25:00Z"},
			{"name":"bob@example.com","kind":"user","org":"acme","pending":true,"created-at":"2026-11-22T07:30:00Z"},
			{"name":"ci","kind":"service-account","org":"acme","created-at":"2026-11-22T09:29:50Z","last-connection":"2026-11-22T09:29:50Z"}]}`))
	})
	a, out, _ := atFakeHub(t, mux)
	a.Now = func() time.Time { return time.Date(2026, 11, 22, 9, 30, 0, 0, time.UTC) }
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"users"}, `Name               Display name  Kind             Org   Date created  Last connection
alice@example.com  Alice         user             acme  2026-11-20    5 minutes ago
bob@example.com                  user             acme  2 hours ago   never connected
ci                               service-account  acme  just now      just now
`},
		{[]string{"users", "--org", "none", "--format", "json"}, `{"users":[]}` + "\n"},
		{[]string{"users", "--org", "none"}, ""},
	} {
		out.Reset()
		if code := a.Run(t.Context(), c.args); code != 0 || out.String() != c.want {
			t.Errorf("%q: exit %d\n%s\nwant\n%s", c.args, code, out, c.want)
		}
	}
}

// TestUserCommandsAtAHub: disable-user, enable-user and remove-user make
// the hub's calls, the user named as one escaped path segment; users
// marks a disabled one.
func TestUserCommandsAtAHub(t *testing.T) {
	var calls []string
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/", func(w http.ResponseWriter, r *http.Request) {
		calls = append(calls, r.Method+" "+r.URL.EscapedPath())
		if r.Method == http.MethodGet && r.URL.Path == "/v1/users" {
			_, _ = w.Write([]byte(`{"users":[{"name":"bob@example.com","kind":"user","org":"acme","disabled":true,"created-at":"2026-11-22T09:00:00Z","last-connection":"2026-11-22T09:00:00Z"}]}`))
			return
		}
		if r.Method == http.MethodGet {
			_, _ = w.Write([]byte(`{"name":"` + strings.TrimPrefix(r.URL.Path, "/v1/users/") + `","kind":"user","org":"acme","created-at":"2026-11-22T07:00:00Z","groups":["acme/ops"]}`))
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	a, out, errb := atFakeHub(t, mux)
	a.Now = func() time.Time { return time.Date(2026, 11, 22, 9, 30, 0, 0, time.UTC) }
	for _, c := range []struct {
		args      []string
		code      int
		call, out string
	}{
		{[]string{"disable-user", "bob@example.com"}, 0, "POST /v1/users/bob@example.com/disable", ""},
		{[]string{"enable-user", "ci/x"}, 0, "POST /v1/users/ci%2Fx/enable", ""},
		{[]string{"remove-user", "bob@example.com", "-y"}, 0, "DELETE /v1/users/bob@example.com", ""},
		{[]string{"remove-user", "bob@example.com"}, 2, "", ""}, // no terminal, no -y: refused before any call
		{[]string{"show-user", "bob@example.com"}, 0, "GET /v1/users/bob@example.com",
			"bob@example.com:\n  date-created: 2 hours ago\n  groups:\n    - acme/ops\n  kind: user\n  last-connection: never connected\n  org: acme\n"},
		{[]string{"show-user"}, 0, "GET /v1/users/alice@example.com",
			"alice@example.com:\n  date-created: 2 hours ago\n  groups:\n    - acme/ops\n  kind: user\n  last-connection: never connected\n  org: acme\n"},
		{[]string{"users"}, 0, "GET /v1/users", "bob@example.com (disabled)                user  acme  30 minutes ago  30 minutes ago\n"},
	} {
		calls = nil
		out.Reset()
		errb.Reset()
		code := a.Run(t.Context(), c.args)
		if code != c.code || strings.Join(calls, ",") != c.call || !strings.HasSuffix(out.String(), c.out) {
			t.Errorf("%q: exit %d, calls %q, printed %q %q; want exit %d, %q, %q", c.args, code, calls, out, errb, c.code, c.call, c.out)
		}
	}
}
