package hub

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/droverhq/drover/hub/internal/reply"
)

// endpoint is one line of the hub's HTTP API: a method ("*" for any), a
// path pattern, and its handler.
type endpoint struct {
	method, pattern string
	handler         http.HandlerFunc
}

// publicEndpoints are served to anyone: health, keys, and the logins.
func (s *Server) publicEndpoints() []endpoint {
	return []endpoint{
		{"GET", "/healthz", s.handleHealth},
		{"GET", "/readyz", s.handleReady},
		{"GET", "/.well-known/jwks.json", s.handleJWKS},
		{"GET", "/auth/login", s.authn.HandleWebLogin},
		{"GET", "/auth/callback", s.authn.HandleWebCallback},
		{"POST", "/auth/refresh", s.authn.HandleWebRefresh},
		{"POST", "/auth/logout", s.authn.HandleWebLogout},
		{"POST", "/v1/auth/device", s.authn.HandleDeviceStart},
		{"POST", "/v1/auth/device/token", s.authn.HandleDeviceToken},
		{"POST", "/v1/auth/token", s.authn.HandleToken},
	}
}

// apiEndpoints are the /v1 API (paths relative to it), authenticated and
// audited.
func (s *Server) apiEndpoints() []endpoint {
	return []endpoint{
		{"GET", "/whoami", s.handleWhoami},
		{"GET", "/hub", s.handleHubInfo},
		{"GET", "/hub/signing-keys", s.handleListSigningKeys},
		{"POST", "/hub/signing-keys", s.handleRotateSigningKey},
		{"POST", "/auth/logout", s.authn.HandleLogout},
		{"GET", "/organizations", s.handleListOrgs},
		{"GET", "/users", s.handleListUsers},
		{"GET", "/users/{user}", s.handleGetUser},
		{"POST", "/users/{user}/disable", s.handleDisableUser},
		{"POST", "/users/{user}/enable", s.handleEnableUser},
		{"DELETE", "/users/{user}", s.handleRemoveUser},
		{"GET", "/controllers", s.handleListControllers},
		{"GET", "/controllers/{name}", s.handleGetController},
		{"GET", "/models", s.handleListModels},
		{"GET", "/models/{uuid}", s.handleGetModel},
		{"POST", "/grants", s.handleGrant},
		{"DELETE", "/grants", s.handleRevoke},
		{"GET", "/groups", s.handleListGroups},
		{"POST", "/groups", s.handleCreateGroup},
		{"GET", "/groups/{group}", s.handleGetGroup},
		{"DELETE", "/groups/{group}", s.handleRemoveGroup},
		{"PATCH", "/groups/{group}", s.handleRenameGroup},
		{"POST", "/groups/{group}/members", s.handleAddMember},
		{"DELETE", "/groups/{group}/members/{member}", s.handleRemoveMember},
		{"GET", "/audit", s.handleAudit},
		{"POST", "/controllers", s.handleAddController},
		{"DELETE", "/controllers/{name}", s.handleRemoveController},
		{"PATCH", "/controllers/{name}", s.handleSetControllerDeprecated},
		{"POST", "/models", s.handleAddModel},
		{"DELETE", "/models/{uuid}", s.handleModelProxy},
		{"PATCH", "/models/{uuid}", s.handleSetModelOwner},
		{"*", "/models/{uuid}/*", s.handleModelProxy},
	}
}

// ServeHTTP serves a read the proxy remembers straight to its controller,
// and everything else through the router (routes).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.proxy.ServeHTTP(w, r) }

// routes builds the router from the endpoint tables.
func (s *Server) routes() {
	r := chi.NewRouter()
	r.Use(s.metrics)
	if s.cfg.MetricsListen == "" {
		r.Handle("/metrics", s.metricsHandler())
	}
	handle(r, s.publicEndpoints())
	r.Route("/v1", func(api chi.Router) {
		api.Use(s.whileRestoring, s.authn.Authenticate, s.audit)
		handle(api, s.apiEndpoints())
		s.api = api
	})
	s.router = r
}

func handle(r chi.Router, es []endpoint) {
	for _, e := range es {
		if e.method == "*" {
			r.HandleFunc(e.pattern, e.handler)
		} else {
			r.Method(e.method, e.pattern, e.handler)
		}
	}
}

func (s *Server) handleHealth(w http.ResponseWriter, _ *http.Request) {
	reply.JSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

func (s *Server) handleJWKS(w http.ResponseWriter, _ *http.Request) {
	reply.JSON(w, http.StatusOK, s.keys.JWKS())
}
