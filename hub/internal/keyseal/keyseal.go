// Package keyseal encrypts the hub's signing keys before they are stored, so
// a copy of the hub's database (a dump, a backup, a replica's disk) cannot
// mint tokens that controllers and the hub accept.
//
// A Ring is built from key-encryption secrets the operator keeps outside the
// database (droverd hub --key-encryption-key FILE, and --old-key-encryption-key
// for the ones it replaces). Each secret becomes an AES-256-GCM key through
// HKDF-SHA256, and gets a short public id so a sealed key names the secret
// that sealed it. A sealed key is a PEM block:
//
//	-----BEGIN DROVER SEALED PRIVATE KEY-----
//	Key-Encryption-Key: 5f0c1e2d3a4b6c7d
//
//	base64(nonce || AES-GCM(PKCS#8 PEM, additional data = the key's kid))
//	-----END DROVER SEALED PRIVATE KEY-----
//
// The kid is bound in as additional data, so a sealed key copied onto
// another row does not open there.
package keyseal

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
)

// MinSecret is the least number of bytes a key-encryption secret has (after
// surrounding white space is trimmed): 32 random bytes, or their base64.
const MinSecret = 32

const (
	sealedType = "DROVER SEALED PRIVATE KEY"
	plainType  = "PRIVATE KEY"
	idHeader   = "Key-Encryption-Key"
	aadPrefix  = "drover hub signing key "
)

// ErrSealed means a key is sealed and the Ring cannot open it: no ring was
// given, or none of its secrets sealed it.
var ErrSealed = errors.New("keyseal: cannot open a sealed signing key")

// Ring is the current key-encryption secret, which seals, and older ones,
// which only open. A nil *Ring seals nothing and opens only plain keys.
type Ring struct {
	current *secret
	old     []*secret
}

type secret struct {
	id   string
	aead cipher.AEAD
}

// New builds a ring from the current secret and the ones it replaces.
func New(current []byte, old ...[]byte) (*Ring, error) {
	cur, err := newSecret(current)
	if err != nil {
		return nil, err
	}
	r := &Ring{current: cur}
	for i, o := range old {
		s, err := newSecret(o)
		if err != nil {
			return nil, fmt.Errorf("old secret %d: %w", i+1, err)
		}
		if s.id == cur.id {
			continue
		}
		r.old = append(r.old, s)
	}
	return r, nil
}

func newSecret(raw []byte) (*secret, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) < MinSecret {
		return nil, fmt.Errorf("keyseal: a key-encryption secret needs at least %d bytes, this one has %d (make one with: head -c 32 /dev/urandom | base64)", MinSecret, len(raw))
	}
	key, err := hkdf.Key(sha256.New, raw, nil, "drover hub signing-key encryption v1", 32)
	if err != nil {
		return nil, err
	}
	idb, err := hkdf.Key(sha256.New, raw, nil, "drover hub signing-key encryption id v1", 8)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &secret{id: hex.EncodeToString(idb), aead: aead}, nil
}

// ID is the public id of the sealing secret ("" for a nil ring).
func (r *Ring) ID() string {
	if r == nil {
		return ""
	}
	return r.current.id
}

// Seal returns keyPEM (a PKCS#8 "PRIVATE KEY" block) sealed for the row of
// kid with the current secret; a nil ring returns it unchanged.
func (r *Ring) Seal(kid, keyPEM string) (string, error) {
	if r == nil {
		return keyPEM, nil
	}
	nonce := make([]byte, r.current.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return "", err
	}
	sealed := r.current.aead.Seal(nonce, nonce, []byte(keyPEM), []byte(aadPrefix+kid))
	return string(pem.EncodeToMemory(&pem.Block{Type: sealedType,
		Headers: map[string]string{idHeader: r.current.id}, Bytes: sealed})), nil
}

// Open returns the plain PEM of the key stored for kid, and whether it
// should be stored again sealed with the current secret (it was plain, or
// sealed with an old secret). A sealed key the ring cannot open is an
// error wrapping ErrSealed that names the secret's id.
func (r *Ring) Open(kid, stored string) (plain string, reseal bool, err error) {
	b, rest := pem.Decode([]byte(stored))
	if b == nil || len(bytes.TrimSpace(rest)) > 0 {
		return "", false, fmt.Errorf("keyseal: key %s: not one PEM block", kid)
	}
	switch b.Type {
	case plainType:
		if len(b.Headers) > 0 {
			return "", false, fmt.Errorf("keyseal: key %s: unexpected PEM headers", kid)
		}
		return stored, r != nil, nil
	case sealedType:
	default:
		return "", false, fmt.Errorf("keyseal: key %s: PEM block %q is neither a private key nor a sealed one", kid, b.Type)
	}
	id := b.Headers[idHeader]
	if r == nil {
		return "", false, fmt.Errorf("%w: key %s is sealed with key-encryption secret %s, and this hub was given none (--key-encryption-key)", ErrSealed, kid, id)
	}
	s := r.find(id)
	if s == nil {
		return "", false, fmt.Errorf("%w: key %s is sealed with key-encryption secret %s, which is not among this hub's (%s)", ErrSealed, kid, id, r.ids())
	}
	n := s.aead.NonceSize()
	if len(b.Bytes) < n+s.aead.Overhead() {
		return "", false, fmt.Errorf("keyseal: key %s: sealed key too short", kid)
	}
	out, err := s.aead.Open(nil, b.Bytes[:n], b.Bytes[n:], []byte(aadPrefix+kid))
	if err != nil {
		return "", false, fmt.Errorf("keyseal: key %s does not open with key-encryption secret %s: altered, or stored for another key", kid, id)
	}
	if p, _ := pem.Decode(out); p == nil || p.Type != plainType {
		return "", false, fmt.Errorf("keyseal: key %s: the sealed content is not a private key", kid)
	}
	return string(out), s != r.current, nil
}

// SealedWith is the id of the secret that sealed stored, or "" for a key
// stored plain (or anything else).
func SealedWith(stored string) string {
	if b, _ := pem.Decode([]byte(stored)); b != nil && b.Type == sealedType {
		return b.Headers[idHeader]
	}
	return ""
}

func (r *Ring) find(id string) *secret {
	if r.current.id == id {
		return r.current
	}
	for _, s := range r.old {
		if s.id == id {
			return s
		}
	}
	return nil
}

func (r *Ring) ids() string {
	out := r.current.id
	for _, s := range r.old {
		out += ", " + s.id
	}
	return out
}
