package authn

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/google/uuid"

	"github.com/droverhq/drover/authz"
	"github.com/droverhq/drover/hub/internal/reply"
	"github.com/droverhq/drover/hub/internal/store"
	"github.com/droverhq/drover/hub/internal/token"
)

// Principal is the authenticated caller of a request.
type Principal struct {
	Identity store.Identity
	// Object is the caller's OpenFGA user ("user:<id>").
	Object string
	// Cookie is true when the request authenticated with the browser
	// session cookie rather than a bearer token.
	Cookie bool
	// Expires is when the presented token expires (zero when unknown).
	Expires time.Time
	// SID is the session the presented token was minted for ("" for a
	// token minted without one).
	SID string
}

type principalKey struct{}

// PrincipalFrom returns the request's caller; ok is false on routes that
// are not authenticated.
func PrincipalFrom(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok
}

// Cookie names. __Host- pins the access cookie to this origin, path / and
// HTTPS.
const (
	accessCookie  = "__Host-drover_session"
	refreshCookie = "__Secure-drover_refresh"
)

// CSRFHeader must be present on every cookie-authenticated change. A page
// of another origin cannot send a custom header without a CORS preflight,
// which the hub never grants: with the Origin check it is a second,
// independent guard against cross-site request forgery, should a browser
// leave Origin out or a proxy rewrite it.
const CSRFHeader = "X-Drover-CSRF"

// Authenticate accepts a hub session token as a bearer token or in the
// browser cookie. Cookie-authenticated unsafe requests, and websocket
// upgrades (a GET a page of any origin may open with the cookie), must
// come from the hub's own origin (CSRF, cross-site websocket hijacking);
// cookie-authenticated unsafe requests must also carry CSRFHeader.
func (s *Service) Authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, cookie := Credential(r)
		if raw == "" {
			w.Header().Set("WWW-Authenticate", `Bearer realm="drover"`)
			s.writeError(w, r, reply.ErrUnauthenticated)
			return
		}
		if cookie && (!SafeMethod(r.Method) || isWebsocket(r)) && r.Header.Get("Origin") != s.cfg.PublicURL {
			s.writeError(w, r, errors.Join(reply.ErrForbidden, errors.New("cross-origin request with a session cookie")))
			return
		}
		if cookie && !SafeMethod(r.Method) && r.Header.Get(CSRFHeader) == "" {
			s.writeError(w, r, errors.Join(reply.ErrForbidden, errors.New("a change with a session cookie needs the "+CSRFHeader+" header")))
			return
		}
		p, badToken, err := s.principal(r.Context(), raw, cookie)
		if err != nil {
			if badToken {
				w.Header().Set("WWW-Authenticate", `Bearer realm="drover", error="invalid_token"`)
			}
			s.writeError(w, r, err)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, p)))
	})
}

// isWebsocket reports whether r asks to upgrade to a websocket.
func isWebsocket(r *http.Request) bool {
	return strings.EqualFold(r.Header.Get("Upgrade"), "websocket")
}

// SafeMethod reports whether m is a method that changes nothing.
func SafeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}

// Credential returns the token r presents: its bearer token, or else its
// session cookie (cookie true).
func Credential(r *http.Request) (raw string, cookie bool) {
	if raw = bearer(r); raw != "" {
		return raw, false
	}
	if c, err := r.Cookie(accessCookie); err == nil {
		return c.Value, true
	}
	return "", false
}

func bearer(r *http.Request) string {
	h := r.Header.Get("Authorization")
	if len(h) > 7 && strings.EqualFold(h[:7], "bearer ") {
		return strings.TrimSpace(h[7:])
	}
	return ""
}

// session is what the hub hands out after a login, shaped like an OAuth
// 2.0 token response.
type session struct {
	AccessToken  string `json:"access_token"`
	TokenType    string `json:"token_type"`
	ExpiresIn    int64  `json:"expires_in"`
	RefreshToken string `json:"refresh_token,omitempty"`
}

// MintAccessToken signs a hub session token for id with the given lifetime
// and audience ("" means Audience).
func (s *Service) MintAccessToken(id store.Identity, ttl time.Duration, audience string) (string, error) {
	return s.mintAccessToken(id, ttl, audience, "")
}

// mintAccessToken signs a session token; sid names the session it belongs
// to (sessions.id), which must stay live for the token to be accepted.
func (s *Service) mintAccessToken(id store.Identity, ttl time.Duration, audience, sid string) (string, error) {
	if audience == "" {
		audience = Audience
	}
	now := s.cfg.Now()
	return s.keys.Sign(token.Claims{Claims: jwt.Claims{Subject: id.ID, Audience: jwt.Audience{audience},
		Expiry: jwt.NewNumericDate(now.Add(ttl)), NotBefore: jwt.NewNumericDate(now), ID: uuid.NewString()},
		Org: id.Org, Kind: id.Kind, Name: id.Name(), SID: sid})
}

