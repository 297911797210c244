package hubtrust

import (
	"errors"
	"strings"
	"testing"
)

// TestJWKSOverPlainHTTPOnlyOnLoopback (issue 26, finding 12): the hub's
// keys are fetched over https; a JWKS URL (or a hub URL it defaults from)
// in plain http is refused, saying so, unless its host is a loopback
// address (a hub on the same machine, as in droverd dev).
func TestJWKSOverPlainHTTPOnlyOnLoopback(t *testing.T) {
	for _, c := range []struct {
		issuer, jwks string
		ok           bool
	}{
		{"https://hub.example.com", "", true},
		{"https://hub.example.com", "https://keys.example.com/jwks.json", true},
		{"https://hub.example.com", "http://hub.example.com/.well-known/jwks.json", false},
		{"http://hub.example.com", "", false},
		{"https://hub.example.com", "ftp://hub.example.com/jwks.json", false},
		{"https://hub.example.com", "http://127.0.0.1:8443/jwks.json", true},
		{"http://localhost:8443", "", true},
		{"https://hub.example.com", "http://[::1]:8443/jwks.json", true},
		{"https://hub.example.com", "http://127.0.0.1.example.com/jwks.json", false},
	} {
		_, err := New(Config{Issuer: c.issuer, JWKSURL: c.jwks})
		if c.ok != (err == nil) {
			t.Errorf("hub %s, JWKS %q: %v, want accepted %v", c.issuer, c.jwks, err, c.ok)
		}
		if err != nil && (!errors.Is(err, ErrInsecureJWKS) || !strings.Contains(err.Error(), "https")) {
			t.Errorf("hub %s, JWKS %q: the error does not say https is needed: %v", c.issuer, c.jwks, err)
		}
	}
}
