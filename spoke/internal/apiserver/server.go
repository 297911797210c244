// Package apiserver is the controller's HTTP API: the /v1 routes of
// api/requests.go for clients, the websocket model watch, the node-to-node
// internal routes, health and metrics. Handlers validate input, turn it into
// raft commands for the Backend, and map every error to a wire code in one
// table (spoke/internal/reply).
//
// Agent streams (GET /v1/agent/stream) are served by the agent gateway
// (spoke/internal/agentgw), which this server mounts and closes.
package apiserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/internal/loopback"
	"github.com/droverhq/drover/internal/version"
	"github.com/droverhq/drover/spoke/internal/agentgw"
	"github.com/droverhq/drover/spoke/internal/blobs"
	"github.com/droverhq/drover/spoke/internal/credential"
	"github.com/droverhq/drover/spoke/internal/lookup"
	"github.com/droverhq/drover/spoke/internal/peer"
	"github.com/droverhq/drover/spoke/internal/reply"
	"github.com/droverhq/drover/spoke/internal/state"
	"github.com/droverhq/drover/spoke/internal/state/stream"
	"github.com/droverhq/drover/web"
)

// Backend is the controller node the API serves.
type Backend interface {
	Store() *state.Store
	Events() *stream.Broker
	// LogMark names the raft log entry at index in its history (its term
	// and when it was appended), if the log still holds it.
	LogMark(index uint64) (mark string, ok bool)
	Blobs() *blobs.Store
	// Propose replicates a command (forwarding to the raft leader) and
	// returns the FSM's value (a Go value, or json.RawMessage when another
	// node applied it) and the command's raft index.
	Propose(ctx context.Context, t state.MessageType, req any) (any, uint64, error)
	// WaitRead waits until the local replica may serve a read that
	// reflects minIndex (and, if consistent, every acknowledged write).
	WaitRead(ctx context.Context, minIndex uint64, consistent bool) (uint64, error)
	// CatchUp waits until the local replica has applied what this node
	// knows is committed, with no message and no log entry: what
	// authentication waits for before refusing a name it does not know.
	CatchUp(ctx context.Context) error
	// HeardCommit waits until the node knows of a newer commit index
	// than known (or ctx ends); heard says whether it does.
	HeardCommit(ctx context.Context, known uint64) (commit uint64, heard bool)
	ReplicateBlob(ctx context.Context, sha string) error
	FetchBlob(ctx context.Context, sha string) error
	ControllerInfo(ctx context.Context) (*api.ControllerInfo, error)
	// ControllerProgress is ControllerInfo with each node's applied
	// index and lag behind the leader (it asks every node).
	ControllerProgress(ctx context.Context) (*api.ControllerInfo, error)
	EnableHA(ctx context.Context, n int) (*api.ControllerInfo, error)
	// NewJoinToken records and returns a single-use node join token;
	// Admit consumes one and hands the new node its admission material
	// (docs/decisions/0018-single-use-join-tokens.md).
	NewJoinToken(ctx context.Context, ttl time.Duration) (api.JoinToken, error)
	// NewHubToken records and returns a single-use hub token; TrustHub
	// consumes one and trusts the hub in one command (hubtrust.go).
	NewHubToken(ctx context.Context, ttl time.Duration) (api.JoinToken, uint64, error)
	TrustHub(ctx context.Context, req api.TrustHubRequest) (*api.HubTrust, uint64, error)
	IsLeader() bool
	// LeaderAPIAddr is the API address of the node this one believes
	// leads; PeerTransport presents this node's certificate to it. A read
	// this node cannot serve in time is relayed there (readBehind).
	LeaderAPIAddr() (string, error)
	PeerTransport() http.RoundTripper
	NodeID() string
	CACert() []byte

	// Node-to-node.
	ForwardedApply(ctx context.Context, cmd []byte) (json.RawMessage, uint64, error)
	ForwardedReadIndex(ctx context.Context) (uint64, error)
	// Admit's from is the caller's address, for the audit log.
	Admit(ctx context.Context, req peer.AdmitRequest, from string) (*peer.AdmitResponse, error)
	AddVoter(ctx context.Context, req peer.AddVoterRequest) error
}

