package hub

import (
	"fmt"
	"net/http"
	"net/url"

	"github.com/go-chi/chi/v5"

	"github.com/droverhq/drover/hub/internal/reply"
	"github.com/droverhq/drover/internal/loopback"
	"github.com/droverhq/drover/internal/version"
	"github.com/droverhq/drover/web"
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
	access, ctrls, ids, reads, models := accessAPI{s}, controllersAPI{s}, identitiesAPI{s}, readAPI{s}, modelCallsAPI{s}
	migs := migrationsAPI{s}
	return []endpoint{
		{"GET", "/whoami", ids.handleWhoami},
		{"GET", "/watch", s.handleFederationWatch},
		{"GET", "/access", access.handleAccess},
		{"GET", "/hub", ids.handleHubInfo},
		{"GET", "/hub/signing-keys", ids.handleListSigningKeys},
		{"POST", "/hub/signing-keys", ids.handleRotateSigningKey},
		{"POST", "/auth/logout", s.authn.HandleLogout},
		{"GET", "/organizations", reads.handleListOrgs},
		{"GET", "/users", ids.handleListUsers},
		{"GET", "/users/{user}", ids.handleGetUser},
		{"POST", "/users/{user}/disable", ids.handleDisableUser},
		{"POST", "/users/{user}/enable", ids.handleEnableUser},
		{"DELETE", "/users/{user}", ids.handleRemoveUser},
		{"GET", "/controllers", reads.handleListControllers},
		{"GET", "/controllers/{name}", reads.handleGetController},
		{"GET", "/models", reads.handleListModels},
		{"GET", "/models/{uuid}", reads.handleGetModel},
		{"POST", "/grants", access.handleGrant},
		{"DELETE", "/grants", access.handleRevoke},
		{"GET", "/groups", access.handleListGroups},
		{"POST", "/groups", access.handleCreateGroup},
		{"GET", "/groups/{group}", access.handleGetGroup},
		{"DELETE", "/groups/{group}", access.handleRemoveGroup},
		{"PATCH", "/groups/{group}", access.handleRenameGroup},
		{"POST", "/groups/{group}/members", access.handleAddMember},
		{"DELETE", "/groups/{group}/members/{member}", access.handleRemoveMember},
		{"GET", "/audit", s.handleAudit},
		{"POST", "/controllers", ctrls.handleAddController},
		{"DELETE", "/controllers/{name}", ctrls.handleRemoveController},
		{"PATCH", "/controllers/{name}", ctrls.handleSetControllerDeprecated},
		{"POST", "/models", ctrls.handleAddModel},
		{"DELETE", "/models/{uuid}", models.handleModelProxy},
		{"PATCH", "/models/{uuid}", access.handleSetModelOwner},
		{"*", "/models/{uuid}/*", models.handleModelProxy},
		{"POST", "/migrations", migs.handleMigrate},
		{"GET", "/migrations", migs.handleListMigrations},
		{"GET", "/migrations/{id}", migs.handleGetMigration},
		{"GET", "/migrations/{id}/events", migs.handleMigrationEvents},
		{"POST", "/migrations/{id}/abort", migs.handleAbortMigration},
		{"POST", "/migrations/{id}/retry-reap", migs.handleRetryReap},
		// The audit and compliance views (docs/hub.md).
		{"GET", "/audit/export", s.handleAuditExport},
		{"GET", "/audit/activity", s.handleAuditActivity},
		{"GET", "/compliance/charms", s.handleComplianceCharms},
		{"GET", "/compliance/access", s.handleComplianceAccess},
	}
}

// ServeHTTP serves a read the proxy remembers straight to its controller,
// and everything else through the router (routes).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.proxy.ServeHTTP(w, r) }

// routes builds the router from the endpoint tables. What no route takes
// is the dashboard's (package web), which hands the API's own paths back as
// a JSON 404.
func (s *Server) routes() error {
	dash, err := s.dashboard()
	if err != nil {
		return err
	}
	r := chi.NewRouter()
	r.NotFound(dash.ServeHTTP)
	r.Use(s.metrics)
	if s.cfg.MetricsListen == "" {
		// Served to the machine itself alone: the public address is
		// anyone's (ADR 0023).
		r.Handle("/metrics", loopback.Only(s.metricsHandler()))
	}
	handle(r, s.publicEndpoints())
	r.Route("/v1", func(api chi.Router) {
		api.Use(s.whileRestoring, s.authn.Authenticate, s.audit)
		handle(api, s.apiEndpoints())
		s.api = api
	})
	s.router = r
	return nil
}

// dashboard serves the web app at every path the API leaves free.
func (s *Server) dashboard() (*web.Handler, error) {
	name := s.cfg.PublicURL
	if u, err := url.Parse(s.cfg.PublicURL); err == nil && u.Host != "" {
		name = u.Host
	}
	h, err := web.New(web.Config{Mode: web.ModeHub, Name: func() string { return name }, Version: version.Version,
		NotFound: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			s.writeError(w, r, fmt.Errorf("%w: no route for %s %s", reply.ErrNotFound, r.Method, r.URL.Path))
		})})
	if err != nil {
		return nil, fmt.Errorf("hub: %w", err)
	}
	return h, nil
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
