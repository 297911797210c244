package hubtrust

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/droverhq/drover/tests/testkit"
)

// TestRevokedKeysLeaveWithinMaxAge: once the hub withdraws a key from its
// JWKS (a revocation), the controller learns it within MaxAge although no
// new key id shows up: KeyCurrent turns false for it (streams opened with
// its tokens end) and its tokens are refused. A hub that does not answer
// meanwhile changes nothing: the keys in hand serve.
func TestRevokedKeysLeaveWithinMaxAge(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	jwk := jose.JSONWebKey{Key: key, KeyID: "k1", Algorithm: string(jose.ES256), Use: "sig"}
	var published, down atomic.Bool
	published.Store(true)
	var fetches atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetches.Add(1)
		if down.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		set := jose.JSONWebKeySet{Keys: []jose.JSONWebKey{}}
		if published.Load() {
			set.Keys = append(set.Keys, jwk.Public())
		}
		_ = json.NewEncoder(w).Encode(set)
	}))
	defer srv.Close()
	sig, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: jwk}, nil)
	if err != nil {
		t.Fatal(err)
	}
	v, err := New(Config{Issuer: "https://hub", JWKSURL: srv.URL, HTTPClient: srv.Client(), MaxAge: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(v.Wait) // a background refetch ends with the test
	mint := func(sub string) string {
		raw, err := jwt.Signed(sig).Claims(wireClaims{Claims: jwt.Claims{Issuer: "https://hub", Subject: sub,
			Audience: jwt.Audience{"ctl"}, Expiry: jwt.NewNumericDate(time.Now().Add(time.Hour))}, Access: AccessSuperuser}).Serialize()
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	c, err := v.Verify(t.Context(), mint("a"), "ctl")
	if err != nil || c.KeyID != "k1" {
		t.Fatalf("before the revocation: %+v %v", c, err)
	}
	// The hub is down past MaxAge: the key in hand stays good.
	down.Store(true)
	before := fetches.Load()
	testkit.EventuallyWithin(t, 5*time.Second, func() (bool, error) {
		// Asking is what starts a refetch of a stale JWKS.
		if !v.KeyCurrent(t.Context(), "k1") {
			t.Fatal("a hub that does not answer revoked its key")
		}
		return fetches.Load() > before, nil
	}, "a refetch of the stale JWKS tried")
	if _, err := v.Verify(t.Context(), mint("b"), "ctl"); err != nil {
		t.Fatalf("a token while the hub does not answer: %v", err)
	}

	down.Store(false)
	published.Store(false)
	testkit.EventuallyWithin(t, 5*time.Second, func() (bool, error) { return !v.KeyCurrent(t.Context(), "k1"), nil },
		"the revoked key no longer current")
	if _, err := v.Verify(t.Context(), mint("c"), "ctl"); err == nil {
		t.Fatal("a token signed with the revoked key was accepted")
	}
}
