package cli

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestSigningKeyCommands: signing-keys shows the hub's keys, a plain one
// as such; rotate-signing-key makes the hub's call, and asks before
// revoking unless -y.
func TestSigningKeyCommands(t *testing.T) {
	var calls []string
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/hub/signing-keys", func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"keys":[
			{"kid":"newkid","current":true,"created-at":"2026-11-23T09:00:00Z","sealed-with":"5f0c1e2d3a4b6c7d"},
			{"kid":"oldkid","current":false,"created-at":"2026-10-20T09:00:00Z","retired-at":"2026-11-23T09:00:00Z","accepted-until":"2026-12-23T09:00:00Z"}]}`))
	})
	mux.HandleFunc("POST /v1/hub/signing-keys", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		calls = append(calls, strings.TrimSpace(string(b)))
		w.WriteHeader(http.StatusCreated)
		if strings.Contains(string(b), "true") {
			_, _ = w.Write([]byte(`{"current":"k3","revoked":["k1","k2"]}`))
			return
		}
		_, _ = w.Write([]byte(`{"current":"k3","revoked":[]}`))
	})
	a, out, _ := atFakeHub(t, mux)
	for _, c := range []struct {
		args []string
		code int
		call string
		out  string
	}{
		{[]string{"signing-keys"}, 0, "", `Key     State    Created               Accepted until        Sealed with
newkid  current  2026-11-23 09:00:00Z  -                     5f0c1e2d3a4b6c7d
oldkid  retired  2026-10-20 09:00:00Z  2026-12-23 09:00:00Z  plain
`},
		{[]string{"rotate-signing-key"}, 0, `{"revoke-previous":false}`, "The hub signs with key k3 from now on.\n"},
		// No terminal and no -y: refused before any call.
		{[]string{"rotate-signing-key", "--revoke-previous"}, 2, "", ""},
		{[]string{"rotate-signing-key", "--revoke-previous", "-y"}, 0, `{"revoke-previous":true}`,
			"The hub signs with key k3 from now on.\nRevoked: k1, k2.\n"},
	} {
		out.Reset()
		calls = nil
		code := a.Run(t.Context(), c.args)
		if code != c.code || out.String() != c.out || strings.Join(calls, "") != c.call {
			t.Errorf("%q: exit %d, calls %q\n%s\nwant exit %d, call %q\n%s", c.args, code, calls, out, c.code, c.call, c.out)
		}
	}
}