// Config holds the API server's dependencies.
type Config struct {
	Backend      Backend
	Logger       *slog.Logger
	Now          func() time.Time
	MaxCharmSize int64
	// MetricsElsewhere leaves /metrics out of the API (another listener
	// serves Metrics); without it the API serves it to the machine alone.
	MetricsElsewhere bool
	// MaxBodySize bounds JSON request bodies (default 16 MiB).
	MaxBodySize int64
	// MaxExportSize bounds a model export a migration imports (default
	// and at most 40 MiB: the import is one raft command).
	MaxExportSize int64
	// Hub, if set, admits bearer tokens signed by the trusted hub.
	Hub TokenVerifier
	// LogDir, if set, is where debug-log records are kept across restarts.
	LogDir string
	// KeepaliveInterval is how long a stream may stay silent before it
	// sends a keepalive (default: the package's KeepaliveInterval).
	KeepaliveInterval time.Duration
	// HealthInterval is how often the hub's event stream checks the
	// controller's nodes for a change no event announces (leadership,
	// reachability; default the package's HealthInterval).
	HealthInterval time.Duration
	// Collectors are the backend's own metrics, served with the API's.
	Collectors []prometheus.Collector
	// CatchUpWait bounds how long a stream resumed from an index this node
	// has not reached waits for the node to get there (default 2s).
	CatchUpWait time.Duration
	// ReadWait bounds how long a read naming a raft index this node has
	// not applied waits before it is relayed to the leader (default 2s).
	ReadWait time.Duration
	// AuthLimits bound failed authentications per source address and per
	// claimed name (zero fields: credential.DefaultLimits).
	AuthLimits credential.Limits
	// Version is the drover release the controller runs, which a
	// migration's prechecks compare (default version.Version).
	Version string
	// SessionKey signs the dashboard's session cookies; every node of the
	// controller must hold the same (spoke derives it from the cluster
	// secret with websession.Key). Empty: POST /auth/login answers 404.
	SessionKey []byte
	// SessionTTL is how long a dashboard session lasts (default
	// DefaultSessionTTL).
	SessionTTL time.Duration
	// Hostname is the host the local substrate's machines run on, which
	// a migration's target precheck compares (default os.Hostname()).
	Hostname string
}

// Server is the http.Handler of a controller node: the authentication
// middleware, the endpoints by resource (endpoints.go) and the table of
// routes that wires them (routes).
type Server struct {
	*base
	router  chi.Router
	metrics *metrics
	// metricsHandler serves the registry metrics counts into.
	metricsHandler http.Handler
	agents         *agentgw.Gateway
	ep             endpoints
	// limiter throttles failed authentications, users', hubs' and
	// agents' alike.
	limiter *credential.Limiter
	// dashboard serves the web app at the paths no route takes.
	dashboard http.Handler
}

