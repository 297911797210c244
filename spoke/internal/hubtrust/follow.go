package hubtrust

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"sync"

	"github.com/go-jose/go-jose/v4/jwt"
)

// Hub is the configuration of the hub a controller trusts, as replicated
// controller state holds it.
type Hub struct {
	URL     string
	JWKSURL string
	CACert  []byte
}

func (h Hub) key() [32]byte {
	s := sha256.New()
	fmt.Fprintf(s, "%s\x00%s\x00", h.URL, h.JWKSURL)
	s.Write(h.CACert)
	var k [32]byte
	copy(k[:], s.Sum(nil))
	return k
}

// ErrNoHub means the controller trusts no hub.
var ErrNoHub = errors.New("this controller trusts no hub")

// Follower verifies tokens for whatever hub the controller trusts at the
// moment of each call: the caller passes the current Hub (read from
// replicated state), and Follower keeps one Verifier for it, replacing it
// (with a fresh JWKS cache) when the hub changes. While the hub stays the
// same, the Verifier's JWKS caching and refetch limit apply unchanged.
type Follower struct {
	base Config // HTTPClient, MinRefresh and Now shared by every Verifier

	mu  sync.Mutex
	key [32]byte
	v   *Verifier
}

// NewFollower returns a Follower whose Verifiers use base's HTTPClient,
// MinRefresh and Now.
func NewFollower(base Config) *Follower { return &Follower{base: base} }

// Verify checks raw against hub (nil: no hub is trusted, ErrNoHub).
func (f *Follower) Verify(ctx context.Context, hub *Hub, raw, audience string) (Claims, error) {
	if hub == nil {
		return Claims{}, ErrNoHub
	}
	v, err := f.verifier(*hub)
	if err != nil {
		return Claims{}, err
	}
	return v.Verify(ctx, raw, audience)
}

// KeyCurrent reports whether kid is still one of hub's keys (see
// Verifier.KeyCurrent); true when that cannot be told.
func (f *Follower) KeyCurrent(ctx context.Context, hub *Hub, kid string) bool {
	if hub == nil {
		return true
	}
	v, err := f.verifier(*hub)
	return err != nil || v.KeyCurrent(ctx, kid)
}

func (f *Follower) verifier(h Hub) (*Verifier, error) {
	k := h.key()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.v != nil && f.key == k {
		return f.v, nil
	}
	cfg := f.base
	cfg.Issuer, cfg.JWKSURL, cfg.CACert = h.URL, h.JWKSURL, h.CACert
	v, err := New(cfg)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	if f.v != nil {
		f.v.close()
	}
	f.key, f.v = k, v
	return v, nil
}

// UnverifiedIssuer reads a token's issuer without checking anything: the
// caller uses it only to decide whether its view of the trusted hub may be
// stale.
func UnverifiedIssuer(raw string) string {
	tok, err := jwt.ParseSigned(raw, Algorithms)
	if err != nil {
		return ""
	}
	var c jwt.Claims
	if tok.UnsafeClaimsWithoutVerification(&c) != nil {
		return ""
	}
	return c.Issuer
}

// close releases the idle connections of a Verifier that was replaced.
func (v *Verifier) close() {
	if v.ownsHTTP {
		v.http.CloseIdleConnections()
	}
}
