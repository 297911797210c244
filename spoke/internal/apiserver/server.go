// Package apiserver is the controller's HTTP API: the /v1 routes of
// api/requests.go for clients, the websocket model watch, the node-to-node
// internal routes, health and metrics. Handlers validate input, turn it into
// raft commands for the Backend, and map every error to a wire code in one
// table (errors.go).
//
// Agent streams (GET /v1/agent/stream) are served by the agent gateway
// (spoke/internal/agentgw), which this server mounts and closes.
package apiserver

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/spoke/internal/agentgw"
	"github.com/droverhq/drover/spoke/internal/blobs"
	"github.com/droverhq/drover/spoke/internal/lookup"
	"github.com/droverhq/drover/spoke/internal/peer"
	"github.com/droverhq/drover/spoke/internal/reply"
	"github.com/droverhq/drover/spoke/internal/state"
	"github.com/droverhq/drover/spoke/internal/status"
)

// Backend is the controller node the API serves.
type Backend interface {
	Store() *state.Store
	Events() *state.EventBroker
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
	ReplicateBlob(ctx context.Context, sha string) error
	FetchBlob(ctx context.Context, sha string) error
	ControllerInfo(ctx context.Context) (*api.ControllerInfo, error)
	EnableHA(ctx context.Context, n int) (*api.ControllerInfo, error)
	NewJoinToken(ttl time.Duration) (api.JoinToken, error)
	// NewHubToken records and returns a single-use hub token; TrustHub
	// consumes one and trusts the hub in one command (hubtrust.go).
	NewHubToken(ctx context.Context, ttl time.Duration) (api.JoinToken, uint64, error)
	TrustHub(ctx context.Context, req api.TrustHubRequest) (*api.HubTrust, uint64, error)
	IsLeader() bool
	NodeID() string
	CACert() []byte

	// Node-to-node.
	ForwardedApply(ctx context.Context, cmd []byte) (json.RawMessage, uint64, error)
	ForwardedReadIndex(ctx context.Context) (uint64, error)
	Admit(ctx context.Context, req peer.AdmitRequest) (*peer.AdmitResponse, error)
	AddVoter(ctx context.Context, req peer.AddVoterRequest) error
}

// Config holds the API server's dependencies.
type Config struct {
	Backend      Backend
	Logger       *slog.Logger
	Now          func() time.Time
	MaxCharmSize int64
	// MaxBodySize bounds JSON request bodies (default 16 MiB).
	MaxBodySize int64
	// Hub, if set, admits bearer tokens signed by the trusted hub.
	Hub TokenVerifier
	// LogDir, if set, is where debug-log records are kept across restarts.
	LogDir string
	// KeepaliveInterval is how long a stream may stay silent before it
	// sends a keepalive (default: the package's KeepaliveInterval).
	KeepaliveInterval time.Duration
}

// Server is the http.Handler of a controller node.
type Server struct {
	cfg     Config
	b       Backend
	log     *slog.Logger
	router  chi.Router
	metrics *metrics
	charms  *charmCache
	agents  *agentgw.Gateway
	logs    *logBook
	// marks remembers the last log entries' marks: every watch and the
	// hub's stream name the same indexes, one frame each.
	marks markCache
	// epoch names this server's lifetime in status ETags (status.NewEpoch).
	epoch   string
	closing chan struct{}
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
	if cfg.MaxCharmSize == 0 {
		cfg.MaxCharmSize = 256 << 20
	}
	s := &Server{cfg: cfg, b: cfg.Backend, log: cfg.Logger, charms: newCharmCache(256),
		logs: newLogBook(DefaultLogLines, cfg.LogDir, cfg.Logger), epoch: status.NewEpoch(),
		closing: make(chan struct{})}
	var err error
	s.agents, err = agentgw.New(agentgw.Config{Proposer: cfg.Backend, Logger: cfg.Logger, Now: cfg.Now,
		KeepaliveInterval: s.keepaliveInterval(), CharmDefaults: s.charmDefaults, AppendLog: s.logs.append})
	if err != nil {
		return nil, err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	s.metrics = newMetrics(reg, cfg.Backend)
	s.router = s.routes(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
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
	s.logs.close()
}

// RunAgentHub feeds the agent connections until ctx ends: a node worker
// the spoke supervises.
func (s *Server) RunAgentHub(ctx context.Context) error { return s.agents.Run(ctx) }

// AgentConnections returns the number of agent connections on this node.
func (s *Server) AgentConnections() int { return s.agents.Connections() }

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.router.ServeHTTP(w, r) }

func (s *Server) routes(metricsHandler http.Handler) chi.Router {
	r := chi.NewRouter()
	r.Use(s.instrument)
	r.Get("/healthz", s.healthz)
	r.Get("/readyz", s.readyz)
	r.Handle("/metrics", metricsHandler)

	r.Route("/v1/internal", func(r chi.Router) {
		r.Get("/ca", s.getCA)
		r.Get("/identity", s.getIdentity)
		r.Post("/admit", s.admit)
		r.Post("/hub-trust", s.trustHub) // authenticated by the hub token in the body
		r.Group(func(r chi.Router) {
			r.Use(requireNodeCert)
			r.Post("/raft/apply", s.internalApply)
			r.Post("/raft/read-index", s.internalReadIndex)
			r.Post("/add-voter", s.internalAddVoter)
			r.Get("/blobs/{sha}", s.internalGetBlob)
			r.Put("/blobs/{sha}", s.internalPutBlob)
		})
	})

	r.Route("/v1", func(r chi.Router) {
		// Agents authenticate with machine credentials, not as users.
		r.Get("/agent/stream", s.agents.ServeStream)
		r.Get("/agent/charms/{sha}", s.agentDownloadCharm)
		r.Group(func(r chi.Router) { s.userRoutes(r) })
	})
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		reply.WriteError(w, r, api.Errorf(api.CodeNotFound, "no route for %s %s", r.Method, r.URL.Path))
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		reply.WriteError(w, r, &api.Error{Code: api.CodeBadRequest, Message: "method " + r.Method + " not allowed on " + r.URL.Path, Status: http.StatusMethodNotAllowed})
	})
	return r
}