// New builds the router.
func New(cfg Config) (*Server, error) {
	if cfg.Backend == nil || cfg.Logger == nil {
		return nil, errors.New("apiserver: Backend and Logger are required")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.MaxBodySize == 0 {
		cfg.MaxBodySize = 16 << 20
	}
	if cfg.MaxExportSize == 0 {
		cfg.MaxExportSize = maxExportSizeLimit
	}
	if cfg.MaxExportSize < 0 || cfg.MaxExportSize > maxExportSizeLimit {
		return nil, fmt.Errorf("apiserver: MaxExportSize %d is not between 1 and %d bytes", cfg.MaxExportSize, maxExportSizeLimit)
	}
	if cfg.CatchUpWait == 0 {
		cfg.CatchUpWait = 2 * time.Second
	}
	if cfg.ReadWait == 0 {
		cfg.ReadWait = 2 * time.Second
	}
	if cfg.ReadWait < 0 {
		return nil, errors.New("apiserver: negative ReadWait")
	}
	if cfg.MaxCharmSize == 0 {
		cfg.MaxCharmSize = 256 << 20
	}
	if cfg.Version == "" {
		cfg.Version = version.Version
	}
	if _, _, err := majorMinor(cfg.Version); err != nil {
		return nil, fmt.Errorf("apiserver: Version: %w", err)
	}
	if cfg.Hostname == "" {
		h, err := os.Hostname()
		if err != nil {
			return nil, fmt.Errorf("apiserver: Hostname not given and unknown: %w", err)
		}
		cfg.Hostname = h
	}
	s := &Server{base: &base{cfg: cfg, b: cfg.Backend, log: cfg.Logger, closing: make(chan struct{})},
		limiter: credential.NewLimiter(cfg.AuthLimits, cfg.Now)}
	logs := newLogBook(DefaultLogLines, cfg.LogDir, cfg.Logger)
	charms := newCharmCache(256)
	var err error
	s.agents, err = agentgw.New(agentgw.Config{Proposer: cfg.Backend, Logger: cfg.Logger, Now: cfg.Now,
		KeepaliveInterval: s.keepaliveInterval(), CharmDefaults: charms.defaults, AppendLog: logs.append,
		Limiter: s.limiter})
	if err != nil {
		return nil, err
	}
	s.ep = newEndpoints(s.base, charms, logs, s.agents)
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	s.metrics = newMetrics(reg, cfg.Backend)
	reg.MustRegister(cfg.Collectors...)
	s.metricsHandler = promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	dash, err := web.New(web.Config{Mode: web.ModeController, Name: s.controllerName, Version: cfg.Version, NotFound: http.HandlerFunc(notFound)})
	if err != nil {
		return nil, fmt.Errorf("apiserver: %w", err)
	}
	s.dashboard = dash
	s.router = s.routes(s.metricsHandler)
	return s, nil
}

// Close ends long-lived streams (watches, agent connections) and waits for
// the agent connections' goroutines.
func (s *Server) Close() {
	select {
	case <-s.closing:
	default:
		close(s.closing)
	}
	s.agents.Close()
	s.ep.logs.book.close()
}

// RunAgentHub feeds the agent connections until ctx ends: a node worker
// the spoke supervises.
func (s *Server) RunAgentHub(ctx context.Context) error { return s.agents.Run(ctx) }

// AgentConnections returns the number of agent connections on this node.
func (s *Server) AgentConnections() int { return s.agents.Connections() }

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.router.ServeHTTP(w, r) }

// Metrics serves the node's metrics, to a listener of their own
// (Config.MetricsElsewhere).
func (s *Server) Metrics() http.Handler { return s.metricsHandler }

func (s *Server) routes(metricsHandler http.Handler) chi.Router {
	r := chi.NewRouter()
	r.Use(s.instrument)
	r.Get("/healthz", s.healthz)
	r.Get("/readyz", s.readyz)
	if !s.cfg.MetricsElsewhere {
		// Served to the machine itself alone: the API address is anyone's
		// (ADR 0023).
		r.Handle("/metrics", loopback.Only(metricsHandler))
	}

	r.Route("/v1/internal", func(r chi.Router) {
		r.Get("/ca", s.ep.peers.getCA)
		r.Get("/identity", s.ep.peers.getIdentity)
		r.Post("/admit", s.ep.peers.admit)
		r.Post("/hub-trust", s.ep.controller.trustHub) // authenticated by the hub token in the body
		r.Group(func(r chi.Router) {
			r.Use(requireNodeCert)
			r.Post("/raft/apply", s.ep.peers.internalApply)
			r.Post("/raft/read-index", s.ep.peers.internalReadIndex)
			r.Post("/raft/applied", s.ep.peers.internalApplied)
			r.Post("/add-voter", s.ep.peers.internalAddVoter)
			r.Get("/blobs/{sha}", s.ep.peers.internalGetBlob)
			r.Put("/blobs/{sha}", s.ep.peers.internalPutBlob)
		})
	})

	r.Route("/v1", func(r chi.Router) {
		// Agents authenticate with machine credentials, not as users.
		r.Get("/agent/stream", s.agents.ServeStream)
		r.Post(strings.TrimPrefix(api.PathAgentValidate, "/v1"), s.agents.ServeValidate)
		r.Get("/agent/charms/{sha}", s.ep.charms.agentDownloadCharm)
		r.Get("/agent/resources/{sha}", s.ep.charms.agentDownloadResource)
		r.Group(func(r chi.Router) { s.userRoutes(r) })
	})
	// The dashboard's login (session.go): open routes, the credential is
	// in the body.
	r.Post("/auth/login", s.login)
	r.Post("/auth/logout", s.logout)
	if s.dashboard != nil {
		r.NotFound(s.dashboard.ServeHTTP) // which hands the API's paths back to notFound
	} else {
		r.NotFound(notFound)
	}
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		reply.WriteError(w, r, &api.Error{Code: api.CodeBadRequest, Message: "method " + r.Method + " not allowed on " + r.URL.Path, Status: http.StatusMethodNotAllowed})
	})
	return r
}

