package hub

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httputil"
	"strings"
	"sync"

	"github.com/go-chi/chi/v5"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/authz"
	"github.com/droverhq/drover/hub/internal/authn"
	"github.com/droverhq/drover/hub/internal/reply"
	"github.com/droverhq/drover/hub/internal/store"
)

// handleModelProxy serves every model route of the controller API at the
// hub (api/requests.go, websocket watches included): it checks the caller's
// permission on the model (reader for reads, writer for changes,
// administrator to destroy it), annotates the audit record, and forwards
// the request unchanged to the owning controller with a per-request token
// carrying that decision. The hub's own session token never leaves it.
func (s *Server) handleModelProxy(w http.ResponseWriter, r *http.Request) {
	p, _ := authn.PrincipalFrom(r.Context())
	id := chi.URLParam(r, "uuid")
	rest := strings.TrimPrefix(r.URL.Path, "/v1/models/"+id)
	rel, access := authz.Writer, spokeWrite
	switch {
	case relationDataRead(r):
		// Relation data may hold credentials: writers only (show-unit).
	case authn.SafeMethod(r.Method):
		rel, access = authz.Reader, spokeRead
	case r.Method == http.MethodDelete && (rest == "" || rest == "/"):
		rel, access = authz.Administrator, spokeAdmin
	case r.Method == http.MethodPost && strings.Trim(rest, "/") == "actions" && execRequest(r.Context()):
		// juju exec runs anything on the units: administrators only, as in
		// Juju. The controller checks the token's access too, so a body the
		// hub could not read (over the audit's 64 KiB) is refused there.
		rel, access = authz.Administrator, spokeAdmin
	}
	gen := s.proxyRoutes.Generation() // before the decision it may remember
	annotate(r.Context(), func(a *auditInfo) {
		a.Operation, a.Target = modelOperation(r.Method, rest, a.body)
		a.ModelUUID = id
	})
	if err := s.gate.Require(r.Context(), p, rel, authz.Reader, authz.ModelObject(id)); err != nil {
		s.writeError(w, r, err)
		return
	}
	if rel == authz.Writer && r.Method == http.MethodPost && strings.Trim(rest, "/") == "actions" {
		// A body too large for the audit to read may still be juju exec:
		// the controller decides on it, so an administrator's token says
		// admin (a writer's, write: the controller refuses it exec).
		if admin, err := s.gate.Check(r.Context(), p, authz.Administrator, authz.ModelObject(id)); err != nil {
			s.writeError(w, r, err)
			return
		} else if admin {
			access = spokeAdmin
		}
	}
	m, c, err := s.modelRoute(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		err = fmt.Errorf("%w: model %s", reply.ErrNotFound, id)
	}
	annotate(r.Context(), func(a *auditInfo) { a.Org, a.ControllerUUID, a.ModelName = m.Org, m.ControllerUUID, m.Name })
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	sc, tok, err := s.spokeFor(c, p, access, id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if raw, cookie := authn.Credential(r); raw != "" {
		if mid, ok := memoizableCall(r); ok && mid == id {
			// Remembered no longer than the token and the cached decision
			// it rests on live.
			until := p.Expires
			if exp, ok := s.gate.DecisionExpiry(p, rel, authz.ModelObject(id)); ok &&
				(until.IsZero() || exp.Before(until)) {
				until = exp
			}
			s.proxyRoutes.Put(proxyRouteKey{raw: raw, cookie: cookie, model: id},
				proxyRoute{controller: c.Name, sc: sc, tok: tok}, gen, until)
		}
	}
	if longLived(r) {
		tracked, done, err := s.live.track(r, p, rel, id)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		r = tracked
		defer done()
	}
	s.forward(w, r, c.Name, sc, tok)
}

// relationDataRead reports whether r reads a unit's relation data, which
// needs write access, not read (docs/hub.md).
func relationDataRead(r *http.Request) bool {
	return authn.SafeMethod(r.Method) && strings.HasSuffix(strings.TrimRight(r.URL.Path, "/"), "/relation-info")
}

// execRequest reports whether the request's body, as the audit read it,
// asks for juju exec.
func execRequest(ctx context.Context) bool {
	exec := false
	annotate(ctx, func(a *auditInfo) { exec = a.body["action"] == api.ExecAction })
	return exec
}

// routeOf turns the part of a model path after the UUID into an operation
// name: units/web/0 stays as it is; the model itself is "model".
func routeOf(rest string) string {
	rest = strings.Trim(rest, "/")
	if rest == "" {
		return "/"
	}
	return rest
}

// spokeFor returns the client for controller c and the token that carries
// p's access on model there.
func (s *Server) spokeFor(c store.Controller, p authn.Principal, access, model string) (*spokeClient, string, error) {
	sc, err := s.spokes.get(c)
	if err == nil && len(sc.addrs) == 0 {
		err = fmt.Errorf("%w: controller %s has no address", errSpokeUnavailable, c.Name)
	}
	if err != nil {
		return nil, "", err
	}
	tok, err := s.cachedSpokeToken(p, c.UUID, sc.caSHA256, access, model)
	return sc, tok, err
}

// forward proxies r to the controller named controller through sc, with tok.
func (s *Server) forward(w http.ResponseWriter, r *http.Request, controller string, sc *spokeClient, tok string) {
	if r.Header.Get("Upgrade") == "" {
		if err := s.forwardDirect(w, r, controller, sc, tok); err != nil {
			s.unavailable(w, r, controller, err)
		}
		return
	}
	// Websocket upgrades (watches) are spliced by the standard proxy.
	rp := &httputil.ReverseProxy{
		BufferPool: proxyBuffers,
		Transport:  sc, // picks the address, failing over between them
		// No FlushInterval: an answer without a length (the log stream) is
		// flushed as it comes anyway, and websockets are spliced.
		Rewrite: func(pr *httputil.ProxyRequest) {
			addr := sc.address()
			pr.Out.URL.Scheme, pr.Out.URL.Host, pr.Out.Host = "https", addr, addr
			pr.Out.Header.Del("Cookie")
			pr.Out.Header.Del("Origin") // the hub checked the caller; the controller sees the hub
			pr.Out.Header.Set("Authorization", "Bearer "+tok)
		},
		ModifyResponse: func(resp *http.Response) error {
			if resp.StatusCode != http.StatusUnauthorized {
				sanitizeUpgradeAnswer(resp)
				return nil
			}
			defer resp.Body.Close()
			return refusedBy(controller, resp)
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if refused := (*hubRefusedError)(nil); errors.As(err, &refused) {
				s.writeControllerRefused(w, refused)
				return
			}
			s.unavailable(w, r, controller, err)
		},
	}
	rp.ServeHTTP(w, r)
}

// unavailable answers a call no node of the controller answered: none
// could be reached, or the one that took the call did not answer in time.
func (s *Server) unavailable(w http.ResponseWriter, r *http.Request, controller string, err error) {
	s.cfg.Logger.Warn("forward to controller failed", "controller", controller, "path", r.URL.Path, "err", err)
	var late *errNoAnswer
	switch {
	case errors.As(err, &late) && r.Method == http.MethodGet:
		reply.JSON(w, http.StatusGatewayTimeout, &api.Error{Code: api.CodeTimeout, Message: fmt.Sprintf(
			"controller %s did not answer within %v (it is overloaded or hung; 'drover controllers' shows its health)", controller, late.after)})
	case errors.As(err, &late):
		reply.JSON(w, http.StatusGatewayTimeout, &api.Error{Code: api.CodeTimeout, Message: fmt.Sprintf(
			"controller %s did not answer within %v: the change may or may not have been made (check 'drover status' before retrying)",
			controller, late.after)})
	default:
		reply.JSON(w, http.StatusBadGateway, &api.Error{Code: api.CodeUnavailable,
			Message: fmt.Sprintf("controller %s is unavailable behind the hub ('drover controllers' shows its health)", controller)})
	}
}

// proxyBuffers recycles the buffers the proxy copies answers through (32
// KiB each, allocated per request otherwise).
var proxyBuffers = &bufferPool{pool: sync.Pool{New: func() any { b := make([]byte, proxyBufferSize); return &b }}}

const proxyBufferSize = 32 << 10

type bufferPool struct{ pool sync.Pool }

func (p *bufferPool) Get() []byte  { return *p.pool.Get().(*[]byte) }
func (p *bufferPool) Put(b []byte) { p.pool.Put(&b) }
