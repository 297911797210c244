package hub

import (
	"context"
	"crypto/tls"
	"net/http"
	"strings"

	"github.com/droverhq/drover/hub/internal/authn"
	"github.com/droverhq/drover/hub/internal/store"
)

// The hub's per-request work on a proxied call (authentication, the model's
// route, the spoke token) is reused for a short time, so a status poll or a
// CLI session costs the hub little more than the extra hop. Each cache is a
// ttlcache.Cache; what each may serve stale, and for how long, is
// said where it is declared.

// modelRoute returns the index row of a model and its controller. Both are
// reused for decisionTTL: a model that moved to another controller
// (migration) or a controller whose addresses changed through another hub
// replica may be reached at the old place for that long, and the
// controller answers for itself (not found, or unavailable).
func (s *Server) modelRoute(ctx context.Context, id string) (store.Model, store.Controller, error) {
	m, err := s.routeModels.Lookup(id, func() (store.Model, error) { return s.store.ModelByUUID(ctx, id) })
	if err != nil {
		return m, store.Controller{}, err
	}
	c, err := s.routeCtrls.Lookup(m.ControllerUUID, func() (store.Controller, error) {
		return s.store.ControllerByUUID(ctx, m.ControllerUUID)
	})
	return m, c, err
}

// spokeTokenKey names a spoke token by everything it carries.
type spokeTokenKey struct {
	sub, name, controller, ca, access, model string
}

// cachedSpokeToken returns a spoke token for p on controller with access
// on model, minting one when none was minted in the last half of
// spokeTokenTTL: a token handed to a controller always has at least 30 s
// to live.
func (s *Server) cachedSpokeToken(p authn.Principal, controller, caSHA256, access, model string) (string, error) {
	k := spokeTokenKey{sub: p.Identity.ID, name: p.Identity.Name(), controller: controller, ca: caSHA256, access: access, model: model}
	return s.spokeTokens.Lookup(k, func() (string, error) { return s.spokeToken(p, controller, caSHA256, access, model) })
}

// spokeTokenReuse is how long a minted spoke token is handed out again.
const spokeTokenReuse = spokeTokenTTL / 2

// The proxy's read calls are also remembered whole: once a caller's token
// was authenticated, authorized to read a model and routed to its
// controller with a spoke token (handleModelProxy, the one place that
// decides), the same token's next reads of that model skip the router, the
// middleware and the five lookups, for decisionTTL and never past the
// token's expiry or the cached decision's. The memo is cleared with the
// decisions whenever the outbox writes a tuple, so a revocation made here
// applies at once, and one made through another replica within the
// decisions' 2 s, as before.

// proxyRouteKey names a remembered read route: the presented token, how it
// was presented, and the model.
type proxyRouteKey struct {
	raw    string
	cookie bool
	model  string
}

// proxyRoute is what a remembered read needs.
type proxyRoute struct {
	controller string // its name, for errors
	sc         *spokeClient
	tok        string
}

// modelCallRoute is the route pattern proxied model calls are counted under.
const modelCallRoute = "/v1/models/{uuid}/*"

// memoizableCall reports whether r is a read the proxy may serve from a
// remembered route, and the model it reads: a GET or HEAD (never audited)
// of a path under /v1/models/{uuid}/, not a long-lived call (a websocket
// upgrade or a followed stream, which handleModelProxy tracks: live.go),
// its path unescaped as the router sees it.
func memoizableCall(r *http.Request) (string, bool) {
	if (r.Method != http.MethodGet && r.Method != http.MethodHead) || r.URL.RawPath != "" || len(r.Header["Upgrade"]) > 0 || longLived(r) ||
		relationDataRead(r) { // decided as a write: remembered reads must not serve it
		return "", false
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/v1/models/")
	if !ok {
		return "", false
	}
	id, _, ok := strings.Cut(rest, "/")
	if !ok || id == "" {
		return "", false
	}
	return id, true
}

// ServeHTTP serves a remembered read straight to its controller, and
// everything else through the router.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.TLS == nil { // a connection handed back (handback.go) was TLS
		r.TLS, _ = r.Context().Value(tlsStateKey{}).(*tls.ConnectionState)
	}
	if id, ok := memoizableCall(r); ok {
		if raw, cookie := authn.Credential(r); raw != "" {
			if pr, hit := s.proxyRoutes.Get(proxyRouteKey{raw: raw, cookie: cookie, model: id}); hit {
				rec := &statusRecorder{ResponseWriter: w}
				err := s.forwardDirect(rec, r, pr.controller, pr.sc, pr.tok)
				if err != nil {
					s.unavailable(rec, r, pr.controller, err)
				}
				s.reqs.inc(modelCallRoute, rec.status)
				if err == nil {
					s.takeOver(w, r) // serve the caller's next reads here (takeover.go)
				}
				return
			}
		}
	}
	s.router.ServeHTTP(w, r)
}