// userRoutes are the /v1 routes of users (clients, the dashboard, the hub).
func (s *Server) userRoutes(r chi.Router) {
	r.Use(s.authenticate)
	r.Get("/whoami", s.whoami)
	r.With(requireSuperuser).Get("/events", s.ep.events.events)
	r.Get("/controller", s.ep.controller.getController)
	r.With(requireSuperuser).Put("/controller/placement", s.ep.controller.setPlacement)
	r.With(requireLocalSuperuser).Post("/controller/enable-ha", s.ep.controller.enableHA)
	r.With(requireLocalSuperuser).Post("/controller/join-tokens", s.ep.controller.createJoinToken)
	r.With(requireLocalSuperuser).Post("/controller/hub-tokens", s.ep.controller.createHubToken)
	r.With(requireSuperuser).Get("/controller/hub", s.ep.controller.getHubTrust)
	r.With(requireLocalSuperuser).Delete("/controller/hub", s.ep.controller.removeHubTrust)
	// The hub's migration driver (api/migration.go): outside
	// /v1/models/{model}, which the hub relays to its users.
	r.Route("/controller/migrations/{model}", func(r chi.Router) {
		r.Use(requireSuperuser, s.modelCtx)
		r.Get("/", s.ep.migrations.getModel)
		r.Post("/precheck", s.ep.migrations.precheck)
		r.Post("/quiesce", s.ep.migrations.quiesce)
		r.Post("/phase", s.ep.migrations.setPhase)
		r.Post("/reap", s.ep.migrations.reap)
		r.Get("/logs", s.ep.migrations.getLogs)
		r.Post("/logs", s.ep.migrations.sendLogs)
		r.Post("/release", s.ep.migrations.release)
		r.Get("/export", s.ep.migrations.export)
		r.Post("/import", s.ep.migrations.importModel)
		r.Post("/activate", s.ep.migrations.activate)
		r.Get("/blobs", s.ep.migrations.missingBlobs)
		r.Get("/blobs/{sha256}", s.ep.migrations.getBlob)
		r.Put("/blobs/{sha256}", s.ep.migrations.putBlob)
		r.Post("/abort-import", s.ep.migrations.abortImport)
	})
	r.Group(func(r chi.Router) {
		r.Use(requireSuperuser)
		r.Mount("/debug/pprof", pprofRouter())
	})

	r.Get("/charms", s.ep.charms.listCharms)
	r.Post("/charms", s.ep.charms.uploadCharm)
	r.Get("/charms/{sha}", s.ep.charms.getCharm)
	r.Get("/charms/{sha}/archive", s.ep.charms.downloadCharm)

	r.Get("/models", s.ep.models.listModels)
	r.Post("/models", s.ep.models.addModel)
	r.Route("/models/{model}", func(r chi.Router) {
		r.Use(s.modelCtx, s.redirectMigrated)
		r.Get("/", s.ep.models.getModel)
		r.Delete("/", s.ep.models.destroyModel)
		r.Get("/config", s.ep.models.getModelConfig)
		r.Patch("/config", s.ep.models.setModelConfig)
		r.Get("/constraints", s.ep.models.getModelConstraints)
		r.Post("/constraints", s.ep.models.setModelConstraints)
		r.Get("/status", s.ep.status.getStatus)
		r.Get("/watch", s.ep.status.watch)
		r.Post("/charms", s.ep.charms.uploadCharm)   // the hub forwards model-scoped uploads here
		r.Get("/charms/{sha}", s.ep.charms.getCharm) // and reads, for its model-scoped tokens
		r.Get("/status-history", s.ep.models.statusHistory)

		r.Get("/applications", s.ep.applications.listApplications)
		r.Post("/applications", s.ep.applications.deploy)
		r.Get("/applications/{app}", s.ep.applications.getApplication)
		r.Delete("/applications/{app}", s.ep.applications.removeApplication)
		r.Get("/applications/{app}/config", s.ep.applications.getApplicationConfig)
		r.Patch("/applications/{app}/config", s.ep.applications.setApplicationConfig)
		r.Post("/applications/{app}/units", s.ep.applications.addUnits)
		r.Post("/applications/{app}/scale", s.ep.applications.scale)
		r.Post("/applications/{app}/expose", s.ep.applications.expose)
		r.Post("/applications/{app}/charm", s.ep.applications.setCharm)
		r.Post("/applications/{app}/constraints", s.ep.applications.setConstraints)
		r.Post("/applications/{app}/trust", s.ep.applications.setTrust)
		r.Get("/applications/{app}/resources", s.ep.applications.listResources)
		r.Post("/applications/{app}/resources", s.ep.applications.attachResources)
		r.Post("/resource-blobs", s.ep.charms.uploadResourceBlob)

		r.Get("/units", s.ep.units.listUnits)
		r.Get("/units/{app}/{n}", s.ep.units.getUnit)
		r.Delete("/units/{app}/{n}", s.ep.units.removeUnit)
		r.Post("/units/{app}/{n}/resolved", s.ep.units.resolved)
		r.Get("/units/{app}/{n}/relation-info", s.ep.units.unitRelationInfo)

		r.Get("/machines", s.ep.machines.listMachines)
		r.Post("/machines", s.ep.machines.addMachines)
		r.Get("/machines/{id}", s.ep.machines.getMachine)
		r.Delete("/machines/{id}", s.ep.machines.removeMachine)

		r.Get("/relations", s.ep.relations.listRelations)
		r.Post("/relations", s.ep.relations.integrate)
		r.Delete("/relations/{id}", s.ep.relations.removeRelation)

		r.Post("/actions", s.ep.actions.runAction)
		r.Get("/tasks", s.ep.actions.listTasks)
		r.Get("/tasks/{id}", s.ep.actions.getTask)
		r.Post("/tasks/{id}/cancel", s.ep.actions.cancelTask)
		r.Get("/logs", s.ep.logs.getLogs)
	})
}

