package hubtrust

import (
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// TestOnlyTheHubsAlgorithmIsRead (issue 26, finding 12): a controller
// verifies hub tokens with the hub's algorithm (ES256) alone: a token in
// another (RS256 here) is refused as it is read, without fetching the
// hub's JWKS for its unknown key id.
func TestOnlyTheHubsAlgorithmIsRead(t *testing.T) {
	hub, _ := testIssuer(t, nil)
	var fetches atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetches.Add(1)
		hub.Config.Handler.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	v, err := New(Config{Issuer: "https://hub", JWKSURL: srv.URL, HTTPClient: srv.Client(), MinRefresh: -1})
	if err != nil {
		t.Fatal(err)
	}
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: rsaKey, KeyID: "forged"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	forged, err := jwt.Signed(signer).Claims(wireClaims{Claims: jwt.Claims{Issuer: "https://hub", Subject: "alice",
		Audience: jwt.Audience{"ctl"}, Expiry: jwt.NewNumericDate(time.Now().Add(time.Minute))}, Access: AccessSuperuser}).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.Verify(t.Context(), forged, "ctl"); !errors.Is(err, ErrInvalid) {
		t.Fatalf("an RS256 token: %v, want ErrInvalid", err)
	}
	if n := fetches.Load(); n != 0 {
		t.Errorf("an RS256 token made the controller fetch the hub's JWKS %d times", n)
	}
}
