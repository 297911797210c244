// Package token mints and verifies the hub's own session tokens: short-lived
// JWTs signed with the hub's keys (ES256), kept in PostgreSQL so every hub
// replica signs and verifies with the same set. The current key signs; the
// previous keys stay published in the JWKS (and accepted) until every token
// they signed has expired, so rotation never logs anyone out. The same keys
// and JWKS sign the tokens the hub sends to controllers (hub/spokes.go;
// docs/decisions/0009-spoke-token-reuse.md).
//
// Verification accepts only the algorithm of the hub's keys (Algorithm),
// only tokens whose kid is one of the hub's keys, and checks issuer,
// audience, expiry and not-before.
package token

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/hub/internal/keyseal"
	"github.com/droverhq/drover/hub/internal/store"
)

// Algorithm is the algorithm of the hub's keys, and the only one its
// tokens are verified with: a token in another is refused as it is read,
// before it costs a key lookup.
const Algorithm = jose.ES256

// ErrInvalid means a token was malformed, badly signed, expired, or meant
// for another issuer or audience. Callers answer 401 without detail.
var ErrInvalid = errors.New("token: invalid")

// Leeway tolerates clock skew between hub replicas.
const Leeway = 5 * time.Second

// Claims are the hub session token's claims.
type Claims struct {
	jwt.Claims
	Org  string `json:"org,omitempty"`
	Kind string `json:"kind,omitempty"`
	Name string `json:"name,omitempty"`
	// SID, on session tokens, names the session (its refresh token's row)
	// the token was minted for: ending the session ends the token.
	SID string `json:"sid,omitempty"`
	// Access and Model are set on per-request spoke tokens: the permission
	// the hub decided ("read", "write", "admin" on Model, or "superuser"
	// on the whole controller).
	Access string `json:"access,omitempty"`
	Model  string `json:"model,omitempty"`
	// CA, on spoke tokens, is the hex SHA-256 of the controller CA
	// certificate the hub pinned for the audience: a controller refuses a
	// token naming another CA, so a server that claimed a controller's UUID
	// at registration cannot pass on what the hub sent it.
	CA string `json:"ca,omitempty"`
}

// Config configures a Keys.
type Config struct {
	Store  *store.Store
	Issuer string // the hub's URL
	// RotateAfter is the age at which a new signing key is generated.
	RotateAfter time.Duration
	// KeepFor is how long a retired key is still published and accepted:
	// at least the longest token lifetime signed with it.
	KeepFor time.Duration
	// Seal, if set, encrypts the keys before they are stored, and opens
	// them when they are read; keys stored plain, or sealed with one of its
	// old secrets, are sealed again with its current one. Without it the
	// keys are stored plain, and a sealed one fails Refresh.
	Seal   *keyseal.Ring
	Logger *slog.Logger
	Now    func() time.Time
}

// Keys holds the hub's signing keys.
type Keys struct {
	cfg Config

	mu      sync.Mutex
	current *key
	byKID   map[string]*key
	// missRefreshed is when Verify last reloaded the keys for a kid it did
	// not know (another replica's new key): at most once per missRefresh.
	missRefreshed time.Time
}

// missRefresh bounds how often an unknown kid makes Verify reload the keys.
const missRefresh = time.Second

type key struct {
	kid  string
	priv *ecdsa.PrivateKey
}

