package cli

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/cli/internal/clientstore"
	"github.com/droverhq/drover/cli/internal/modelcmd/modelcmdtest"
)

// TestLoginAgain: 'drover login' alone logs a service account in again
// with the credentials the store keeps; logging in as someone else
// forgets the models and current model of the identity before.
func TestLoginAgain(t *testing.T) {
	var grants []string
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/auth/token", func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		grants = append(grants, r.Form.Get("grant_type")+" "+r.Form.Get("client_id")+" "+r.Form.Get("client_secret"))
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": "tok-" + r.Form.Get("client_id"), "token_type": "Bearer", "expires_in": 900})
	})
	mux.HandleFunc("GET /v1/whoami", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]string{"user": strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer tok-"), "access": "login"})
	})
	a, out, errb := atFakeHub(t, mux)
	dir, err := clientstore.DefaultStoreDir(a.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	st := &clientstore.Store{Dir: dir}
	if err := st.Update(func(s *clientstore.State) error {
		acct := s.Accounts["hub"]
		acct.User, acct.ClientID, acct.ClientSecret = "ci", "ci", "s3cret"
		s.Models["hub"] = &clientstore.ControllerModels{Models: map[string]clientstore.ModelDetails{"prod": {UUID: "u1"}}, CurrentModel: "prod"}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	models := func() *clientstore.ControllerModels {
		s, err := st.Load()
		if err != nil {
			t.Fatal(err)
		}
		return s.Models["hub"]
	}
	if code := a.Run(t.Context(), []string{"login"}); code != 0 || out.String() != "Logged in to hub as ci.\n" {
		t.Fatalf("login again: exit %d: %s%s", code, out, errb)
	}
	if len(grants) != 1 || grants[0] != "client_credentials ci s3cret" {
		t.Errorf("login again asked the hub for %q, want the stored client credentials", grants)
	}
	if m := models(); m == nil || m.CurrentModel != "prod" {
		t.Errorf("the same identity again lost its models: %+v", m)
	}
	s, _ := st.Load()
	addr := s.Controllers["hub"].APIAddresses[0]
	out.Reset()
	if code := a.Run(t.Context(), []string{"login", "https://" + addr, "--client-id", "other", "--client-secret", "x"}); code != 0 {
		t.Fatalf("login as another: exit %d: %s%s", code, out, errb)
	}
	if m := models(); m != nil && (m.CurrentModel != "" || len(m.Models) != 0) {
		t.Errorf("another identity kept the models of the one before: %+v", m)
	}
}

// TestSessionRenewalRefusals: a command whose hub session must be renewed
// says why it could not be: the hub's own words when it refuses (a reused
// refresh token ends the session), and, when the hub is unavailable for a
// moment, that, without sending its user to log in again.
func TestSessionRenewalRefusals(t *testing.T) {
	const down = "the hub's database is unavailable (try again shortly; if this lasts, the hub's operator checks its PostgreSQL server)"
	var answer atomic.Value
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/auth/token", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch answer.Load().(string) {
		case "down":
			w.WriteHeader(http.StatusServiceUnavailable)
			_ = json.NewEncoder(w).Encode(map[string]string{"code": "unavailable", "message": down, "error": "temporarily_unavailable", "error_description": down})
		case "reused":
			w.WriteHeader(http.StatusBadRequest)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": "invalid_grant",
				"error_description": "this refresh token was used before, so a copy of it is in other hands: its session is ended (log in again)"})
		default:
			w.WriteHeader(http.StatusBadRequest)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": "invalid_grant"})
		}
	})
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, _ *http.Request) {
		modelcmdtest.AnswerError(w, http.StatusUnauthorized, api.CodeUnauthorized, "authentication required")
	})
	a, _, errb := atFakeHub(t, mux)
	dir, _ := clientstore.DefaultStoreDir(a.Getenv)
	if err := (&clientstore.Store{Dir: dir}).Update(func(s *clientstore.State) error { s.Accounts["hub"].RefreshToken = "r1"; return nil }); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ answer, want string }{
		{"down", "ERROR " + down + "\n"},
		{"reused", "ERROR the hub refused to renew the session: this refresh token was used before, so a copy of it is in " +
			"other hands: its session is ended (run 'drover login' again)\n"},
		{"expired", "ERROR the hub session has ended and could not be renewed (invalid_grant; run 'drover login' again)\n"},
	} {
		answer.Store(c.answer)
		errb.Reset()
		if code := a.Run(t.Context(), []string{"models"}); code != 1 || errb.String() != c.want {
			t.Errorf("a renewal answered %s: exit %d, stderr %q, want %q", c.answer, code, errb, c.want)
		}
	}
}
