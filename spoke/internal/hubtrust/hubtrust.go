// Package hubtrust verifies the per-request JWTs a hub sends to a spoke.
//
// Invariants: a token is accepted only if its algorithm is the hub's keys'
// (Algorithms: ES256 alone, never "none"), its key id is in the hub's JWKS (fetched over TLS pinned
// to the hub's CA, cached, and refetched when an unknown key id shows up, at
// most once per MinRefresh, so key rotation needs no restart while a flood
// of forged kids cannot turn into a flood of fetches), its issuer is the
// hub, its audience is this controller's UUID, it has not expired, and it
// names a subject and a known access level, and the controller CA it names,
// if any, is this controller's. A model-scoped token must name its model.
// A token that passed is reused, for the same audience, until its expiry
// or for 30 s at most (the hub hands one token out for 30 s): one
// signature check per token, not per request.
package hubtrust

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// Algorithms is the allow-list: the algorithm of the hub's keys. A token
// in another is refused as it is read, before its key id costs a JWKS
// fetch.
var Algorithms = []jose.SignatureAlgorithm{jose.ES256}

// Access levels a hub token can carry.
const (
	AccessRead      = "read"
	AccessWrite     = "write"
	AccessAdmin     = "admin"
	AccessSuperuser = "superuser"
)

// ErrInvalid wraps every verification failure.
var ErrInvalid = errors.New("hub token invalid")

// ErrClock wraps (with ErrInvalid) a token refused for its times alone:
// issued in the future or expired by this controller's clock, which is
// then out of step with the hub's (the hub hands a token out with 30 s
// or more left).
var ErrClock = errors.New("hub token outside its validity by this controller's clock")

// Leeway tolerates clock skew between the hub and the spoke. With the
// hub's tokens living 60 s and handed out while 30 s or more remain, a
// controller whose clock is up to 30 s behind the hub's or 60 s ahead
// accepts them.
const Leeway = 30 * time.Second

// Config configures a Verifier.
type Config struct {
	// Issuer is the hub's URL (its tokens' iss).
	Issuer string
	// JWKSURL defaults to Issuer + "/.well-known/jwks.json".
	JWKSURL string
	// CACert (PEM) is the hub's CA; empty uses the system roots.
	CACert []byte
	// ControllerCA is the hex SHA-256 of this controller's CA certificate:
	// a token whose "ca" claim names another is refused (the hub minted it
	// for a server that claimed this controller's UUID with its own CA).
	// A token without the claim is not refused for it: not every hub
	// sends one.
	ControllerCA string
	// HTTPClient overrides the client that fetches the JWKS (tests).
	HTTPClient *http.Client
	// MinRefresh is the minimum time between two JWKS fetches triggered
	// by unknown key ids (default 1s; negative: no limit).
	MinRefresh time.Duration
	// MaxAge is how long a fetched JWKS is used before it is fetched
	// again in the background (default 5m; negative: never), so a key the
	// hub revoked stops working here without waiting for a new key id.
	MaxAge time.Duration
	Now    func() time.Time
}

// Claims are what the spoke learns from a valid token.
type Claims struct {
	// KeyID is the kid of the hub key that signed the token.
	KeyID   string
	Subject string
	Name    string
	Access  string
	Model   string // "" for a controller-wide (superuser) token
}

type wireClaims struct {
	jwt.Claims
	Name   string `json:"name,omitempty"`
	Access string `json:"access"`
	Model  string `json:"model,omitempty"`
	CA     string `json:"ca,omitempty"`
}

// Verifier checks hub tokens. It is safe for concurrent use.
type Verifier struct {
	cfg      Config
	http     *http.Client
	ownsHTTP bool

	mu      sync.Mutex
	keys    jose.JSONWebKeySet
	fetched time.Time
	// refreshing is set while a background refetch of a JWKS older than
	// MaxAge runs; tried is when the last one began.
	refreshing bool
	tried      time.Time
	// refreshes counts background refetches running (Wait).
	refreshes sync.WaitGroup

	// verified remembers tokens that passed, by exact token and audience:
	// the hub hands the same token out for half its minute, and checking
	// its ES256 signature is most of a proxied read's cost here.
	vmu      sync.Mutex
	verified map[verifiedKey]verifiedToken
}

