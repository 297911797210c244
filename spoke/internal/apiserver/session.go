package apiserver

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/spoke/internal/credential"
	"github.com/droverhq/drover/spoke/internal/reply"
	"github.com/droverhq/drover/spoke/internal/websession"
)

// The dashboard's session on a standalone controller
// (docs/decisions/0038-dashboard-sessions.md): POST /auth/login checks a
// user's name and password as Basic auth does and sets a cookie holding a
// signed token (websession); authenticate accepts the cookie, from the
// controller's own origin alone on unsafe methods and websocket upgrades.

// sessionCookie is the cookie's name: __Host- pins it to this origin,
// path / and HTTPS.
const sessionCookie = "__Host-drover_session"

// DefaultSessionTTL is how long a dashboard session lasts: a working day.
const DefaultSessionTTL = 8 * time.Hour

// maxLoginBody bounds a login request: a name and a password.
const maxLoginBody = 4 << 10

// LoginRequest is the body of POST /auth/login.
type LoginRequest struct {
	User     string `json:"user"`
	Password string `json:"password"`
}

// LoginResponse says who logged in and until when.
type LoginResponse struct {
	User    string    `json:"user"`
	Access  string    `json:"access"`
	Expires time.Time `json:"expires"`
}

var errNoSessions = api.Errorf(api.CodeNotFound, "dashboard sessions are not enabled on this controller")

// login checks the name and password in the body and starts a session.
func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	if len(s.cfg.SessionKey) == 0 {
		reply.WriteError(w, r, errNoSessions)
		return
	}
	// Login CSRF: a page elsewhere must not log the browser in as someone
	// else. Browsers send Origin on every POST; other clients may omit it.
	if o := r.Header.Get("Origin"); o != "" && o != ownOrigin(r) {
		reply.WriteError(w, r, api.Errorf(api.CodeForbidden, "cross-origin login refused"))
		return
	}
	var req LoginRequest
	if err := reply.Decode(w, r, maxLoginBody, &req); err != nil {
		reply.WriteError(w, r, err)
		return
	}
	if req.User == "" || req.Password == "" {
		reply.WriteError(w, r, api.Errorf(api.CodeBadRequest, "user and password are required"))
		return
	}
	u, err := s.checkPassword(w, r, req.User, req.Password)
	if err != nil {
		reply.WriteError(w, r, err)
		return
	}
	exp := s.now().Add(s.sessionTTL()).Truncate(time.Second)
	tok, err := websession.Mint(s.cfg.SessionKey, websession.Claims{User: u.Name,
		Password: websession.PasswordFingerprint(u.PasswordHash), Expiry: exp.Unix()})
	if err != nil {
		reply.WriteError(w, r, err)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: tok, Path: "/", Secure: true, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, MaxAge: int(time.Until(exp) / time.Second)})
	w.Header().Set("Cache-Control", "no-store")
	reply.JSON(w, http.StatusOK, LoginResponse{User: u.Name, Access: u.Access, Expires: exp})
}

// logout clears the session cookie. The token stays valid until it
// expires (it is stateless): changing the password ends it at once.
func (s *Server) logout(w http.ResponseWriter, r *http.Request) {
	if _, err := r.Cookie(sessionCookie); err == nil && r.Header.Get("Origin") != ownOrigin(r) {
		reply.WriteError(w, r, api.Errorf(api.CodeForbidden, "cross-origin request with a session cookie"))
		return
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", Secure: true, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, MaxAge: -1})
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) sessionTTL() time.Duration {
	if s.cfg.SessionTTL > 0 {
		return s.cfg.SessionTTL
	}
	return DefaultSessionTTL
}

// checkPassword is the one check of a user's name and password, Basic
// auth's and the login's: failures are charged to the source address and
// the name (s.limiter) and touch no raft state.
func (s *Server) checkPassword(w http.ResponseWriter, r *http.Request, name, secret string) (*api.User, error) {
	addr := credential.SourceAddr(r.RemoteAddr)
	if te := s.limiter.Allow(addr, name); te != nil {
		return nil, credential.Refusal(w.Header(), te)
	}
	var u *api.User
	ok, err := credential.Check(r.Context(), s.b, func() (bool, bool, error) {
		var err error
		u, err = s.b.Store().Snapshot().UserByName(name)
		return err == nil && u != nil && !u.Disabled && credential.SecretMatches(secret, u.PasswordHash), u != nil, err
	})
	if err != nil || !ok {
		s.limiter.Fail(addr, name)
		return nil, api.Errorf(api.CodeUnauthorized, "invalid user name or password")
	}
	return u, nil
}

// authenticateSession admits the holder of a session cookie: from the
// controller's own origin on unsafe methods and websocket upgrades (CSRF,
// cross-site websocket hijacking), while the user exists, is enabled and
// has the password the session began with.
func (s *Server) authenticateSession(w http.ResponseWriter, r *http.Request, raw string, next http.Handler) {
	if (!safeMethod(r.Method) || isWebsocket(r)) && r.Header.Get("Origin") != ownOrigin(r) {
		reply.WriteError(w, r, api.Errorf(api.CodeForbidden, "cross-origin request with a session cookie"))
		return
	}
	refuse := func() {
		reply.WriteError(w, r, api.Errorf(api.CodeUnauthorized, "session expired or ended: log in again"))
	}
	if len(s.cfg.SessionKey) == 0 {
		refuse()
		return
	}
	c, err := websession.Verify(s.cfg.SessionKey, raw, s.now())
	if err != nil {
		refuse()
		return
	}
	u, err := s.b.Store().Snapshot().UserByName(c.User)
	if err != nil || u == nil || u.Disabled || websession.PasswordFingerprint(u.PasswordHash) != c.Password {
		refuse()
		return
	}
	ctx := context.WithValue(r.Context(), userKey, caller{Name: u.Name, Access: u.Access})
	next.ServeHTTP(w, r.WithContext(ctx))
}

// ownOrigin is the origin the request was sent to, as a browser on a page
// of this controller names it.
func ownOrigin(r *http.Request) string {
	if r.TLS != nil {
		return "https://" + r.Host
	}
	return "http://" + r.Host
}

// isWebsocket reports whether r asks to upgrade to a websocket: a GET any
// page may open with the cookie.
func isWebsocket(r *http.Request) bool {
	return strings.EqualFold(r.Header.Get("Upgrade"), "websocket")
}

func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}
