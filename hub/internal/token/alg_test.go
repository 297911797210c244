package token_test

import (
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/droverhq/drover/hub/internal/hubtest"
	"github.com/droverhq/drover/hub/internal/token"
)

// TestVerifyAcceptsOnlyTheKeysAlgorithm (issue 26, finding 12): the hub
// verifies its tokens with the algorithm of its keys (ES256) alone. A token
// in another algorithm (RS256 here) is refused as soon as it is read: it
// does not get to the key lookup, whose reload of the keys (for another
// replica's new key) it would otherwise spend, so that the other replica's
// next token would be refused.
func TestVerifyAcceptsOnlyTheKeysAlgorithm(t *testing.T) {
	st := hubtest.Store(t)
	a, err := token.New(t.Context(), token.Config{Store: st, Issuer: "https://hub"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := token.New(t.Context(), token.Config{Store: st, Issuer: "https://hub"})
	if err != nil {
		t.Fatal(err)
	}
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: rsaKey, KeyID: "forged"}},
		(&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		t.Fatal(err)
	}
	forged, err := jwt.Signed(signer).Claims(claims("u1", "drover-hub", time.Now().Add(time.Minute))).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Verify(forged, "drover-hub"); !errors.Is(err, token.ErrInvalid) {
		t.Fatalf("an RS256 token: %v, want refused", err)
	}
	if _, _, err := a.RotateNow(t.Context(), false); err != nil {
		t.Fatal(err)
	}
	tok, _ := a.Sign(claims("u1", "drover-hub", time.Now().Add(time.Minute)))
	if _, err := b.Verify(tok, "drover-hub"); err != nil {
		t.Errorf("the other replica's token with its new key, after an RS256 token: %v", err)
	}
}