type verifiedKey struct{ raw, audience string }

type verifiedToken struct {
	claims Claims
	until  time.Time
}

// Bounds of the verified-token cache: an entry lives until the token's
// expiry (without the leeway) or for verifiedFor, whichever is sooner, so
// a hub key withdrawn from the JWKS stops working within verifiedFor; when
// maxVerified entries are held the cache starts over.
const (
	verifiedFor = 30 * time.Second
	maxVerified = 10_000
)

// New validates cfg. It does not contact the hub: the JWKS is fetched on
// first use, so a spoke may start before its hub.
func New(cfg Config) (*Verifier, error) {
	if cfg.Issuer == "" {
		return nil, errors.New("hubtrust: the hub URL is required")
	}
	cfg.Issuer = strings.TrimRight(cfg.Issuer, "/")
	if cfg.JWKSURL == "" {
		cfg.JWKSURL = cfg.Issuer + "/.well-known/jwks.json"
	}
	if err := checkJWKSURL(cfg.JWKSURL); err != nil {
		return nil, err
	}
	if cfg.MinRefresh == 0 {
		cfg.MinRefresh = time.Second
	}
	if cfg.MaxAge == 0 {
		cfg.MaxAge = 5 * time.Minute
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	hc := cfg.HTTPClient
	if hc == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.Proxy = nil
		if len(cfg.CACert) > 0 {
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(cfg.CACert) {
				return nil, errors.New("hubtrust: no certificate in the hub CA")
			}
			tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
		}
		return &Verifier{cfg: cfg, http: &http.Client{Transport: tr, Timeout: 10 * time.Second}, ownsHTTP: true}, nil
	}
	return &Verifier{cfg: cfg, http: hc}, nil
}

// Issuer is the hub URL tokens must come from.
func (v *Verifier) Issuer() string { return v.cfg.Issuer }

// Verify checks raw for audience (this controller's UUID). A token that
// passed is not checked again while its entry in the verified-token cache
// lives (see verifiedFor); any other string, even one byte apart, is.
func (v *Verifier) Verify(ctx context.Context, raw, audience string) (Claims, error) {
	k := verifiedKey{raw: raw, audience: audience}
	now := v.cfg.Now()
	v.vmu.Lock()
	e, ok := v.verified[k]
	v.vmu.Unlock()
	if ok && now.Before(e.until) {
		return e.claims, nil
	}
	c, exp, err := v.verify(ctx, raw, audience)
	if err != nil {
		return Claims{}, err
	}
	v.vmu.Lock()
	if v.verified == nil || len(v.verified) >= maxVerified {
		v.verified = map[verifiedKey]verifiedToken{}
	}
	until := now.Add(verifiedFor)
	if exp.Before(until) {
		until = exp
	}
	v.verified[k] = verifiedToken{claims: c, until: until}
	v.vmu.Unlock()
	return c, nil
}

