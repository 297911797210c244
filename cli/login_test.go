package cli

import (
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/droverhq/drover/api"
)

// TestLoginErrorsSayWhatToCheck: a failed login names what to look at:
// that the URL is a hub's, the CA, that the hub runs, the credentials.
func TestLoginErrorsSayWhatToCheck(t *testing.T) {
	const base = "https://hub.example.com"
	post := func(err error) error { return &url.Error{Op: "Post", URL: base + "/v1/auth/token", Err: err} }
	for _, c := range []struct {
		what   string
		status int
		sess   hubSession
		err    error
		says   string
	}{
		{"a controller's URL", http.StatusNotFound, hubSession{}, nil, base + " is not a hub"},
		{"a wrong secret", http.StatusUnauthorized, hubSession{Error: "invalid_client"}, nil, "check --client-id and --client-secret"},
		{"a refusal with its reason", http.StatusBadRequest, hubSession{Error: "invalid_grant", ErrorDescription: "expired"}, nil,
			"login refused: invalid_grant: expired"},
		{"a refusal without a body", http.StatusBadGateway, hubSession{}, nil, "login refused: Bad Gateway"},
		{"the hub's identity provider out of reach", http.StatusServiceUnavailable,
			hubSession{Error: "temporarily_unavailable", ErrorDescription: "the hub cannot reach its identity provider (try again shortly)"}, nil,
			"login failed: the hub cannot reach its identity provider (try again shortly)"},
		{"another CA", 0, hubSession{}, post(fmt.Errorf("tls: %w", x509.UnknownAuthorityError{})), "--ca must be"},
		{"nothing listening", 0, hubSession{}, post(fmt.Errorf("dial tcp: %w", syscall.ECONNREFUSED)), "is a hub running at " + base},
	} {
		err := loginError(base, c.status, c.sess, c.err)
		if err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v, want it to say %q", c.what, err, c.says)
		}
		if c.err != nil && !errors.Is(err, c.err) {
			t.Errorf("%s: the cause is lost: %v", c.what, err)
		}
	}
}

// TestDeviceLoginRefusals: when the issuer ends a device login (the code
// expired unapproved, the person denied it, another error), drover says
// what happened in words, not in OAuth error codes.
func TestDeviceLoginRefusals(t *testing.T) {
	for _, c := range []struct {
		answer map[string]string
		says   string
	}{
		{map[string]string{"error": "expired_token"}, "the login code expired before it was approved; run 'drover login' again"},
		{map[string]string{"error": "access_denied"}, "login refused: denied at the identity provider"},
		{map[string]string{"error": "access_denied", "error_description": "user bob@example.com is disabled"}, "login refused: user bob@example.com is disabled"},
		{map[string]string{"error": "invalid_request", "error_description": "Invalid Device code."}, "device login failed: Invalid Device code."},
	} {
		t.Run(c.answer["error"], func(t *testing.T) {
			t.Parallel()
			mux := http.NewServeMux()
			mux.HandleFunc("POST /v1/auth/device", func(w http.ResponseWriter, _ *http.Request) {
				_ = json.NewEncoder(w).Encode(map[string]any{"device_code": "dc", "user_code": "ABCD-EFGH",
					"verification_uri": "https://idp.example.com/device", "interval": 1})
			})
			mux.HandleFunc("POST /v1/auth/device/token", func(w http.ResponseWriter, _ *http.Request) {
				w.WriteHeader(http.StatusBadRequest)
				_ = json.NewEncoder(w).Encode(c.answer)
			})
			srv := httptest.NewTLSServer(mux)
			defer srv.Close()
			a, out, _ := testApp(t)
			_, err := a.deviceLogin(t.Context(), srv.Client(), srv.URL)
			if err == nil || err.Error() != c.says {
				t.Errorf("got %v, want %q", err, c.says)
			}
			if !strings.Contains(out.String(), "enter the code ABCD-EFGH") {
				t.Errorf("drover did not say where to log in: %q", out)
			}
		})
	}
}

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
	dir, err := DefaultStoreDir(a.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	st := &Store{Dir: dir}
	if err := st.Update(func(s *State) error {
		acct := s.Accounts["hub"]
		acct.User, acct.ClientID, acct.ClientSecret = "ci", "ci", "s3cret"
		s.Models["hub"] = &ControllerModels{Models: map[string]ModelDetails{"prod": {UUID: "u1"}}, CurrentModel: "prod"}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	models := func() *ControllerModels {
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

// TestDeviceLoginWaitsOutAnUnavailableHub: a hub that cannot ask its
// issuer or database for a moment while drover polls for the approval is
// waited out (the person may have approved already), said once; one that
// cannot start a device login says why.
func TestDeviceLoginWaitsOutAnUnavailableHub(t *testing.T) {
	const why = "the hub cannot reach its identity provider (try again shortly)"
	var polls atomic.Int32
	startDown := atomic.Bool{}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/auth/device", func(w http.ResponseWriter, _ *http.Request) {
		if startDown.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			_ = json.NewEncoder(w).Encode(map[string]string{"code": "unavailable", "message": why, "error": "temporarily_unavailable", "error_description": why})
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"device_code": "dc", "user_code": "ABCD-EFGH",
			"verification_uri": "https://idp.example.com/device", "interval": 1})
	})
	mux.HandleFunc("POST /v1/auth/device/token", func(w http.ResponseWriter, _ *http.Request) {
		if polls.Add(1) <= 2 {
			w.WriteHeader(http.StatusServiceUnavailable)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": "temporarily_unavailable", "error_description": why})
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": "tok", "refresh_token": "r", "expires_in": 900})
	})
	srv := httptest.NewTLSServer(mux)
	defer srv.Close()
	a, _, errb := testApp(t)
	sess, err := a.deviceLogin(t.Context(), srv.Client(), srv.URL)
	if err != nil || sess.AccessToken != "tok" || polls.Load() != 3 {
		t.Fatalf("device login across an unavailable hub: %+v %v (%d polls)", sess, err, polls.Load())
	}
	if errb.String() != "Still waiting: "+why+"\n" {
		t.Errorf("stderr %q", errb)
	}
	startDown.Store(true)
	if _, err := a.deviceLogin(t.Context(), srv.Client(), srv.URL); err == nil || err.Error() != "login failed: "+why {
		t.Errorf("a device login the hub cannot start: %v", err)
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
		answerError(w, http.StatusUnauthorized, api.CodeUnauthorized, "authentication required")
	})
	a, _, errb := atFakeHub(t, mux)
	dir, _ := DefaultStoreDir(a.Getenv)
	if err := (&Store{Dir: dir}).Update(func(s *State) error { s.Accounts["hub"].RefreshToken = "r1"; return nil }); err != nil {
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
