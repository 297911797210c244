// Package websession mints and verifies the dashboard's session tokens on
// a standalone controller: a user's name, an expiry and a fingerprint of
// the user's password hash, signed with HMAC-SHA256 under a key every node
// of the controller derives from the cluster secret
// (docs/decisions/0038-dashboard-sessions.md).
//
// Invariants: a token verifies on any node of the controller that minted
// it and on no other; it never verifies after its expiry; it names the
// password it was minted under, so the caller can end every session of a
// user by changing the password. Verify reads no more than MaxTokenLen
// bytes and never panics on any input.
package websession

import (
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// MaxTokenLen bounds a token: a name of at most a few hundred bytes,
// base64 and a signature.
const MaxTokenLen = 1024

// KeyInfo is the HKDF info that sets the session key apart from the other
// uses of the cluster secret (join and hub tokens).
const KeyInfo = "drover dashboard session v1"

// Errors of Verify.
var (
	ErrMalformed = errors.New("websession: malformed session token")
	ErrSignature = errors.New("websession: bad session token signature")
	ErrExpired   = errors.New("websession: session expired")
)

// Claims are what a token says.
type Claims struct {
	User string `json:"u"`
	// Password is PasswordFingerprint of the user's stored hash when the
	// session began.
	Password string `json:"p"`
	Expiry   int64  `json:"e"` // Unix seconds
}

// Key derives the session key from the controller's cluster secret.
func Key(clusterSecret []byte) ([]byte, error) {
	if len(clusterSecret) < 16 {
		return nil, errors.New("websession: cluster secret shorter than 16 bytes")
	}
	return hkdf.Key(sha256.New, clusterSecret, nil, KeyInfo, 32)
}

// PasswordFingerprint names a stored password hash without revealing it.
func PasswordFingerprint(hash string) string {
	sum := sha256.Sum256([]byte("drover session password\x00" + hash))
	return base64.RawURLEncoding.EncodeToString(sum[:9])
}

// Mint signs c with key.
func Mint(key []byte, c Claims) (string, error) {
	b, err := json.Marshal(c)
	if err != nil {
		return "", err
	}
	payload := base64.RawURLEncoding.EncodeToString(b)
	tok := payload + "." + base64.RawURLEncoding.EncodeToString(sign(key, payload))
	if len(tok) > MaxTokenLen {
		return "", fmt.Errorf("websession: token of %d bytes is over %d", len(tok), MaxTokenLen)
	}
	return tok, nil
}

// Verify checks tok's signature under key and its expiry against now, and
// returns its claims.
func Verify(key []byte, tok string, now time.Time) (Claims, error) {
	if len(tok) > MaxTokenLen {
		return Claims{}, ErrMalformed
	}
	payload, sig, ok := strings.Cut(tok, ".")
	if !ok {
		return Claims{}, ErrMalformed
	}
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil {
		return Claims{}, ErrMalformed
	}
	if !hmac.Equal(got, sign(key, payload)) {
		return Claims{}, ErrSignature
	}
	b, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil {
		return Claims{}, ErrMalformed
	}
	var c Claims
	if err := json.Unmarshal(b, &c); err != nil || c.User == "" {
		return Claims{}, ErrMalformed
	}
	if !now.Before(time.Unix(c.Expiry, 0)) {
		return Claims{}, ErrExpired
	}
	return c, nil
}

func sign(key []byte, payload string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("drover-session\x00" + payload))
	return m.Sum(nil)
}
