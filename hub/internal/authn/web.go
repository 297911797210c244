package authn

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/droverhq/drover/hub/internal/reply"
	"github.com/droverhq/drover/hub/internal/store"
)

// webLoginTTL bounds how long a browser may take at the identity provider.
const webLoginTTL = 10 * time.Minute

// webLoginLimits bound the pending logins (started, not finished, not
// expired): a person has a few tabs logging in at once, not 20; the total
// keeps the table small whatever the number of addresses (ADR 0022).
var webLoginLimits = store.WebLoginLimits{PerSource: 20, Total: 10_000}

// maxReturnTo bounds the path a login returns to.
const maxReturnTo = 1024

// HandleWebLogin starts the dashboard's authorization code + PKCE flow.
// The pending login lives in PostgreSQL so any replica can finish it.
func (s *Service) HandleWebLogin(w http.ResponseWriter, r *http.Request) {
	if s.refuseThrottled(w, r, s.loginStarts, "login-throttled", "login starts", "") {
		return
	}
	addr := s.ClientAddr(r)
	s.loginStarts.charge(r.Context(), addr)
	ret := r.URL.Query().Get("return_to")
	switch {
	case ret == "":
		ret = "/"
	case len(ret) > maxReturnTo || !localPath(ret): // only local paths: no open redirect
		s.writeError(w, r, errors.Join(reply.ErrBadRequest, fmt.Errorf(
			"return_to must be a path on this hub (starting with a single /) of at most %d bytes", maxReturnTo)))
		return
	}
	now := s.cfg.Now()
	wl := store.WebLogin{State: newSecret(), Verifier: oauth2.GenerateVerifier(), Nonce: newSecret(),
		ReturnTo: ret, Source: throttleKey(addr).String(), ExpiresAt: now.Add(webLoginTTL)}
	e, err := s.oidc.endpoints(r.Context())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	err = s.store.Sessions.PutWebLogin(r.Context(), wl, now, webLoginLimits)
	if errors.Is(err, store.ErrTooManyWebLogins) {
		s.throttledLogins.Add(1)
		w.Header().Set("Retry-After", strconv.Itoa(int(webLoginTTL/time.Second)))
		reply.JSON(w, http.StatusTooManyRequests, &reply.OAuthError{Code: "temporarily_unavailable",
			Description: "too many logins started and not finished: finish one, or try again once they expire"})
		return
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	// The state is also kept in this browser: only the browser that
	// started a login may finish it (login CSRF, RFC 6749 10.12: else a
	// link to the callback with someone else's code and state logs the
	// one who follows it in as that someone).
	http.SetCookie(w, &http.Cookie{Name: loginCookie, Value: wl.State, Path: "/", Secure: true, HttpOnly: true,
		SameSite: http.SameSiteLaxMode, MaxAge: int(webLoginTTL / time.Second)})
	u := e.oauth.AuthCodeURL(wl.State, oauth2.S256ChallengeOption(wl.Verifier), oidc.Nonce(wl.Nonce))
	http.Redirect(w, r, u, http.StatusFound)
}

// loginCookie holds the state of the login this browser started.
const loginCookie = "__Host-drover_login"

// startedHere reports whether r's browser started the login named state.
func startedHere(r *http.Request, state string) bool {
	c, err := r.Cookie(loginCookie)
	return err == nil && state != "" && subtle.ConstantTimeCompare([]byte(c.Value), []byte(state)) == 1
}

// localPath reports whether a return_to is a path on the hub, and only
// that, as a browser reads it: it rejects "//host" and also what browsers
// turn into it ("/\host": a backslash is a slash to them; tabs and line
// breaks are dropped) and any control character.
func localPath(p string) bool {
	if !strings.HasPrefix(p, "/") || strings.HasPrefix(p, "//") || strings.ContainsRune(p, '\\') {
		return false
	}
	for _, r := range p {
		if r < 0x20 || r == 0x7f {
			return false
		}
	}
	u, err := url.Parse(p)
	return err == nil && u.Scheme == "" && u.Host == "" && u.User == nil
}

// HandleWebCallback finishes the flow: exchange the code with the PKCE
// verifier, verify the ID token and its nonce, and set the session cookies.
func (s *Service) HandleWebCallback(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if e := q.Get("error"); e != "" {
		s.writeError(w, r, errors.Join(reply.ErrUnauthenticated, errors.New(e)))
		return
	}
	if !startedHere(r, q.Get("state")) {
		s.writeError(w, r, errors.Join(reply.ErrUnauthenticated,
			errors.New("this login was not started in this browser (log in again from the dashboard)")))
		return
	}
	http.SetCookie(w, &http.Cookie{Name: loginCookie, Path: "/", Secure: true, HttpOnly: true, MaxAge: -1})
	wl, err := s.store.Sessions.TakeWebLogin(r.Context(), q.Get("state"), s.cfg.Now())
	if err != nil {
		s.writeError(w, r, errors.Join(reply.ErrUnauthenticated, err))
		return
	}
	e, err := s.oidc.endpoints(r.Context())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	tok, err := e.oauth.Exchange(s.oidc.ctx(r.Context()), q.Get("code"), oauth2.VerifierOption(wl.Verifier))
	if err != nil {
		s.writeError(w, r, exchangeFailure(err))
		return
	}
	raw, _ := tok.Extra("id_token").(string)
	idt, claims, err := s.oidc.verify(r.Context(), e.verifier, raw)
	if err == nil && claims.Nonce != wl.Nonce {
		err = errors.Join(reply.ErrUnauthenticated, errors.New("nonce mismatch"))
	}
	if err != nil {
		s.auditLogin(r, store.Identity{}, "login-web", err)
		s.writeError(w, r, err)
		return
	}
	id, err := s.login(r.Context(), idt, claims)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	sess, err := s.newSession(r.Context(), id, "web", true)
	s.auditLogin(r, id, "login-web", err)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.setCookies(w, sess)
	http.Redirect(w, r, wl.ReturnTo, http.StatusFound)
}

func (s *Service) setCookies(w http.ResponseWriter, sess session) {
	http.SetCookie(w, &http.Cookie{Name: accessCookie, Value: sess.AccessToken, Path: "/", Secure: true, HttpOnly: true,
		SameSite: http.SameSiteLaxMode, MaxAge: int(sess.ExpiresIn)})
	http.SetCookie(w, &http.Cookie{Name: refreshCookie, Value: sess.RefreshToken, Path: "/auth", Secure: true, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, MaxAge: int(s.cfg.RefreshTTL / time.Second)})
}

// HandleWebRefresh rotates the browser session (called by the dashboard
// before the access cookie expires).
func (s *Service) HandleWebRefresh(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Origin") != s.cfg.PublicURL {
		s.writeError(w, r, reply.ErrForbidden)
		return
	}
	c, err := r.Cookie(refreshCookie)
	if err != nil {
		s.writeError(w, r, reply.ErrUnauthenticated)
		return
	}
	sess, err := s.rotate(r, c.Value)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.setCookies(w, sess)
	w.WriteHeader(http.StatusNoContent)
}

