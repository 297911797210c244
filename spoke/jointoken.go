package spoke

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
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
// can therefore check a token without shared mutable state.
//
// Hub tokens (hubtoken.go) have the same form with the purpose "hub" in
// the payload, so neither kind is accepted in place of the other; they are
// also recorded in raft, which makes them single use.

const tokenPrefix = "drv1"

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
