package cli

import (
	"net/http"
	"net/http/httptest"
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
	srv := httptest.NewTLSServer(mux)
	defer srv.Close()
	a, out, _ := testApp(t)
	a.Now = func() time.Time { return time.Date(2026, 11, 22, 9, 30, 0, 0, time.UTC) }
	loggedInTo(t, a, srv)
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
	} {
		out.Reset()
		if code := a.Run(t.Context(), c.args); code != 0 || out.String() != c.want {
			t.Errorf("%q: exit %d\n%s\nwant\n%s", c.args, code, out, c.want)
		}
	}
}