func notFound(w http.ResponseWriter, r *http.Request) {
	reply.WriteError(w, r, api.Errorf(api.CodeNotFound, "no route for %s %s", r.Method, r.URL.Path))
}

// controllerName is the name the dashboard shows: the controller's, once
// raft has its record.
func (s *Server) controllerName() string {
	if c, err := lookup.Controller(s.b.Store().Snapshot()); err == nil && c != nil {
		return c.Name
	}
	return ""
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	reply.JSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// readyz is ready once the node knows a leader and has the controller
// record (i.e. it has caught up far enough to serve).
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	if _, err := lookup.Controller(s.b.Store().Snapshot()); err != nil {
		reply.WriteError(w, r, api.Errorf(api.CodeUnavailable, "controller state not replicated yet"))
		return
	}
	reply.JSON(w, http.StatusOK, map[string]string{"status": "ready"})
}

// Route is one route of the controller API: a method and a chi pattern.
type Route struct{ Method, Pattern string }

// ModelRoutes lists the routes under /v1/models/{model}: what the hub
// forwards, and what its tests must cover.
func ModelRoutes() []Route {
	var out []Route
	for _, r := range Routes() {
		if strings.HasPrefix(r.Pattern, "/v1/models/{model}/") || r.Pattern == "/v1/models/{model}" {
			out = append(out, r)
		}
	}
	return out
}

// Routes lists every route of the controller API, as its router serves
// them: what the authorization tests must cover.
func Routes() []Route {
	var out []Route
	_ = chi.Walk((&Server{base: &base{}}).routes(nil), func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		if route != "/" {
			route = strings.TrimSuffix(route, "/")
		}
		out = append(out, Route{Method: method, Pattern: strings.ReplaceAll(route, "/*/", "/")})
		return nil
	})
	return out
}