// HandleWebLogout ends the browser's session: the one of its refresh
// cookie, and the one of its access cookie, should the refresh cookie be
// gone (a copy of the access token must not outlive the logout). A
// request with neither a session of its own is refused 401, and forgets
// nothing.
func (s *Service) HandleWebLogout(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Origin") != s.cfg.PublicURL {
		s.writeError(w, r, reply.ErrForbidden)
		return
	}
	var ended []string
	own := false // the browser showed a session of its own
	if c, err := r.Cookie(refreshCookie); err == nil {
		sid, err := s.store.Sessions.RevokeByHash(r.Context(), hashRefresh(c.Value), s.cfg.Now())
		switch {
		case err == nil:
			ended, own = append(ended, sid), true
		case !errors.Is(err, store.ErrNotFound): // already gone is fine
			s.writeError(w, r, err)
			return
		}
	}
	if c, err := r.Cookie(accessCookie); err == nil {
		if claims, err := s.keys.Verify(c.Value, Audience); err == nil {
			own = true
			if claims.SID != "" {
				err := s.store.Sessions.RevokeByID(r.Context(), claims.SID, s.cfg.Now())
				if err != nil && !errors.Is(err, store.ErrNotFound) {
					s.writeError(w, r, err)
					return
				}
				ended = append(ended, claims.SID)
			}
		}
	}
	if !own {
		s.writeError(w, r, errors.Join(reply.ErrUnauthenticated, errors.New("no session to log out of")))
		return
	}
	s.ForgetSessions(ended)
	http.SetCookie(w, &http.Cookie{Name: accessCookie, Path: "/", Secure: true, HttpOnly: true, MaxAge: -1})
	http.SetCookie(w, &http.Cookie{Name: refreshCookie, Path: "/auth", Secure: true, HttpOnly: true, MaxAge: -1})
	w.WriteHeader(http.StatusNoContent)
}