// verify checks raw's signature and claims; exp is the token's expiry.
func (v *Verifier) verify(ctx context.Context, raw, audience string) (_ Claims, exp time.Time, _ error) {
	tok, err := jwt.ParseSigned(raw, Algorithms)
	if err != nil {
		return Claims{}, exp, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if len(tok.Headers) != 1 {
		return Claims{}, exp, fmt.Errorf("%w: want one signature", ErrInvalid)
	}
	key, err := v.key(ctx, tok.Headers[0].KeyID)
	if err != nil {
		return Claims{}, exp, err
	}
	if key.Algorithm != "" && key.Algorithm != tok.Headers[0].Algorithm {
		return Claims{}, exp, fmt.Errorf("%w: algorithm does not match the key", ErrInvalid)
	}
	var c wireClaims
	if err := tok.Claims(key.Key, &c); err != nil {
		return Claims{}, exp, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	now := v.cfg.Now()
	if err := c.ValidateWithLeeway(jwt.Expected{Issuer: v.cfg.Issuer, AnyAudience: jwt.Audience{audience},
		Time: now}, Leeway); err != nil {
		if errors.Is(err, jwt.ErrExpired) || errors.Is(err, jwt.ErrIssuedInTheFuture) || errors.Is(err, jwt.ErrNotValidYet) {
			return Claims{}, exp, fmt.Errorf("%w: %w: issued %s, expires %s, and this controller's clock says %s",
				ErrInvalid, ErrClock, stamp(c.IssuedAt), stamp(c.Expiry), now.UTC().Format(time.RFC3339))
		}
		return Claims{}, exp, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if c.Expiry == nil || c.Subject == "" {
		return Claims{}, exp, fmt.Errorf("%w: exp and sub are required", ErrInvalid)
	}
	if c.CA != "" && v.cfg.ControllerCA != "" && c.CA != v.cfg.ControllerCA {
		return Claims{}, exp, fmt.Errorf("%w: minted for a controller with another CA (a server registered with the hub under this controller's UUID?)", ErrInvalid)
	}
	switch c.Access {
	case AccessSuperuser:
	case AccessRead, AccessWrite, AccessAdmin:
		if c.Model == "" {
			return Claims{}, exp, fmt.Errorf("%w: %s access needs a model", ErrInvalid, c.Access)
		}
	default:
		return Claims{}, exp, fmt.Errorf("%w: unknown access %q", ErrInvalid, c.Access)
	}
	return Claims{KeyID: tok.Headers[0].KeyID, Subject: c.Subject, Name: c.Name, Access: c.Access, Model: c.Model}, c.Expiry.Time(), nil
}

// stamp is a token time for people, "-" when absent.
func stamp(d *jwt.NumericDate) string {
	if d == nil {
		return "-"
	}
	return d.Time().UTC().Format(time.RFC3339)
}

// key returns the hub key kid, refetching the JWKS once if it is unknown.
// Fetches are at least MinRefresh apart: a kid met sooner after the last
// one waits for that moment (without holding up other verifications), so
// the first tokens of a key the hub has just rotated to are accepted, while
// a flood of unknown kids costs the hub one fetch per MinRefresh.
func (v *Verifier) key(ctx context.Context, kid string) (jose.JSONWebKey, error) {
	for waited := false; ; waited = true {
		v.mu.Lock()
		if ks := v.keys.Key(kid); len(ks) > 0 {
			v.refreshIfStaleLocked(ctx)
			v.mu.Unlock()
			return ks[0], nil
		}
		var wait time.Duration
		if !v.fetched.IsZero() && v.cfg.MinRefresh > 0 {
			wait = v.cfg.MinRefresh - v.cfg.Now().Sub(v.fetched)
		}
		if wait <= 0 {
			err := v.fetchLocked(ctx)
			ks := v.keys.Key(kid)
			v.mu.Unlock()
			if err != nil {
				return jose.JSONWebKey{}, err
			}
			if len(ks) == 0 {
				return jose.JSONWebKey{}, fmt.Errorf("%w: unknown key id", ErrInvalid)
			}
			return ks[0], nil
		}
		v.mu.Unlock()
		if waited {
			return jose.JSONWebKey{}, fmt.Errorf("%w: unknown key id", ErrInvalid)
		}
		t := time.NewTimer(min(wait, v.cfg.MinRefresh))
		select {
		case <-ctx.Done():
			t.Stop()
			return jose.JSONWebKey{}, fmt.Errorf("%w: %w", ErrUnavailable, ctx.Err())
		case <-t.C:
		}
	}
}

// KeyCurrent reports whether kid is one of the hub's keys as last
// fetched. Streams opened with a hub token ask it as they go: a key the hub
// revoked leaves the JWKS, which is fetched again within MaxAge. A refetch
// it starts runs under ctx's values but outlives ctx's cancellation (it
// serves every later caller), bounded by the fetch timeout; Wait waits for
// it.
func (v *Verifier) KeyCurrent(ctx context.Context, kid string) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.refreshIfStaleLocked(ctx)
	return v.fetched.IsZero() || len(v.keys.Key(kid)) > 0
}

// refreshIfStaleLocked starts a background refetch of a JWKS older than
// MaxAge, one at a time and at most once per MaxAge/10 (a hub that does
// not answer is not asked at every call); the keys in hand serve meanwhile.
func (v *Verifier) refreshIfStaleLocked(ctx context.Context) {
	now := v.cfg.Now()
	if v.cfg.MaxAge < 0 || v.fetched.IsZero() || v.refreshing || now.Sub(v.fetched) < v.cfg.MaxAge || now.Sub(v.tried) < v.cfg.MaxAge/10 {
		return
	}
	v.refreshing, v.tried = true, now
	v.refreshes.Add(1)
	go func() { // joined by Wait
		defer v.refreshes.Done()
		set, err := v.fetch(context.WithoutCancel(ctx)) // fetch bounds it
		v.mu.Lock()
		defer v.mu.Unlock()
		v.refreshing = false
		if err == nil {
			v.setKeysLocked(set)
		}
	}()
}

// Wait waits for a background refetch of the JWKS, if one runs.
func (v *Verifier) Wait() { v.refreshes.Wait() }

// ErrInsecureJWKS refuses a JWKS URL the hub's keys could be forged
// through: one not in https, to a host other than a loopback address.
var ErrInsecureJWKS = errors.New("the hub's JWKS must be fetched over https")

// checkJWKSURL accepts an https URL, or an http one to a loopback host
// (a hub on the same machine: nobody on the network between).
func checkJWKSURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return fmt.Errorf("%w: hub JWKS URL %q is not an absolute URL", ErrInsecureJWKS, raw)
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		if h := u.Hostname(); h == "localhost" || net.ParseIP(h).IsLoopback() {
			return nil
		}
	}
	return fmt.Errorf("%w: hub JWKS URL %q: want https (plain http only to a loopback address)", ErrInsecureJWKS, raw)
}

