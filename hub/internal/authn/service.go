// Package authn says who is calling the hub: it runs the logins (the
// device flow, the dashboard's authorization code flow, client
// credentials, refresh), issues and ends sessions, throttles logins per
// client address, and authenticates each API request (Authenticate),
// handing the handlers a Principal.
//
// A token is verified, and its identity read, at most once per
// Config.PrincipalTTL; Forget drops what it remembers, so a disabled
// identity or an ended session is refused from the next request. authn
// decides nothing about permissions: that is hub/internal/gate's.
package authn

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/droverhq/drover/hub/internal/store"
	"github.com/droverhq/drover/hub/internal/token"
	"github.com/droverhq/drover/hub/internal/ttlcache"
)

// Audience is the audience of the hub's session tokens. Spoke tokens carry
// the spoke's UUID instead, so neither can be replayed against the other.
const Audience = "drover-hub"

// Config is what authentication needs: its stores, the identity provider,
// the session settings, and the hub's hooks for answering, auditing and
// permissions.
type Config struct {
	Store *store.Store
	Keys  *token.Keys

	// OIDCIssuer and OIDCClientID identify the hub at the identity
	// provider; OIDCClientSecret is empty for a public client.
	// OIDCHTTPClient talks to the issuer.
	OIDCIssuer, OIDCClientID, OIDCClientSecret string
	OIDCHTTPClient                             *http.Client

	// PublicURL is how clients reach the hub: the sessions' issuer, the
	// login callback's base and the only origin cookies are accepted from.
	PublicURL string
	// DefaultOrg is the organization people join on first login; Admins
	// are emails made hub administrators on their first login.
	DefaultOrg string
	Admins     []string
	// SessionTTL is the lifetime of access tokens, RefreshTTL that of
	// refresh tokens.
	SessionTTL, RefreshTTL time.Duration
	// TrustedProxies are the networks whose X-Forwarded-For is believed
	// (ClientAddr).
	TrustedProxies []netip.Prefix
	// PrincipalTTL bounds how long an authenticated token is reused.
	PrincipalTTL time.Duration

	Logger *slog.Logger
	Now    func() time.Time

	// WriteError answers a failed request (the hub's error table).
	WriteError func(http.ResponseWriter, *http.Request, error)
	// Unavailable reports whether err is the want of a dependency (the
	// caller's credentials were not at fault).
	Unavailable func(error) bool
	// Audit records an audit entry for r.
	Audit func(*http.Request, store.AuditEntry)
	// AwaitAuthz waits until permission changes made so far reach OpenFGA
	// (a first login's grants).
	AwaitAuthz func(context.Context)
}

// validate checks that every dependency and hook is set.
func (c *Config) validate() error {
	var errs []error
	if c.Store == nil || c.Keys == nil {
		errs = append(errs, errors.New("authn: Store and Keys are required"))
	}
	if c.OIDCHTTPClient == nil || c.Logger == nil || c.Now == nil {
		errs = append(errs, errors.New("authn: OIDCHTTPClient, Logger and Now are required"))
	}
	if c.WriteError == nil || c.Unavailable == nil || c.Audit == nil || c.AwaitAuthz == nil {
		errs = append(errs, errors.New("authn: the hub's hooks are required"))
	}
	if c.SessionTTL <= 0 || c.RefreshTTL <= 0 || c.PrincipalTTL <= 0 {
		errs = append(errs, errors.New("authn: SessionTTL, RefreshTTL and PrincipalTTL must be positive"))
	}
	return errors.Join(errs...)
}

// Service authenticates the hub's callers and runs their logins.
type Service struct {
	cfg   Config
	store *store.Store
	keys  *token.Keys
	oidc  *oidcClient
	// principals caches authenticated tokens (principal.go).
	principals *ttlcache.Cache[principalCacheKey, Principal]
	// failedLogins, loginStarts and pollRate throttle logins per client
	// address, throttledLogins counts the refusals (throttle.go).
	failedLogins, loginStarts, pollRate *throttle
	throttledLogins                     atomic.Int64
	// devicePolls pace the device flow's polls (devicepoll.go).
	devicePolls *devicePolls
}

// New builds the service and tries to discover the identity provider: a
// failure is logged, and logins find the issuer once it answers (sessions
// already issued, their renewal and the API need no issuer).
func New(ctx context.Context, cfg Config) (*Service, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &Service{cfg: cfg, store: cfg.Store, keys: cfg.Keys,
		principals:   ttlcache.New[principalCacheKey, Principal](cfg.Now, cfg.PrincipalTTL),
		failedLogins: newThrottle("failed-logins", loginFailures, cfg.Now, cfg.Store.Throttle),
		loginStarts:  newThrottle("login-starts", loginStarts, cfg.Now, cfg.Store.Throttle),
		pollRate:     newThrottle("device-polls", devicePolling, cfg.Now, cfg.Store.Throttle),
		devicePolls:  newDevicePolls()}
	var err error
	if s.oidc, err = newOIDC(ctx, &cfg); err != nil {
		cfg.Logger.Error("the OIDC issuer did not answer; logins fail until it does", "err", err)
	}
	return s, nil
}

// Forget drops every authenticated token remembered: an identity may have
// been disabled, or a session ended.
func (s *Service) Forget() { s.principals.Clear() }

// Prune forgets the client addresses whose login budgets are full again,
// and the device codes that are dead.
func (s *Service) Prune() {
	s.failedLogins.prune()
	s.loginStarts.prune()
	s.pollRate.prune()
	s.devicePolls.prune(s.cfg.Now())
}

// ThrottledLogins counts the logins refused for their client address.
func (s *Service) ThrottledLogins() int64 { return s.throttledLogins.Load() }

func (s *Service) writeError(w http.ResponseWriter, r *http.Request, err error) {
	s.cfg.WriteError(w, r, err)
}

func (s *Service) appendAudit(r *http.Request, e store.AuditEntry) { s.cfg.Audit(r, e) }

func (s *Service) awaitAuthz(ctx context.Context) { s.cfg.AwaitAuthz(ctx) }
