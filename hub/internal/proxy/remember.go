package proxy

import (
	"crypto/tls"
	"net/http"
	"strings"
	"time"

	"github.com/droverhq/drover/hub/internal/authn"
)

// The proxy's read calls are also remembered whole: once a caller's token
// was authenticated, authorized to read a model and routed to its
// controller with a spoke token (the hub's model call handler, the one
// place that decides, calls Remember), the same token's next reads of that
// model skip the router, the middleware and the five lookups, for
// Config.RouteTTL and never past the token's expiry or the cached
// decision's. The routes are forgotten with the decisions whenever the
// outbox writes a tuple (Forget), so a revocation made here applies at
// once, and one made through another replica within the decisions' TTL;
// a session's routes are forgotten when it ends (EndSession).

// proxyRouteKey names a remembered read route: the presented token, how it
// was presented, and the model.
type proxyRouteKey struct {
	raw    string
	cookie bool
	model  string
}

// rememberedRoute is a remembered read route and the session of the token
// it was remembered for ("" for a token minted without one), by which it
// is forgotten when that session ends (EndSession).
type rememberedRoute struct {
	Route
	sid string
}

// modelCallRoute is the route pattern proxied model calls are counted under.
const modelCallRoute = "/v1/models/{uuid}/*"

// Memoizable reports whether r is a read the proxy may serve from a
// remembered route, and the model it reads: a GET or HEAD (never audited)
// of a path under /v1/models/{uuid}/, not a long-lived call (a websocket
// upgrade or a followed stream, which the hub tracks: Track, live.go),
// its path unescaped as the router sees it.
func Memoizable(r *http.Request) (string, bool) {
	if (r.Method != http.MethodGet && r.Method != http.MethodHead) || r.URL.RawPath != "" || len(r.Header["Upgrade"]) > 0 || LongLived(r) ||
		RelationDataRead(r) { // decided as a write: remembered reads must not serve it
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
// everything else through Config.Handler (the hub's router).
func (s *Relay) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.TLS == nil { // a connection handed back (handback.go) was TLS
		r.TLS, _ = r.Context().Value(tlsStateKey{}).(*tls.ConnectionState)
	}
	if id, ok := Memoizable(r); ok {
		if raw, cookie := authn.Credential(r); raw != "" {
			if pr, hit := s.proxyRoutes.Get(proxyRouteKey{raw: raw, cookie: cookie, model: id}); hit {
				rec := &Recorder{ResponseWriter: w}
				err := s.forwardDirect(rec, r, pr.Controller, pr.Client, pr.Token)
				if err != nil {
					s.unavailable(rec, r, pr.Controller, err)
				}
				s.cfg.Count(modelCallRoute, rec.Status)
				if err == nil {
					s.takeOver(w, r) // serve the caller's next reads here (takeover.go)
				}
				return
			}
		}
	}
	s.cfg.Handler.ServeHTTP(w, r)
}

// RelationDataRead reports whether r reads a unit's relation data, which
// needs write access, not read (docs/hub.md): never a remembered read.
func RelationDataRead(r *http.Request) bool {
	return authn.SafeMethod(r.Method) && strings.HasSuffix(strings.TrimRight(r.URL.Path, "/"), "/relation-info")
}

// Remember has the proxy serve r's caller's next reads of r's model
// through rt without asking the hub, until until (never past Config's
// RouteTTL), unless routes were forgotten (Forget, EndSession) since gen
// (Generation) was read. sid is the session of the token r presents. r
// must be Memoizable.
func (s *Relay) Remember(r *http.Request, model string, rt Route, sid string, gen uint64, until time.Time) {
	if raw, cookie := authn.Credential(r); raw != "" {
		s.proxyRoutes.Put(proxyRouteKey{raw: raw, cookie: cookie, model: model}, rememberedRoute{Route: rt, sid: sid}, gen, until)
	}
}

// Generation is the count of Forgets and EndSessions, read before
// deciding what may be remembered.
func (s *Relay) Generation() uint64 { return s.proxyRoutes.Generation() }

// Remembers reports whether the proxy holds a remembered read route for
// the bearer token raw on model.
func (s *Relay) Remembers(raw, model string) bool {
	_, hit := s.proxyRoutes.Get(proxyRouteKey{raw: raw, model: model})
	return hit
}