func hashRefresh(t string) []byte { h := sha256.Sum256([]byte(t)); return h[:] }

func newSecret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// newSession records a session and mints its access token, naming it
// (sid), and, when refresh is true, a refresh token stored hashed. Without
// one (client credentials) the session lives as long as the access token,
// and is only there to be ended: by logout, or by disabling the identity.
func (s *Service) newSession(ctx context.Context, id store.Identity, client string, refresh bool) (session, error) {
	se := store.Session{ID: uuid.NewString(), IdentityID: id.ID, Client: client, ExpiresAt: s.cfg.Now().Add(s.cfg.SessionTTL)}
	out := session{TokenType: "Bearer", ExpiresIn: int64(s.cfg.SessionTTL / time.Second)}
	secret := newSecret() // never handed out without refresh
	if refresh {
		out.RefreshToken, se.ExpiresAt = secret, s.cfg.Now().Add(s.cfg.RefreshTTL)
	}
	se.RefreshHash = hashRefresh(secret)
	if err := s.store.Sessions.Create(ctx, se); err != nil {
		return session{}, err
	}
	var err error
	if out.AccessToken, err = s.mintAccessToken(id, s.cfg.SessionTTL, "", se.ID); err != nil {
		return session{}, err
	}
	return out, nil
}

// login records a person's login from a verified ID token.
func (s *Service) login(ctx context.Context, tok *oidc.IDToken, c idClaims) (store.Identity, error) {
	// Only an email the issuer vouches for (email_verified true; absent
	// is not a yes) is kept: it alone makes a hub administrator (--admin),
	// takes over the grants made to it before this person's first login,
	// and is what grants by email and the audit log name them by. Without
	// it the person logs in under their subject and matches nothing by
	// email (ADR 0022).
	verified := c.EmailVerified != nil && *c.EmailVerified
	in := store.Identity{Issuer: tok.Issuer, Subject: tok.Subject, Kind: store.KindUser, DisplayName: c.Name, EmailVerified: verified}
	if verified {
		in.Email = c.Email
	}
	id, created, err := s.store.Identities.Login(ctx, in, s.cfg.DefaultOrg, s.cfg.Now())
	if err != nil {
		return store.Identity{}, err
	}
	if created && verified && in.Email != "" && slices.Contains(s.cfg.Admins, in.Email) {
		if err := s.store.Grants.Add(ctx, authz.Tuple{User: authz.UserObject(id.ID), Relation: authz.Administrator, Object: authz.HubObject()}); err != nil {
			return store.Identity{}, err
		}
	}
	if created {
		s.awaitAuthz(ctx)
	}
	return id, nil
}

func (s *Service) HandleDeviceStart(w http.ResponseWriter, r *http.Request) {
	if s.refuseThrottled(w, r, s.loginStarts, "login-throttled", "login starts", "") {
		return
	}
	s.loginStarts.charge(r.Context(), s.ClientAddr(r))
	ds, err := s.oidc.startDevice(r.Context())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.devicePolls.started(ds.DeviceCode, time.Duration(ds.Interval)*time.Second, s.cfg.Now())
	reply.JSON(w, http.StatusOK, ds)
}

