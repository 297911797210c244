package websession

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func testKey(t testing.TB, secret string) []byte {
	t.Helper()
	k, err := Key([]byte(secret))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestMintVerify(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	key := testKey(t, "0123456789abcdef0123456789abcdef")
	c := Claims{User: "admin", Password: PasswordFingerprint("sha256:abc"), Expiry: now.Add(time.Hour).Unix()}
	tok, err := Mint(key, c)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Verify(key, tok, now)
	if err != nil || got != c {
		t.Fatalf("Verify: %+v %v, want %+v", got, err, c)
	}
	if _, err := Verify(key, tok, now.Add(time.Hour)); !errors.Is(err, ErrExpired) {
		t.Errorf("at expiry: %v", err)
	}
	other := testKey(t, "another controller's secret....")
	if _, err := Verify(other, tok, now); !errors.Is(err, ErrSignature) {
		t.Errorf("another controller's key: %v", err)
	}
	// A payload changed under the same signature.
	forged, _ := Mint(key, Claims{User: "root", Expiry: c.Expiry})
	p, _, _ := strings.Cut(forged, ".")
	_, s, _ := strings.Cut(tok, ".")
	if _, err := Verify(key, p+"."+s, now); !errors.Is(err, ErrSignature) {
		t.Errorf("swapped payload: %v", err)
	}
	for _, bad := range []string{"", "x", "a.b", tok + "x", strings.Repeat("a", MaxTokenLen+1)} {
		if _, err := Verify(key, bad, now); err == nil {
			t.Errorf("Verify(%.20q) accepted", bad)
		}
	}
	if PasswordFingerprint("sha256:a") == PasswordFingerprint("sha256:b") {
		t.Error("two hashes share a fingerprint")
	}
	if _, err := Key([]byte("short")); err == nil {
		t.Error("a short secret accepted")
	}
}

// FuzzVerify: any cookie value is refused or verified, never a panic; one
// that verifies was minted with the key.
func FuzzVerify(f *testing.F) {
	key := testKey(f, "0123456789abcdef0123456789abcdef")
	now := time.Unix(1_800_000_000, 0)
	tok, _ := Mint(key, Claims{User: "admin", Expiry: now.Add(time.Hour).Unix()})
	for _, s := range []string{tok, "", ".", "e30.", "eyJ1IjoiYSJ9.AAAA", tok[:len(tok)-2]} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := Verify(key, s, now)
		if err == nil && s != tok {
			if re, _ := Mint(key, c); re != s {
				t.Fatalf("verified a token the key did not mint: %q", s)
			}
		}
	})
}
