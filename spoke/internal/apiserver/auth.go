package apiserver

import (
	"context"
	"net/http"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/spoke/internal/reply"
)

type ctxKey int

const userKey ctxKey = iota

// caller is the authenticated identity of a request.
type caller struct {
	Name   string
	Access string
	// Hub is set for a hub token: Model is the one model it may touch
	// (empty for a controller superuser token).
	Hub   bool
	Model string
	// HubURL is the hub that signed the token (the one trusted then), and
	// KeyID the kid of the hub key that signed it.
	HubURL, KeyID string
}

func callerOf(ctx context.Context) caller {
	c, _ := ctx.Value(userKey).(caller)
	return c
}

// authenticate checks HTTP Basic credentials against the replicated users
// (local users authenticate with generated secrets, see spoke.HashSecret),
// or a hub's bearer token when the controller trusts a hub (hubauth.go),
// or else the dashboard's session cookie (session.go). Failures are
// charged to the source address and the claimed name (s.limiter); neither
// a failure nor a refusal touches raft.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if raw, ok := bearerToken(r); ok {
			s.authenticateHub(w, r, raw, next)
			return
		}
		name, secret, ok := r.BasicAuth()
		if !ok {
			if c, err := r.Cookie(sessionCookie); err == nil {
				s.authenticateSession(w, r, c.Value, next)
				return
			}
			if !fromScript(r) {
				w.Header().Set("WWW-Authenticate", `Basic realm="drover"`)
			}
			reply.WriteError(w, r, api.Errorf(api.CodeUnauthorized, "authentication required: pass the controller's user and password"))
			return
		}
		u, err := s.checkPassword(w, r, name, secret)
		if err != nil {
			reply.WriteError(w, r, err)
			return
		}
		ctx := context.WithValue(r.Context(), userKey, caller{Name: u.Name, Access: u.Access})
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// fromScript reports whether a browser's page script sent r (fetch or
// XMLHttpRequest: Sec-Fetch-Mode other than navigate). Such a request is
// refused without a Basic challenge, which would have the browser hold
// the dashboard's call behind its own password prompt; the dashboard
// shows its login form instead. Clients that are not browsers send no
// Sec-Fetch-Mode and get the challenge.
func fromScript(r *http.Request) bool {
	m := r.Header.Get("Sec-Fetch-Mode")
	return m != "" && m != "navigate"
}

func requireSuperuser(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if callerOf(r.Context()).Access != "superuser" {
			reply.WriteError(w, r, api.Errorf(api.CodeForbidden, "this operation needs controller superuser access"))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// requireLocalSuperuser admits a controller superuser who is not a hub:
// what decides who runs and who manages the controller (its nodes, the hub
// it trusts, tokens for a hub to join) stays with the controller's own
// administrators. A hub's superuser token, which it uses to place models,
// cannot hand the controller to another hub or drop its own trust.
func requireLocalSuperuser(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c := callerOf(r.Context()); c.Access != "superuser" || c.Hub {
			reply.WriteError(w, r, api.Errorf(api.CodeForbidden, "this operation needs a local controller superuser (not a hub)"))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// requireNodeCert admits only callers presenting a certificate signed by
// the controller CA: other controller nodes.
func requireNodeCert(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 {
			reply.WriteError(w, r, api.Errorf(api.CodeForbidden, "node-to-node route: a controller node certificate is required"))
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (s *Server) whoami(w http.ResponseWriter, r *http.Request) {
	c := callerOf(r.Context())
	reply.JSON(w, http.StatusOK, api.WhoAmI{User: c.Name, Access: c.Access})
}