// ErrUnavailable means the hub's JWKS could not be fetched.
var ErrUnavailable = errors.New("hub JWKS unavailable")

func (v *Verifier) fetchLocked(ctx context.Context) error {
	set, err := v.fetch(ctx)
	if err != nil {
		return err
	}
	v.setKeysLocked(set)
	return nil
}

// setKeysLocked takes a fetched JWKS. When a key left it (the hub revoked
// it, or it expired) the verified-token cache is dropped, so no token it
// signed is answered from there.
func (v *Verifier) setKeysLocked(set jose.JSONWebKeySet) {
	for _, k := range v.keys.Keys {
		if len(set.Key(k.KeyID)) == 0 {
			v.vmu.Lock()
			v.verified = nil
			v.vmu.Unlock()
			break
		}
	}
	v.keys, v.fetched = set, v.cfg.Now()
}

// fetch reads the hub's JWKS.
func (v *Verifier) fetch(ctx context.Context) (jose.JSONWebKeySet, error) {
	var set jose.JSONWebKeySet
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, v.cfg.JWKSURL, nil)
	if err != nil {
		return set, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	resp, err := v.http.Do(req)
	if err != nil {
		return set, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return set, fmt.Errorf("%w: %s answered %s", ErrUnavailable, v.cfg.JWKSURL, resp.Status)
	}
	if err := json.NewDecoder(http.MaxBytesReader(nil, resp.Body, 1<<20)).Decode(&set); err != nil {
		return set, fmt.Errorf("%w: decode: %w", ErrUnavailable, err)
	}
	for _, k := range set.Keys {
		if !k.IsPublic() {
			return jose.JSONWebKeySet{}, fmt.Errorf("%w: the JWKS holds a private key", ErrUnavailable)
		}
	}
	return set, nil
}
