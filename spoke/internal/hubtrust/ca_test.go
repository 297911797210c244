package hubtrust

import (
	"errors"
	"testing"
	"time"
)

// TestTokensNameTheControllersCA: a token whose "ca" claim names another
// CA than this controller's is refused (the hub minted it for a server
// that claimed this controller's UUID at registration); one naming this
// controller's CA, or none (a hub older than the claim), is accepted.
func TestTokensNameTheControllersCA(t *testing.T) {
	srv, sig := testIssuer(t, nil)
	now := time.Now()
	v, err := New(Config{Issuer: "https://hub", JWKSURL: srv.URL, HTTPClient: srv.Client(), MinRefresh: -1,
		ControllerCA: "c0ffee"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		ca     string
		accept bool
	}{{"c0ffee", true}, {"", true}, {"decade", false}} {
		_, err := v.Verify(t.Context(), superuserToken(t, sig, now, c.ca), "ctl")
		if c.accept != (err == nil) || (err != nil && !errors.Is(err, ErrInvalid)) {
			t.Errorf("token naming CA %q: %v, want accepted %v", c.ca, err, c.accept)
		}
	}
}
