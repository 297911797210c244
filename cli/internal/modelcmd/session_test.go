package modelcmd

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
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
		sess   HubSession
		err    error
		says   string
	}{
		{"a controller's URL", http.StatusNotFound, HubSession{}, nil, base + " is not a hub"},
		{"a wrong secret", http.StatusUnauthorized, HubSession{Error: "invalid_client"}, nil, "check --client-id and --client-secret"},
		{"a refusal with its reason", http.StatusBadRequest, HubSession{Error: "invalid_grant", ErrorDescription: "expired"}, nil,
			"login refused: invalid_grant: expired"},
		{"a refusal without a body", http.StatusBadGateway, HubSession{}, nil, "login refused: Bad Gateway"},
		{"the hub's identity provider out of reach", http.StatusServiceUnavailable,
			HubSession{Error: "temporarily_unavailable", ErrorDescription: "the hub cannot reach its identity provider (try again shortly)"}, nil,
			"login failed: the hub cannot reach its identity provider (try again shortly)"},
		{"another CA", 0, HubSession{}, post(fmt.Errorf("tls: %w", x509.UnknownAuthorityError{})), "--ca must be"},
		{"nothing listening", 0, HubSession{}, post(fmt.Errorf("dial tcp: %w", syscall.ECONNREFUSED)), "is a hub running at " + base},
	} {
		err := LoginError(base, c.status, c.sess, c.err)
		if err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v, want it to say %q", c.what, err, c.says)
		}
		if c.err != nil && !errors.Is(err, c.err) {
			t.Errorf("%s: the cause is lost: %v", c.what, err)
		}
	}
}
