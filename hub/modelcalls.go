package hub

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/authz"
	"github.com/droverhq/drover/hub/internal/authn"
	"github.com/droverhq/drover/hub/internal/proxy"
	"github.com/droverhq/drover/hub/internal/reply"
	"github.com/droverhq/drover/hub/internal/store"
)

// modelCallsAPI serves the model calls the hub relays to controllers
// (every route under /v1/models/{uuid}/, and DELETE /v1/models/{uuid}):
// it decides, the proxy relays. It is the hub's Server seen through those
// handlers.
type modelCallsAPI struct{ *Server }

// handleModelProxy serves every model route of the controller API at the
// hub (api/requests.go, websocket watches included): it checks the caller's
// permission on the model (reader for reads, writer for changes,
// administrator to destroy it), annotates the audit record, and forwards
// the request unchanged to the owning controller with a per-request token
// carrying that decision. The hub's own session token never leaves it.
func (s modelCallsAPI) handleModelProxy(w http.ResponseWriter, r *http.Request) {
	p, _ := authn.PrincipalFrom(r.Context())
	id := chi.URLParam(r, "uuid")
	rest := strings.TrimPrefix(r.URL.Path, "/v1/models/"+id)
	rel, access := authz.Writer, spokeWrite
	switch {
	case proxy.RelationDataRead(r):
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
	gen := s.proxy.Generation() // before the decision it may remember
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
	rt, err := s.spokeFor(c, p, access, id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if mid, ok := proxy.Memoizable(r); ok && mid == id {
		// Remembered no longer than the token and the cached decision it
		// rests on live.
		until := p.Expires
		if exp, ok := s.gate.DecisionExpiry(p, rel, authz.ModelObject(id)); ok &&
			(until.IsZero() || exp.Before(until)) {
			until = exp
		}
		s.proxy.Remember(r, id, rt, p.SID, gen, until)
	}
	if proxy.LongLived(r) {
		tracked, done, err := s.proxy.Track(r, p, rel, id)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		r = tracked
		defer done()
	}
	s.proxy.Forward(w, r, rt)
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

// spokeFor returns the route to controller c: its client and the token
// that carries p's access on model there.
func (s modelCallsAPI) spokeFor(c store.Controller, p authn.Principal, access, model string) (proxy.Route, error) {
	sc, err := s.spokes.Get(c)
	if err == nil && len(sc.Addrs()) == 0 {
		err = fmt.Errorf("%w: controller %s has no address", proxy.ErrUnavailable, c.Name)
	}
	if err != nil {
		return proxy.Route{}, err
	}
	tok, err := s.cachedSpokeToken(p, c.UUID, sc.CASHA256(), access, model)
	return proxy.Route{Controller: c.Name, Client: sc, Token: tok}, err
}