// HandleDeviceToken is polled by the CLI with the device code. Until the
// user approves it answers 400 authorization_pending (RFC 8628), then a
// hub session. Each poll is charged to the address's device polls, and
// one sooner than the code's interval is answered slow_down without
// asking the issuer.
func (s *Service) HandleDeviceToken(w http.ResponseWriter, r *http.Request) {
	var req struct {
		DeviceCode string `json:"device_code"`
	}
	if s.refuseThrottled(w, r, s.failedLogins, "login-throttled", "failed logins", "") ||
		s.refuseThrottled(w, r, s.pollRate, "login-throttled", "device polls", "") {
		return
	}
	s.pollRate.charge(r.Context(), s.ClientAddr(r))
	if err := reply.Decode(r, &req); err != nil || req.DeviceCode == "" {
		s.writeError(w, r, errors.Join(reply.ErrBadRequest, errors.New("device_code is required")))
		return
	}
	if s.devicePolls.early(req.DeviceCode, s.cfg.Now()) {
		reply.JSON(w, http.StatusBadRequest, &reply.OAuthError{Code: "slow_down",
			Description: "polled sooner than the interval the device login started with"})
		return
	}
	raw, err := s.oidc.pollDevice(r.Context(), req.DeviceCode)
	if oe := (*reply.OAuthError)(nil); errors.As(err, &oe) && oe.Code != "authorization_pending" && oe.Code != "slow_down" {
		s.failedLogins.charge(r.Context(), s.ClientAddr(r)) // an unknown, expired or refused code
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	e, err := s.oidc.endpoints(r.Context())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	tok, claims, err := s.oidc.verify(r.Context(), e.verifier, raw)
	if err != nil {
		s.auditLogin(r, store.Identity{}, "login-device", err)
		s.writeError(w, r, err)
		return
	}
	s.finishLogin(w, r, tok, claims, "cli", "login-device")
}

// refuseDisabledLogin answers the login of a disabled identity as the
// token endpoints answer (OAuth access_denied, with the reason) and
// audits it.
func (s *Service) refuseDisabledLogin(w http.ResponseWriter, r *http.Request, tok *oidc.IDToken, email, op string, err error) {
	who, lerr := s.store.Identities.BySubject(r.Context(), tok.Issuer, tok.Subject)
	if lerr != nil { // a pending identity its first login would have taken over
		who = store.Identity{Subject: tok.Subject, Email: email}
	}
	s.auditLogin(r, who, op, err)
	reply.JSON(w, http.StatusBadRequest, &reply.OAuthError{Code: "access_denied",
		Description: strings.TrimSuffix(err.Error(), ": "+store.ErrDisabled.Error())})
}

func (s *Service) finishLogin(w http.ResponseWriter, r *http.Request, tok *oidc.IDToken, c idClaims, client, op string) {
	id, err := s.login(r.Context(), tok, c)
	if errors.Is(err, store.ErrDisabled) {
		email := "" // a claimed email names nobody in the audit log
		if c.EmailVerified != nil && *c.EmailVerified {
			email = c.Email
		}
		s.refuseDisabledLogin(w, r, tok, email, op, err)
		return
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	sess, err := s.newSession(r.Context(), id, client, true)
	s.auditLogin(r, id, op, err)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	reply.JSON(w, http.StatusOK, sess)
}

// HandleToken is the hub's token endpoint: grant_type client_credentials
// (service accounts; id and secret checked by the identity provider) or
// refresh_token. Form-encoded as in OAuth 2.0; HTTP Basic also accepted for
// client credentials.
func (s *Service) HandleToken(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	if err := r.ParseForm(); err != nil {
		s.writeError(w, r, errors.Join(reply.ErrBadRequest, err))
		return
	}
	client := r.PostForm.Get("client_id")
	if id, _, ok := r.BasicAuth(); ok {
		client = id
	}
	if s.refuseThrottled(w, r, s.failedLogins, "login-throttled", "failed logins", client) {
		return
	}
	switch r.PostForm.Get("grant_type") {
	case "client_credentials":
		s.clientCredentials(w, r)
	case "refresh_token":
		s.refresh(w, r, r.PostForm.Get("refresh_token"))
	default:
		reply.JSON(w, http.StatusBadRequest, &reply.OAuthError{Code: "unsupported_grant_type"})
	}
}

func (s *Service) clientCredentials(w http.ResponseWriter, r *http.Request) {
	id, secret, ok := r.BasicAuth()
	if !ok {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	fail := func(err error) {
		if store.Unavailable(err) || errors.Is(err, ErrIdPUnavailable) {
			// Not a refusal: the credentials were not checked.
			s.writeError(w, r, err)
			return
		}
		s.auditLogin(r, store.Identity{Subject: id}, "login-client-credentials", err)
		s.failedLogins.charge(r.Context(), s.ClientAddr(r))
		reply.JSON(w, http.StatusUnauthorized, &reply.OAuthError{Code: "invalid_client"})
	}
	if id == "" || secret == "" {
		fail(reply.ErrUnauthenticated)
		return
	}
	sa, err := s.store.ServiceAccounts.ByClientID(r.Context(), id)
	if err != nil {
		fail(err)
		return
	}
	raw, err := s.oidc.clientCredentials(r.Context(), id, secret)
	if err != nil {
		fail(err)
		return
	}
	e, err := s.oidc.endpoints(r.Context())
	if err != nil {
		fail(err)
		return
	}
	v := e.provider.Verifier(&oidc.Config{ClientID: id, SupportedSigningAlgs: oidcAlgorithms})
	tok, _, err := s.oidc.verify(r.Context(), v, raw)
	if err != nil {
		fail(err)
		return
	}
	ident, created, err := s.store.Identities.Login(r.Context(), store.Identity{Issuer: tok.Issuer, Subject: tok.Subject,
		Kind: store.KindServiceAccount, DisplayName: id}, sa.Org, s.cfg.Now())

	if errors.Is(err, store.ErrDisabled) {
		s.refuseDisabledLogin(w, r, tok, "", "login-client-credentials", err)
		return
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if created {
		s.awaitAuthz(r.Context())
	}
	sess, err := s.newSession(r.Context(), ident, "service-account", false)
	s.auditLogin(r, ident, "login-client-credentials", err)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	reply.JSON(w, http.StatusOK, sess)
}

func (s *Service) refresh(w http.ResponseWriter, r *http.Request, rt string) {
	sess, err := s.rotate(r, rt)
	var reused *store.ReusedRefreshError
	switch {
	case err == nil:
		reply.JSON(w, http.StatusOK, sess)
	case errors.As(err, &reused):
		s.failedLogins.charge(r.Context(), s.ClientAddr(r))
		reply.JSON(w, http.StatusBadRequest, &reply.OAuthError{Code: "invalid_grant", Description: reusedRefresh})
	default:
		if s.cfg.Unavailable(err) {
			// Not the token's fault: the client keeps it, and tries again.
			s.writeError(w, r, err)
			return
		}
		s.failedLogins.charge(r.Context(), s.ClientAddr(r))
		reply.JSON(w, http.StatusBadRequest, &reply.OAuthError{Code: "invalid_grant"})
	}
}

// reusedRefresh tells the holder of a refresh token presented again why
// their session ended.
const reusedRefresh = "this refresh token was used before, so a copy of it is in other hands: " +
	"its session is ended (log in again)"

// rotate exchanges a refresh token for a new session (and a new refresh
// token; the old one stops working). A token presented again after its
// session was renewed with it ends the session, and is audited
// ("refresh-reused") and logged.
func (s *Service) rotate(r *http.Request, rt string) (session, error) {
	if rt == "" {
		return session{}, reply.ErrUnauthenticated
	}
	ctx := r.Context()
	next := newSecret()
	now := s.cfg.Now()
	se, err := s.store.Sessions.Rotate(ctx, hashRefresh(rt), hashRefresh(next), now.Add(s.cfg.RefreshTTL), now)
	var reused *store.ReusedRefreshError
	if errors.As(err, &reused) {
		id, ierr := s.store.Identities.ByID(ctx, reused.IdentityID)
		if ierr != nil {
			id = store.Identity{ID: reused.IdentityID}
		}
		s.cfg.Logger.Warn("a refresh token was presented again: its session is revoked", "identity", id.Name(),
			"session", reused.SessionID, "used-at", reused.UsedAt, "remote-addr", r.RemoteAddr)
		s.appendAudit(r, store.AuditEntry{IdentityID: id.ID, Actor: id.Name(), Org: id.Org, Operation: "refresh-reused",
			Method: r.Method, Path: r.URL.Path, Status: http.StatusBadRequest, Result: store.ResultDenied,
			Details: map[string]any{"session": reused.SessionID, "renewed-at": reused.UsedAt.UTC().Format(time.RFC3339)}})
	}
	if err != nil {
		return session{}, errors.Join(reply.ErrUnauthenticated, err)
	}
	id, err := s.store.Identities.ByID(ctx, se.IdentityID)
	if err != nil {
		return session{}, err
	}
	if id.DisabledAt != nil { // its sessions ended when it was disabled; one made meanwhile
		return session{}, errors.Join(reply.ErrUnauthenticated, store.ErrDisabled)
	}
	at, err := s.mintAccessToken(id, s.cfg.SessionTTL, "", se.ID)
	if err != nil {
		return session{}, err
	}
	return session{AccessToken: at, TokenType: "Bearer", ExpiresIn: int64(s.cfg.SessionTTL / time.Second), RefreshToken: next}, nil
}

// HandleLogout ends the session of the access token presented, and the
// one of the refresh token given in the body: on every replica, their
// access tokens are refused from the next request (this replica forgets
// them at once, the others when notified).
func (s *Service) HandleLogout(w http.ResponseWriter, r *http.Request) {
	var req struct {
		RefreshToken string `json:"refresh_token"`
	}
	if r.ContentLength != 0 {
		if err := reply.Decode(r, &req); err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	p, _ := PrincipalFrom(r.Context())
	var ended []string
	if req.RefreshToken != "" {
		sid, err := s.store.Sessions.RevokeByHash(r.Context(), hashRefresh(req.RefreshToken), s.cfg.Now())
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		ended = append(ended, sid)
	}
	if p.SID != "" {
		// Already ended with the refresh token given: fine.
		if err := s.store.Sessions.RevokeByID(r.Context(), p.SID, s.cfg.Now()); err != nil && !errors.Is(err, store.ErrNotFound) {
			s.writeError(w, r, err)
			return
		}
		ended = append(ended, p.SID)
	}
	s.ForgetSessions(ended)
	w.WriteHeader(http.StatusNoContent)
}

// ForgetSessions drops the remembered tokens of the sessions sids, and
// nothing else: a logout is the caller's, and ends only what is theirs.
// A token of theirs being verified meanwhile is not remembered either.
func (s *Service) ForgetSessions(sids []string) {
	if len(sids) == 0 {
		return
	}
	s.principals.DeleteFunc(func(_ principalCacheKey, p Principal) bool { return slices.Contains(sids, p.SID) })
}