// New loads the keys, generating the first (or a rotated) key if needed.
func New(ctx context.Context, cfg Config) (*Keys, error) {
	if cfg.Store == nil || cfg.Issuer == "" {
		return nil, errors.New("token: store and issuer are required")
	}
	if cfg.RotateAfter <= 0 {
		cfg.RotateAfter = 30 * 24 * time.Hour
	}
	if cfg.KeepFor <= 0 {
		cfg.KeepFor = 24 * time.Hour
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	k := &Keys{cfg: cfg}
	if err := k.Refresh(ctx); err != nil {
		return nil, err
	}
	return k, nil
}

// Refresh reloads the keys from the store and rotates when the current key
// is older than RotateAfter (or absent). It seals the keys that are to be
// sealed (Config.Seal), and deletes those retired longer than KeepFor. On
// an error the keys held so far stay in use.
func (k *Keys) Refresh(ctx context.Context) error {
	now := k.cfg.Now()
	cutoff := now.Add(-k.cfg.KeepFor)
	rows, err := k.cfg.Store.SigningKeys.List(ctx, cutoff)
	if err != nil {
		return err
	}
	if len(rows) == 0 || rows[0].RetiredAt != nil || now.Sub(rows[0].CreatedAt) > k.cfg.RotateAfter {
		kid, err := k.rotate(ctx)
		if err != nil {
			return err
		}
		details := map[string]any{"kid": kid, "automatic": true}
		if len(rows) == 0 {
			details["first"] = true
		}
		k.audit(ctx, "rotate-signing-key", details)
		if rows, err = k.cfg.Store.SigningKeys.List(ctx, cutoff); err != nil {
			return err
		}
	}
	byKID := make(map[string]*key, len(rows))
	var current *key
	for _, r := range rows {
		kk, err := k.open(ctx, r)
		if err != nil {
			return err
		}
		byKID[kk.kid] = kk
		if current == nil && r.RetiredAt == nil {
			current = kk
		}
	}
	if current == nil {
		return errors.New("token: no current signing key")
	}
	k.mu.Lock()
	k.current, k.byKID = current, byKID
	k.mu.Unlock()
	if n, err := k.cfg.Store.SigningKeys.Prune(ctx, cutoff); err != nil {
		return err
	} else if n > 0 {
		k.cfg.Logger.Info("deleted signing keys no longer accepted", "keys", n)
	}
	return nil
}

// open reads a stored key, sealing it in the store first when it is to be.
func (k *Keys) open(ctx context.Context, r store.SigningKey) (*key, error) {
	plain, reseal, err := k.cfg.Seal.Open(r.KID, r.PrivatePEM)
	if err != nil {
		return nil, fmt.Errorf("token: %w", err)
	}
	if reseal {
		sealed, err := k.cfg.Seal.Seal(r.KID, plain)
		if err != nil {
			return nil, fmt.Errorf("token: seal key %s: %w", r.KID, err)
		}
		if err := k.cfg.Store.SigningKeys.Reseal(ctx, r.KID, r.PrivatePEM, sealed); err != nil {
			return nil, err
		}
		k.cfg.Logger.Info("sealed a signing key with the key-encryption secret", "kid", r.KID, "secret", k.cfg.Seal.ID())
		details := map[string]any{"kid": r.KID, "key-encryption-secret": k.cfg.Seal.ID(), "was": "plain"}
		if was := keyseal.SealedWith(r.PrivatePEM); was != "" {
			details["was"] = "sealed with " + was
		}
		k.audit(ctx, "seal-signing-key", details)
	}
	return parseKey(r.KID, plain)
}

// audit records what the hub did to its keys by itself (actor "hub"), for
// the hub's auditors; a failure is logged, not fatal.
func (k *Keys) audit(ctx context.Context, op string, details map[string]any) {
	if err := k.cfg.Store.Audit.Append(ctx, store.AuditEntry{At: k.cfg.Now(), Actor: "hub", Operation: op,
		Result: store.ResultOK, Details: details}); err != nil {
		k.cfg.Logger.Error("audit write failed", "operation", op, "err", err)
	}
}

// Rotate generates a new current key and retires the others (they stay
// valid for KeepFor).
func (k *Keys) Rotate(ctx context.Context) error {
	_, err := k.rotate(ctx)
	return err
}

func (k *Keys) rotate(ctx context.Context) (string, error) {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", fmt.Errorf("token: generate key: %w", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return "", fmt.Errorf("token: encode key: %w", err)
	}
	kidBytes := make([]byte, 12)
	if _, err := rand.Read(kidBytes); err != nil {
		return "", err
	}
	now := k.cfg.Now()
	kid := base64.RawURLEncoding.EncodeToString(kidBytes)
	stored, err := k.cfg.Seal.Seal(kid, string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})))
	if err != nil {
		return "", fmt.Errorf("token: seal key: %w", err)
	}
	if err := k.cfg.Store.SigningKeys.Insert(ctx, store.SigningKey{KID: kid, Alg: string(Algorithm),
		PrivatePEM: stored, CreatedAt: now}); err != nil {
		return "", err
	}
	return kid, k.cfg.Store.SigningKeys.RetireExcept(ctx, kid, now)
}

func parseKey(kid, keyPEM string) (*key, error) {
	b, _ := pem.Decode([]byte(keyPEM))
	if b == nil {
		return nil, fmt.Errorf("token: key %s: bad PEM", kid)
	}
	p, err := x509.ParsePKCS8PrivateKey(b.Bytes)
	if err != nil {
		return nil, fmt.Errorf("token: key %s: %w", kid, err)
	}
	ec, ok := p.(*ecdsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("token: key %s: not an ECDSA key", kid)
	}
	return &key{kid: kid, priv: ec}, nil
}

