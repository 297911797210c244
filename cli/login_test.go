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
	"syscall"
	"testing"
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
