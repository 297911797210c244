package hubtrust

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// TestVerifiedTokensAreReusedUntilExpiry: a token that passed is answered
// from the cache (no JWKS needed), never past its expiry or verifiedFor,
// only for the exact string and audience it passed with.
func TestVerifiedTokensAreReusedUntilExpiry(t *testing.T) {
	var serve atomic.Bool
	serve.Store(true)
	srv, sig := testIssuer(t, &serve)
	now := time.Unix(1_800_000_000, 0)
	v, err := New(Config{Issuer: "https://hub", JWKSURL: srv.URL, HTTPClient: srv.Client(), MinRefresh: -1,
		Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	mint := func(exp time.Time) string {
		raw, err := jwt.Signed(sig).Claims(wireClaims{Claims: jwt.Claims{Issuer: "https://hub", Subject: "alice",
			Audience: jwt.Audience{"ctl"}, Expiry: jwt.NewNumericDate(exp)}, Access: AccessRead, Model: "m"}).Serialize()
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	long := mint(now.Add(time.Hour))
	if c, err := v.Verify(t.Context(), long, "ctl"); err != nil || c.Model != "m" || c.Subject != "alice" {
		t.Fatalf("first verification: %+v %v", c, err)
	}
	// From here, anything not answered from the cache fails: the JWKS is
	// forgotten and the hub's is down.
	serve.Store(false)
	v.mu.Lock()
	v.keys, v.fetched = jose.JSONWebKeySet{}, time.Time{}
	v.mu.Unlock()
	if c, err := v.Verify(t.Context(), long, "ctl"); err != nil || c.Model != "m" {
		t.Fatalf("a verified token within verifiedFor: %+v %v", c, err)
	}
	if _, err := v.Verify(t.Context(), long, "other"); err == nil {
		t.Fatal("the same token for another audience was answered from the cache")
	}
	if _, err := v.Verify(t.Context(), long+"x", "ctl"); err == nil {
		t.Fatal("a token one byte apart was accepted")
	}
	now = now.Add(verifiedFor + time.Second)
	if _, err := v.Verify(t.Context(), long, "ctl"); err == nil {
		t.Fatal("a cached token was reused past verifiedFor, without its key")
	}
	// A token is never reused past its own expiry, even within verifiedFor.
	serve.Store(true)
	short := mint(now.Add(2 * time.Second))
	if _, err := v.Verify(t.Context(), short, "ctl"); err != nil {
		t.Fatal(err)
	}
	now = now.Add(2*time.Second + Leeway + time.Second)
	if _, err := v.Verify(t.Context(), short, "ctl"); !errors.Is(err, ErrInvalid) {
		t.Fatalf("an expired token: %v, want ErrInvalid", err)
	}
}

// testIssuer serves a hub's JWKS of one ES256 key, "k1", while serve is
// set (nil: always), and returns it and a signer with that key.
func testIssuer(t *testing.T, serve *atomic.Bool) (*httptest.Server, jose.Signer) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	jwk := jose.JSONWebKey{Key: key, KeyID: "k1", Algorithm: string(jose.ES256), Use: "sig"}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if serve != nil && !serve.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{jwk.Public()}})
	}))
	t.Cleanup(srv.Close)
	sig, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: jwk}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return srv, sig
}