// Sign signs claims with the current key. Issuer and IssuedAt are filled
// in; the caller sets subject, audience, expiry and ID.
func (k *Keys) Sign(c Claims) (string, error) {
	k.mu.Lock()
	cur := k.current
	k.mu.Unlock()
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: Algorithm, Key: jose.JSONWebKey{Key: cur.priv, KeyID: cur.kid}},
		(&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		return "", fmt.Errorf("token: signer: %w", err)
	}
	if c.Issuer == "" {
		c.Issuer = k.cfg.Issuer
	}
	if c.IssuedAt == nil {
		c.IssuedAt = jwt.NewNumericDate(k.cfg.Now())
	}
	return jwt.Signed(signer).Claims(c).Serialize()
}

// Verify checks raw's algorithm, signature, issuer, audience and time
// window, and returns its claims. Every failure wraps ErrInvalid.
func (k *Keys) Verify(raw, audience string) (Claims, error) {
	tok, err := jwt.ParseSigned(raw, []jose.SignatureAlgorithm{Algorithm})
	if err != nil {
		return Claims{}, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if len(tok.Headers) != 1 {
		return Claims{}, fmt.Errorf("%w: want one signature", ErrInvalid)
	}
	kk := k.lookup(tok.Headers[0].KeyID)
	if kk == nil {
		return Claims{}, fmt.Errorf("%w: unknown key id", ErrInvalid)
	}
	var c Claims
	if err := tok.Claims(&kk.priv.PublicKey, &c); err != nil {
		return Claims{}, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if err := c.ValidateWithLeeway(jwt.Expected{Issuer: k.cfg.Issuer, AnyAudience: jwt.Audience{audience},
		Time: k.cfg.Now()}, Leeway); err != nil {
		return Claims{}, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if c.Expiry == nil || c.Subject == "" {
		return Claims{}, fmt.Errorf("%w: exp and sub are required", ErrInvalid)
	}
	return c, nil
}

// lookup finds kid's key. One it does not hold may be a key another
// replica has just rotated to: the keys are then reloaded, at most once per
// missRefresh, so that replica's tokens are good here at once.
func (k *Keys) lookup(kid string) *key {
	k.mu.Lock()
	kk := k.byKID[kid]
	now := k.cfg.Now()
	stale := kk == nil && now.Sub(k.missRefreshed) >= missRefresh
	if stale {
		k.missRefreshed = now
	}
	k.mu.Unlock()
	if !stale {
		return kk
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := k.Refresh(ctx); err != nil {
		k.cfg.Logger.Warn("signing key refresh for an unknown key id failed", "err", err)
		return nil
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.byKID[kid]
}

// RotateNow makes a new key current at once (Rotate) and reloads the keys.
// With revoke, every other key is deleted: the sessions and controller
// tokens they signed are refused from then on (sessions are renewed with
// their refresh tokens, which are not signed). It returns the new kid and
// the revoked ones. The caller tells the other replicas (store.SigningKeys.Notify).
func (k *Keys) RotateNow(ctx context.Context, revoke bool) (current string, revoked []string, err error) {
	if current, err = k.rotate(ctx); err != nil {
		return "", nil, err
	}
	if revoke {
		if revoked, err = k.cfg.Store.SigningKeys.DeleteExcept(ctx, current); err != nil {
			return "", nil, err
		}
	}
	return current, revoked, k.Refresh(ctx)
}

// List describes the keys in the store that are still accepted, the
// current one first.
func (k *Keys) List(ctx context.Context) ([]api.SigningKey, error) {
	rows, err := k.cfg.Store.SigningKeys.List(ctx, k.cfg.Now().Add(-k.cfg.KeepFor))
	if err != nil {
		return nil, err
	}
	out := make([]api.SigningKey, 0, len(rows))
	for i, r := range rows {
		ki := api.SigningKey{KID: r.KID, Current: i == 0 && r.RetiredAt == nil, CreatedAt: r.CreatedAt, RetiredAt: r.RetiredAt,
			SealedWith: keyseal.SealedWith(r.PrivatePEM)}
		if r.RetiredAt != nil {
			until := r.RetiredAt.Add(k.cfg.KeepFor)
			ki.AcceptedUntil = &until
		}
		out = append(out, ki)
	}
	return out, nil
}

// JWKS returns the public keys (current and those still accepted).
func (k *Keys) JWKS() jose.JSONWebKeySet {
	k.mu.Lock()
	defer k.mu.Unlock()
	var set jose.JSONWebKeySet
	for _, kk := range k.byKID {
		set.Keys = append(set.Keys, jose.JSONWebKey{Key: &kk.priv.PublicKey, KeyID: kk.kid, Algorithm: string(Algorithm), Use: "sig"})
	}
	return set
}
