package spoke

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Join tokens let a new node join a controller: "drv1.<payload>.<mac>",
// where payload names the CA fingerprint (so the joiner can pin the CA
// before trusting anything it is sent) and an expiry, and mac is an
// HMAC-SHA256 over it with the cluster secret every node holds. Any node
// can therefore refuse a forged or expired token on its own, before it
// writes anything. Each token is also recorded in raft (as its SHA-256)
// when it is handed out, and consumed by the command that admits a node,
// which makes it single use (docs/decisions/0018-single-use-join-tokens.md).
//
// Hub tokens (hubtoken.go) have the same form with the purpose "hub" in
// the payload, so neither kind is accepted in place of the other; they are
// recorded in raft and single use too.

const tokenPrefix = "drv1"

// A node join token's lifetime: DefaultJoinTokenTTL when none is asked
// for, at most MaxJoinTokenTTL (as Kubernetes bootstrap tokens default to
// a day); a longer one is refused, not shortened.
const (
	DefaultJoinTokenTTL = time.Hour
	MaxJoinTokenTTL     = 24 * time.Hour
)

// tokenHash is what raft records of a token: the SHA-256 of its text.
func tokenHash(tok string) string {
	sum := sha256.Sum256([]byte(tok))
	return hex.EncodeToString(sum[:])
}

// tokenID names a token in logs and metrics without revealing it: a
// prefix of its hash.
func tokenID(tok string) string { return tokenHash(tok)[:12] }

// ErrBadToken is returned for a malformed, forged or expired join token.
var ErrBadToken = errors.New("invalid or expired join token")

type tokenPayload struct {
	CA      string `json:"ca"`
	Expires int64  `json:"exp"`
	Nonce   string `json:"n"`
	// Use is the token's purpose: "" for a node join token (the only
	// kind before hub tokens), purposeHub for a hub token.
	Use string `json:"use,omitempty"`
}

// Token purposes.
const (
	purposeJoin = ""
	purposeHub  = "hub"
)

func makeJoinToken(secret []byte, caFingerprint, purpose string, expires time.Time) string {
	p, _ := json.Marshal(tokenPayload{CA: caFingerprint, Expires: expires.Unix(), Nonce: randomHex(16), Use: purpose})
	enc := base64.RawURLEncoding.EncodeToString(p)
	return tokenPrefix + "." + enc + "." + base64.RawURLEncoding.EncodeToString(mac(secret, enc))
}

func mac(secret []byte, payload string) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(payload))
	return m.Sum(nil)
}

// parseJoinToken reads the payload without checking the MAC: the joiner
// uses it to learn which CA to pin.
func parseJoinToken(tok string) (tokenPayload, string, []byte, error) {
	var p tokenPayload
	parts := strings.Split(tok, ".")
	if len(parts) != 3 || parts[0] != tokenPrefix {
		return p, "", nil, fmt.Errorf("%w: not a drover join token", ErrBadToken)
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return p, "", nil, fmt.Errorf("%w: %v", ErrBadToken, err)
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return p, "", nil, fmt.Errorf("%w: %v", ErrBadToken, err)
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		return p, "", nil, fmt.Errorf("%w: %v", ErrBadToken, err)
	}
	return p, parts[1], sig, nil
}

func verifyJoinToken(secret []byte, caFingerprint, purpose, tok string, now time.Time) error {
	p, enc, sig, err := parseJoinToken(tok)
	if err != nil {
		return err
	}
	if subtle.ConstantTimeCompare(sig, mac(secret, enc)) != 1 {
		return fmt.Errorf("%w: signature mismatch", ErrBadToken)
	}
	if p.Use != purpose {
		return fmt.Errorf("%w: a token for another purpose", ErrBadToken)
	}
	if p.CA != caFingerprint {
		return fmt.Errorf("%w: issued for another controller", ErrBadToken)
	}
	if now.Unix() > p.Expires {
		return fmt.Errorf("%w: expired at %s", ErrBadToken, time.Unix(p.Expires, 0).UTC().Format(time.RFC3339))
	}
	return nil
}
