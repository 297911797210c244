package token_test

import (
	"os"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/droverhq/drover/hub/internal/hubtest"
	"github.com/droverhq/drover/hub/internal/token"
)

func TestMain(m *testing.M) { os.Exit(hubtest.Main(m)) }

func claims(sub, aud string, exp time.Time) token.Claims {
	return token.Claims{Claims: jwt.Claims{Subject: sub, Audience: jwt.Audience{aud}, Expiry: jwt.NewNumericDate(exp)}}
}

func TestVerifyRejectsForeignIssuerKeyAudienceAndExpiry(t *testing.T) {
	st := hubtest.Store(t)
	now := time.Now()
	keys, err := token.New(t.Context(), token.Config{Store: st, Issuer: "https://hub"})
	if err != nil {
		t.Fatal(err)
	}
	good, _ := keys.Sign(claims("u1", "drover-hub", now.Add(time.Minute)))
	if c, err := keys.Verify(good, "drover-hub"); err != nil || c.Subject != "u1" {
		t.Fatalf("good token: %v %v", c, err)
	}
	// A hub with its own keys (another database) signs foreign tokens.
	other, _ := token.New(t.Context(), token.Config{Store: hubtest.Store(t), Issuer: "https://hub"})
	foreign, _ := other.Sign(claims("u1", "drover-hub", now.Add(time.Minute)))
	wrongIss, _ := (func() (string, error) {
		k, _ := token.New(t.Context(), token.Config{Store: st, Issuer: "https://elsewhere"})
		return k.Sign(claims("u1", "drover-hub", now.Add(time.Minute)))
	})()
	expired, _ := keys.Sign(claims("u1", "drover-hub", now.Add(-time.Minute)))
	noExp, _ := keys.Sign(token.Claims{Claims: jwt.Claims{Subject: "u1", Audience: jwt.Audience{"drover-hub"}}})
	for name, raw := range map[string]string{
		"foreign key": foreign, "wrong issuer": wrongIss, "expired": expired, "no exp": noExp, "garbage": "a.b.c",
	} {
		if _, err := keys.Verify(raw, "drover-hub"); err == nil {
			t.Errorf("%s accepted", name)
		}
	}
	if _, err := keys.Verify(good, "spoke-uuid"); err == nil {
		t.Error("wrong audience accepted")
	}
}

func TestRotationKeepsPreviousKeyValid(t *testing.T) {
	st := hubtest.Store(t)
	keys, err := token.New(t.Context(), token.Config{Store: st, Issuer: "https://hub"})
	if err != nil {
		t.Fatal(err)
	}
	old, _ := keys.Sign(claims("u1", "drover-hub", time.Now().Add(time.Minute)))
	if err := keys.Rotate(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := keys.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n := len(keys.JWKS().Keys); n != 2 {
		t.Fatalf("JWKS has %d keys, want current + previous", n)
	}
	if _, err := keys.Verify(old, "drover-hub"); err != nil {
		t.Fatalf("token of the previous key: %v", err)
	}
	// A second replica on the same database signs with the same current key.
	replica, _ := token.New(t.Context(), token.Config{Store: st, Issuer: "https://hub"})
	fresh, _ := replica.Sign(claims("u2", "drover-hub", time.Now().Add(time.Minute)))
	if _, err := keys.Verify(fresh, "drover-hub"); err != nil {
		t.Fatalf("token from another replica: %v", err)
	}
}