// userRoutes are the /v1 routes of users (clients, the dashboard, the hub).
func (s *Server) userRoutes(r chi.Router) {
	r.Use(s.authenticate)
	r.Get("/whoami", s.whoami)
	r.With(requireSuperuser).Get("/events", s.events)
	r.Get("/controller", s.getController)
	r.With(requireSuperuser).Put("/controller/placement", s.setPlacement)
	r.With(requireLocalSuperuser).Post("/controller/enable-ha", s.enableHA)
	r.With(requireLocalSuperuser).Post("/controller/join-tokens", s.createJoinToken)
	r.With(requireLocalSuperuser).Post("/controller/hub-tokens", s.createHubToken)
	r.With(requireSuperuser).Get("/controller/hub", s.getHubTrust)
	r.With(requireLocalSuperuser).Delete("/controller/hub", s.removeHubTrust)
	r.Group(func(r chi.Router) {
		r.Use(requireSuperuser)
		r.Mount("/debug/pprof", pprofRouter())
	})

	r.Get("/charms", s.listCharms)
	r.Post("/charms", s.uploadCharm)
	r.Get("/charms/{sha}", s.getCharm)
	r.Get("/charms/{sha}/archive", s.downloadCharm)

	r.Get("/models", s.listModels)
	r.Post("/models", s.addModel)
	r.Route("/models/{model}", func(r chi.Router) {
		r.Use(s.modelCtx)
		r.Get("/", s.getModel)
		r.Delete("/", s.destroyModel)
		r.Get("/config", s.getModelConfig)
		r.Patch("/config", s.setModelConfig)
		r.Get("/status", s.getStatus)
		r.Get("/watch", s.watch)
		r.Post("/charms", s.uploadCharm)   // the hub forwards model-scoped uploads here
		r.Get("/charms/{sha}", s.getCharm) // and reads, for its model-scoped tokens
		r.Get("/status-history", s.statusHistory)

		r.Get("/applications", s.listApplications)
		r.Post("/applications", s.deploy)
		r.Get("/applications/{app}", s.getApplication)
		r.Delete("/applications/{app}", s.removeApplication)
		r.Get("/applications/{app}/config", s.getApplicationConfig)
		r.Patch("/applications/{app}/config", s.setApplicationConfig)
		r.Post("/applications/{app}/units", s.addUnits)
		r.Post("/applications/{app}/scale", s.scale)
		r.Post("/applications/{app}/expose", s.expose)
		r.Post("/applications/{app}/charm", s.setCharm)
		r.Post("/applications/{app}/constraints", s.setConstraints)
		r.Post("/applications/{app}/trust", s.setTrust)

		r.Get("/units", s.listUnits)
		r.Get("/units/{app}/{n}", s.getUnit)
		r.Delete("/units/{app}/{n}", s.removeUnit)
		r.Post("/units/{app}/{n}/resolved", s.resolved)
		r.Get("/units/{app}/{n}/relation-info", s.unitRelationInfo)

		r.Get("/machines", s.listMachines)
		r.Post("/machines", s.addMachines)
		r.Get("/machines/{id}", s.getMachine)
		r.Delete("/machines/{id}", s.removeMachine)

		r.Get("/relations", s.listRelations)
		r.Post("/relations", s.integrate)
		r.Delete("/relations/{id}", s.removeRelation)

		r.Post("/actions", s.runAction)
		r.Get("/tasks", s.listTasks)
		r.Get("/tasks/{id}", s.getTask)
		r.Post("/tasks/{id}/cancel", s.cancelTask)
		r.Get("/logs", s.getLogs)
	})
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
	r := chi.NewRouter()
	(&Server{}).userRoutes(r)
	var out []Route
	_ = chi.Walk(r, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		if strings.HasPrefix(route, "/models/{model}/") {
			out = append(out, Route{Method: method, Pattern: "/v1" + strings.TrimSuffix(route, "/")})
		}
		return nil
	})
	return out
}
