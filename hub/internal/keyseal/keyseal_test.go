package keyseal_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"strings"
	"testing"

	"github.com/droverhq/drover/hub/internal/keyseal"
)

func plainKey(t testing.TB) string {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
}

func ring(t testing.TB, current string, old ...string) *keyseal.Ring {
	t.Helper()
	var olds [][]byte
	for _, o := range old {
		olds = append(olds, []byte(o))
	}
	r, err := keyseal.New([]byte(current), olds...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

const (
	secretA = "0123456789abcdef0123456789abcdef-a\n"
	secretB = "0123456789abcdef0123456789abcdef-b"
)

func TestSealedKeysOpenOnlyWithTheirSecretAndRow(t *testing.T) {
	key := plainKey(t)
	a := ring(t, secretA)
	sealed, err := a.Seal("kid1", key)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(sealed, "BEGIN PRIVATE KEY") || strings.Contains(sealed, key[40:80]) {
		t.Fatalf("the sealed key shows the key: %s", sealed)
	}
	if !strings.Contains(sealed, "Key-Encryption-Key: "+a.ID()) {
		t.Fatalf("the sealed key does not name its secret %s: %s", a.ID(), sealed)
	}
	got, reseal, err := a.Open("kid1", sealed)
	if err != nil || got != key || reseal {
		t.Fatalf("Open = %q, %v, %v", got, reseal, err)
	}
	// Trailing white space around the secret does not change it.
	if r := ring(t, strings.TrimSpace(secretA)); r.ID() != a.ID() {
		t.Errorf("id %s != %s", r.ID(), a.ID())
	}

	if _, _, err := a.Open("kid2", sealed); err == nil || !strings.Contains(err.Error(), "does not open") {
		t.Errorf("a sealed key moved to another row opened: %v", err)
	}
	b := ring(t, secretB)
	if _, _, err := b.Open("kid1", sealed); !errors.Is(err, keyseal.ErrSealed) || !strings.Contains(err.Error(), a.ID()) {
		t.Errorf("another secret: %v", err)
	}
	var none *keyseal.Ring
	if _, _, err := none.Open("kid1", sealed); !errors.Is(err, keyseal.ErrSealed) || !strings.Contains(err.Error(), "--key-encryption-key") {
		t.Errorf("no ring: %v", err)
	}
	// One flipped bit of the ciphertext.
	blk, _ := pem.Decode([]byte(sealed))
	blk.Bytes[len(blk.Bytes)-1] ^= 1
	if _, _, err := a.Open("kid1", string(pem.EncodeToMemory(blk))); err == nil {
		t.Error("an altered sealed key opened")
	}
}

func TestRotatingTheSecret(t *testing.T) {
	key := plainKey(t)
	a := ring(t, secretA)
	sealed, _ := a.Seal("kid1", key)
	// B replaces A: A's keys open, and are to be sealed again with B.
	ba := ring(t, secretB, secretA)
	got, reseal, err := ba.Open("kid1", sealed)
	if err != nil || got != key || !reseal {
		t.Fatalf("Open with the old secret = %v, %v", reseal, err)
	}
	resealed, _ := ba.Seal("kid1", got)
	if _, reseal, err := ba.Open("kid1", resealed); err != nil || reseal {
		t.Fatalf("resealed: %v, %v", reseal, err)
	}
	if _, _, err := a.Open("kid1", resealed); !errors.Is(err, keyseal.ErrSealed) {
		t.Errorf("the old secret opened a key sealed with the new one: %v", err)
	}
	// A plain key opens with or without a ring, and is to be sealed when
	// there is one.
	if _, reseal, err := a.Open("kid1", key); err != nil || !reseal {
		t.Errorf("plain key with a ring: %v, %v", reseal, err)
	}
	var none *keyseal.Ring
	if got, reseal, err := none.Open("kid1", key); err != nil || reseal || got != key {
		t.Errorf("plain key without a ring: %v, %v", reseal, err)
	}
	if s, _ := none.Seal("kid1", key); s != key {
		t.Error("a nil ring changed the key")
	}
}

func TestShortSecretsAreRefused(t *testing.T) {
	for _, s := range []string{"", "short", strings.Repeat(" ", 40), strings.Repeat("x", keyseal.MinSecret-1) + "\n\n"} {
		if _, err := keyseal.New([]byte(s)); err == nil || !strings.Contains(err.Error(), "at least 32 bytes") {
			t.Errorf("secret %q: %v", s, err)
		}
	}
	if _, err := keyseal.New([]byte(secretA), []byte("short")); err == nil || !strings.Contains(err.Error(), "old secret 1") {
		t.Errorf("short old secret: %v", err)
	}
}

func TestOpenRefusesWhatIsNotAKey(t *testing.T) {
	a := ring(t, secretA)
	key := plainKey(t)
	notKey, _ := a.Seal("kid1", "hello")
	for name, stored := range map[string]string{
		"empty":         "",
		"not PEM":       "-----BEGIN nothing",
		"two blocks":    key + key,
		"a certificate": string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte{1}})),
		"short sealed":  string(pem.EncodeToMemory(&pem.Block{Type: "DROVER SEALED PRIVATE KEY", Headers: map[string]string{"Key-Encryption-Key": a.ID()}, Bytes: []byte{1, 2}})),
		"sealed text":   notKey,
	} {
		if _, _, err := a.Open("kid1", stored); err == nil {
			t.Errorf("%s opened", name)
		}
	}
}

// FuzzOpen holds that Open never panics on what a database row may hold,
// and opens only what the ring sealed for that row.
func FuzzOpen(f *testing.F) {
	a := ring(f, secretA)
	key := plainKey(f)
	sealed, _ := a.Seal("kid1", key)
	f.Add("kid1", sealed)
	f.Add("kid1", key)
	f.Add("kid2", sealed)
	f.Add("kid1", "-----BEGIN DROVER SEALED PRIVATE KEY-----\nKey-Encryption-Key: x\n\nAAAA\n-----END DROVER SEALED PRIVATE KEY-----\n")
	f.Add("", "")
	f.Fuzz(func(t *testing.T, kid, stored string) {
		got, _, err := a.Open(kid, stored)
		if err != nil {
			return
		}
		if b, _ := pem.Decode([]byte(got)); b == nil || b.Type != "PRIVATE KEY" {
			t.Fatalf("Open gave %q", got)
		}
	})
}
