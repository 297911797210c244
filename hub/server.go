package hub

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"runtime/pprof"
	"sync/atomic"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/sync/errgroup"

	"github.com/droverhq/drover/authz"
	"github.com/droverhq/drover/hub/internal/outbox"
	"github.com/droverhq/drover/hub/internal/store"
	"github.com/droverhq/drover/hub/internal/token"
	"github.com/droverhq/drover/internal/corkconn"
)

// Server is a hub replica. Build it with New, serve with Run.
type Server struct {
	cfg    Config
	store  *store.Store
	authz  *authz.Client
	keys   *token.Keys
	oidc   *oidcClient
	outbox *outbox.Worker
	// restoring is set while OpenFGA is given back the tuples it lost
	// (restore.go), since restoreStart.
	restoring    atomic.Bool
	restoreStart time.Time
	// decisions caches Check and ListObjects answers briefly
	// (decisions.go); cleared whenever the outbox writes a tuple.
	decisions *ttlCache[decisionKey, bool]
	listings  *ttlCache[decisionKey, []string]
	// modelJSON keeps listed models' JSON by row version (listcache.go).
	modelJSON *modelJSONCache
	// principals, routeModels, routeCtrls and spokeTokens cache the
	// per-request work of authentication and proxying (fastpath.go).
	principals  *ttlCache[principalCacheKey, Principal]
	routeModels *ttlCache[string, store.Model]
	routeCtrls  *ttlCache[string, store.Controller]
	spokeTokens *ttlCache[spokeTokenKey, string]
	proxyRoutes *ttlCache[proxyRouteKey, proxyRoute]
	// statuses keeps models' statuses to revalidate (statuscache.go); nil
	// when Config.StatusCacheBytes is negative.
	statuses  *statusCache
	live      *liveCalls // long-lived proxied calls, ended when their access goes (live.go)
	handback  *handback  // taken connections back to net/http (takeover.go)
	taken     takenConns // connections the hub serves itself
	takeovers atomic.Int64
	handbacks atomic.Int64
	// claimRenewals counts add-model claims renewed (placement.go).
	claimRenewals atomic.Int64
	// failedLogins and loginStarts throttle logins per client address,
	// throttledLogins counts the refusals (throttle.go).
	failedLogins, loginStarts *throttle
	throttledLogins           atomic.Int64

	router  chi.Router
	api     chi.Router // /v1, authenticated and audited
	reg     *prometheus.Registry
	reqs    *requestCounters
	outages *outageCounters
	spokes  spokeSet
	indexer *indexer
}

// New connects to PostgreSQL (migrating it), OpenFGA and the OIDC issuer,
// and builds the routes. Close releases what New opened.
func New(ctx context.Context, cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, reg: prometheus.NewRegistry(), handback: newHandback()}
	var err error
	if s.store, err = store.Open(ctx, cfg.DSN, store.WithStatementTimeout(cfg.DatabaseTimeout)); err != nil {
		return nil, err
	}
	fail := func(err error) (*Server, error) { s.store.Close(); return nil, err }
	if s.authz, err = authz.New(ctx, cfg.OpenFGAURL, cfg.OpenFGAStore, authz.WithRequestTimeout(cfg.OpenFGATimeout)); err != nil {
		return fail(err)
	}
	if s.keys, err = token.New(ctx, token.Config{Store: s.store, Issuer: cfg.PublicURL, KeepFor: cfg.RefreshTTL,
		Seal: cfg.keyRing, Logger: cfg.Logger, Now: cfg.Now}); err != nil {
		return fail(err)
	}
	if s.oidc, err = newOIDC(ctx, &cfg); err != nil {
		// Sessions already issued, their renewal and the API need no
		// issuer: the hub serves them, and logins find it once it answers.
		cfg.Logger.Error("the OIDC issuer did not answer; logins fail until it does", "err", err)
	}
	s.decisions = newTTLCache[decisionKey, bool](cfg.Now, decisionTTL)
	s.listings = newTTLCache[decisionKey, []string](cfg.Now, decisionTTL)
	s.modelJSON = newModelJSONCache(modelJSONLimit)
	s.principals = newTTLCache[principalCacheKey, Principal](cfg.Now, decisionTTL)
	s.routeModels = newTTLCache[string, store.Model](cfg.Now, decisionTTL)
	s.routeCtrls = newTTLCache[string, store.Controller](cfg.Now, decisionTTL)
	s.spokeTokens = newTTLCache[spokeTokenKey, string](cfg.Now, spokeTokenReuse)
	s.proxyRoutes = newTTLCache[proxyRouteKey, proxyRoute](cfg.Now, decisionTTL)
	s.live = newLiveCalls(cfg.MaxLiveCalls)
	if n := bound(cfg.StatusCacheBytes, defaultStatusCacheBytes); n > 0 {
		s.statuses = newStatusCache(n)
	}
	s.failedLogins, s.loginStarts = newThrottle("failed-logins", loginFailures, cfg.Now, s.store.Throttle), newThrottle("login-starts", loginStarts, cfg.Now, s.store.Throttle)
	if s.outbox, err = outbox.New(outbox.Config{Store: s.store, Authz: s.authz, Logger: cfg.Logger.With("worker", "authz-outbox"),
		Now: cfg.Now, ReconcileEvery: 10 * time.Minute, Changed: s.dropAuthzCaches, Restored: s.restored}); err != nil {
		return fail(err)
	}
	if err := s.checkRestore(ctx); err != nil {
		return fail(err)
	}
	for _, sa := range cfg.ServiceAccounts {
		if err := s.store.ServiceAccounts.Upsert(ctx, sa); err != nil {
			return fail(err)
		}
	}
	s.reqs = newRequestCounters()
	s.outages = newOutageCounters()
	s.reg.MustRegister(s.reqs.vec, s.outages.unavailable, s.outages.unfinished, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "drover_hub_logins_throttled_total",
			Help: "Logins refused 429 because their client address had too many failed logins, or started too many."},
			func() float64 { return float64(s.throttledLogins.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "drover_hub_taken_connections_total",
			Help: "Connections the hub took from net/http to serve remembered reads itself."},
			func() float64 { return float64(s.takeovers.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "drover_hub_handed_back_connections_total",
			Help: "Taken connections handed back to net/http for a request that was not a remembered read."},
			func() float64 { return float64(s.handbacks.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "drover_hub_status_revalidated_total",
			Help: "Model status reads answered with the hub's copy after the controller said it had not changed (304)."},
			func() float64 {
				return float64(s.statuses.counter(func(c *statusCache) int64 { return c.revalidated.Load() }))
			}),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "drover_hub_status_kept_total",
			Help: "Model status answers the hub kept a copy of, to revalidate on the next read."},
			func() float64 {
				return float64(s.statuses.counter(func(c *statusCache) int64 { return c.kept.Load() }))
			}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "drover_hub_status_kept_bytes",
			Help: "Bytes of model status the hub keeps (--status-cache-size)."},
			func() float64 { return float64(s.statuses.counter((*statusCache).bytes)) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "drover_hub_listed_models_cached_total",
			Help: "Models in GET /v1/models answers whose JSON was kept from an earlier listing (the row unchanged)."},
			func() float64 { return float64(s.modelJSON.hits.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "drover_hub_authz_tuples_delivered_total",
			Help: "Outbox entries this replica delivered to OpenFGA."},
			func() float64 { return float64(s.outbox.Stats().Delivered.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "drover_hub_authz_delivery_failures_total",
			Help: "Outbox deliveries OpenFGA refused or did not answer (retried)."},
			func() float64 { return float64(s.outbox.Stats().Failed.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "drover_hub_authz_drift_repaired_total",
			Help: "Tuples the reconciler found OpenFGA lacking or holding in excess, and queued to repair."},
			func() float64 { return float64(s.outbox.Stats().Repaired.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "drover_hub_index_writes_slowed_total",
			Help: "Index writes of a controller's events that waited for its write rate (--index-write-rate)."},
			func() float64 { return float64(s.indexer.slowed.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "drover_hub_models_not_adopted_total",
			Help: "Models a controller listed that the index did not adopt: the controller held as many as the hub indexes for one (--max-controller-models)."},
			func() float64 { return float64(s.indexer.unadopted.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "drover_hub_index_resyncs_total",
			Help: "Controllers' resets (every model, whole) the indexer applied: on subscribing anew, and every hour."},
			func() float64 { return float64(s.indexer.resyncs.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "drover_hub_index_drift_repaired_total",
			Help: "Models whose index row a controller's reset found wrong at the index the hub had reached, and repaired."},
			func() float64 { return float64(s.indexer.drifted.Load()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "drover_hub_indexer_leader",
			Help: "1 while this replica runs the model indexer (holds its PostgreSQL advisory lock), else 0."},
			func() float64 {
				if s.indexer.leading.Load() {
					return 1
				}
				return 0
			}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "drover_hub_authz_outbox_undelivered",
			Help: "Outbox entries not yet in OpenFGA: how far permissions lag the database (-1: the database did not answer)."},
			func() float64 {
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				defer cancel()
				n, err := s.store.Outbox.Undelivered(ctx)
				if err != nil {
					return -1
				}
				return float64(n)
			}),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "drover_hub_listed_models_read_total",
			Help: "Models in GET /v1/models answers read whole from PostgreSQL (new or changed since they were last listed)."},
			func() float64 { return float64(s.modelJSON.misses.Load()) }))
	s.indexer = newIndexer(s)
	s.routes()
	return s, nil
}

// Close releases the database pool.
func (s *Server) Close() {
	s.handback.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s.taken.shutdown(ctx)
	s.store.Close()
}

// Handler is the hub's HTTP handler (for tests and embedding).
func (s *Server) Handler() http.Handler { return s }

// Routes lists the hub's authenticated API ("METHOD /v1/..."), for its
// authorization tests to check they leave none out.
func (s *Server) Routes() []string {
	var out []string
	_ = chi.Walk(s.router, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		out = append(out, method+" "+route)
		return nil
	})
	return out
}

// Mount adds routes under the authenticated, audited /v1 API. fn receives a
// router whose handlers can call Principal(r.Context()) and s.Check. It
// must be called before Run. This is the seam for the federation work
// (controllers registration, model proxying, watches).
func (s *Server) Mount(fn func(r chi.Router)) { fn(s.api) }

// Store, Authz and Keys expose the hub's dependencies to code mounted with
// Mount (federation signs spoke JWTs with Keys).
func (s *Server) Store() *store.Store    { return s.store }
func (s *Server) Authz() *authz.Client   { return s.authz }
func (s *Server) Keys() *token.Keys      { return s.keys }
func (s *Server) Outbox() *outbox.Worker { return s.outbox }

// Run serves HTTPS and runs the hub's workers until ctx ends, then shuts
// down in order: stop accepting, drain requests, stop workers.
func (s *Server) Run(ctx context.Context) error {
	cert, err := loadTLS(&s.cfg)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", s.cfg.Listen)
	if err != nil {
		return fmt.Errorf("hub: listen: %w", err)
	}
	ln = corkconn.Listener{Listener: ln}
	srv := newHTTPServer(s, cert, s.cfg.IdleTimeout)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) {
		// Connection goroutines inherit the label: CPU profiles of a
		// process running several servers (tests, benchmarks) tell them apart.
		pprof.Do(gctx, pprof.Labels("server", "hub"), func(context.Context) {
			err = srv.ServeTLS(ln, "", "")
		})
		if !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	})
	g.Go(func() (err error) {
		pprof.Do(gctx, pprof.Labels("server", "hub"), func(context.Context) {
			err = srv.Serve(s.HandbackListener())
		})
		if !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	})
	if s.cfg.MetricsListen != "" {
		mln, err := net.Listen("tcp", s.cfg.MetricsListen)
		if err != nil {
			return fmt.Errorf("hub: metrics listen: %w", err)
		}
		msrv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/metrics" {
				http.NotFound(w, r)
				return
			}
			s.metricsHandler().ServeHTTP(w, r)
		}), ReadHeaderTimeout: 10 * time.Second}
		g.Go(func() error {
			if err := msrv.Serve(mln); !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			return nil
		})
		g.Go(func() error {
			<-gctx.Done()
			return msrv.Close()
		})
		s.cfg.Logger.Info("hub metrics", "addr", mln.Addr().String())
	}
	g.Go(func() error { return ignoreCanceled(s.outbox.Run(gctx)) })
	g.Go(func() error { return ignoreCanceled(s.followAuthz(gctx)) })
	g.Go(func() error { return ignoreCanceled(s.janitor(gctx)) })
	g.Go(func() error { return ignoreCanceled(s.indexer.Run(gctx)) })
	g.Go(func() error {
		<-gctx.Done()
		sctx, cancel := context.WithTimeout(context.WithoutCancel(gctx), 10*time.Second)
		defer cancel()
		err := srv.Shutdown(sctx)
		s.taken.shutdown(sctx)
		return err
	})
	s.cfg.Logger.Info("hub serving", "url", s.cfg.PublicURL, "addr", ln.Addr().String())
	if s.cfg.Ready != nil {
		close(s.cfg.Ready)
	}
	return g.Wait()
}

// metricsHandler serves the hub's Prometheus metrics.
func (s *Server) metricsHandler() http.Handler {
	return promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{})
}

// newHTTPServer is the hub's HTTPS server for h. It serves two listeners
// (Run): its own, under TLS, and the handback of taken connections. Both
// Serve calls set HTTP/2 up once, whichever comes first, and Serve on a
// listener does so only when the TLS config names "h2": so it does, or
// HTTP/2 would be left unset while TLS still offers it, and an HTTP/2
// client's connection would be dropped.
func newHTTPServer(h http.Handler, cert tls.Certificate, idle time.Duration) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: idle, ConnContext: connContext,
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12,
			NextProtos: []string{"h2", "http/1.1"}}}
}

func ignoreCanceled(err error) error {
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// usedRefreshKept is how long a refresh token a session was renewed with
// is known again (reuse detection): a client away longer than that (a
// laptop closed for over a week) whose token a thief renewed meanwhile is
// only refused, not the cause of ending the session. Kept bounded: an
// active person renews every 15 minutes.
const usedRefreshKept = 7 * 24 * time.Hour

// forgottenKept is how long the hub keeps what it knew of the models it
// forgot with their controller (remove-controller --force), to restore
// them should the controller be registered again.
const forgottenKept = 90 * 24 * time.Hour

// janitor applies the retention settings, refreshes signing keys and
// closes the proxy's idle controller connections, every minute.
func (s *Server) janitor(ctx context.Context) error {
	t := time.NewTicker(time.Minute)
	defer t.Stop()
	for {
		now := s.cfg.Now()
		// Deleting a large backlog of old rows may outlast the store's
		// StatementTimeout; a round gets ten minutes.
		mctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
		if s.cfg.AuditRetention > 0 {
			if n, err := s.store.Audit.DeleteBefore(mctx, now.Add(-s.cfg.AuditRetention)); err != nil {
				s.cfg.Logger.Warn("audit retention failed", "err", err)
			} else if n > 0 {
				s.cfg.Logger.Info("audit retention", "deleted", n)
			}
		}
		if err := s.store.Sessions.Prune(mctx, now.Add(-24*time.Hour)); err != nil {
			s.cfg.Logger.Warn("session pruning failed", "err", err)
		}
		if _, err := s.store.Sessions.PruneUsedRefreshTokens(mctx, now.Add(-usedRefreshKept)); err != nil {
			s.cfg.Logger.Warn("used refresh token pruning failed", "err", err)
		}
		if _, err := s.store.Outbox.Prune(mctx, now.Add(-24*time.Hour)); err != nil {
			s.cfg.Logger.Warn("outbox pruning failed", "err", err)
		}
		if _, err := s.store.Models.PruneForgotten(mctx, now.Add(-forgottenKept)); err != nil {
			s.cfg.Logger.Warn("forgotten model pruning failed", "err", err)
		}
		// A bucket untouched this long is full again.
		if err := s.store.Throttle.Prune(mctx, now.Add(-throttleKept)); err != nil {
			s.cfg.Logger.Warn("login throttle pruning failed", "err", err)
		}
		cancel()
		if err := s.keys.Refresh(ctx); err != nil {
			s.cfg.Logger.Warn("signing key refresh failed", "err", err)
		}
		s.spokes.closeIdle(time.Now())
		s.failedLogins.prune()
		s.loginStarts.prune()

		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

func (s *Server) routes() {
	r := chi.NewRouter()
	r.Use(s.metrics)
	r.Get("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	r.Get("/readyz", s.handleReady)
	if s.cfg.MetricsListen == "" {
		r.Handle("/metrics", s.metricsHandler())
	}
	r.Get("/.well-known/jwks.json", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, http.StatusOK, s.keys.JWKS()) })
	r.Get("/auth/login", s.handleWebLogin)
	r.Get("/auth/callback", s.handleWebCallback)
	r.Post("/auth/refresh", s.handleWebRefresh)
	r.Post("/auth/logout", s.handleWebLogout)
	r.Post("/v1/auth/device", s.handleDeviceStart)
	r.Post("/v1/auth/device/token", s.handleDeviceToken)
	r.Post("/v1/auth/token", s.handleToken)
	r.Route("/v1", func(api chi.Router) {
		api.Use(s.whileRestoring, s.authenticate, s.audit)
		api.Get("/whoami", s.handleWhoami)
		api.Get("/hub", s.handleHubInfo)
		api.Get("/hub/signing-keys", s.handleListSigningKeys)
		api.Post("/hub/signing-keys", s.handleRotateSigningKey)
		api.Post("/auth/logout", s.handleLogout)
		api.Get("/organizations", s.handleListOrgs)
		api.Get("/users", s.handleListUsers)
		api.Get("/users/{user}", s.handleGetUser)
		api.Post("/users/{user}/disable", s.handleDisableUser)
		api.Post("/users/{user}/enable", s.handleEnableUser)
		api.Delete("/users/{user}", s.handleRemoveUser)
		api.Get("/controllers", s.handleListControllers)
		api.Get("/controllers/{name}", s.handleGetController)
		api.Get("/models", s.handleListModels)
		api.Get("/models/{uuid}", s.handleGetModel)
		api.Post("/grants", s.handleGrant)
		api.Delete("/grants", s.handleRevoke)
		api.Get("/groups", s.handleListGroups)
		api.Post("/groups", s.handleCreateGroup)
		api.Get("/groups/{group}", s.handleGetGroup)
		api.Delete("/groups/{group}", s.handleRemoveGroup)
		api.Patch("/groups/{group}", s.handleRenameGroup)
		api.Post("/groups/{group}/members", s.handleAddMember)
		api.Delete("/groups/{group}/members/{member}", s.handleRemoveMember)
		api.Get("/audit", s.handleAudit)
		api.Post("/controllers", s.handleAddController)
		api.Delete("/controllers/{name}", s.handleRemoveController)
		api.Patch("/controllers/{name}", s.handleSetControllerDeprecated)
		api.Post("/models", s.handleAddModel)
		api.Delete("/models/{uuid}", s.handleModelProxy)
		api.Patch("/models/{uuid}", s.handleSetModelOwner)
		api.HandleFunc("/models/{uuid}/*", s.handleModelProxy)
		s.api = api
	})
	s.router = r
}

func (s *Server) handleReady(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 3*time.Second)
	defer cancel()
	if err := s.store.Ping(ctx); err != nil {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "postgres unavailable"})
		return
	}
	if _, err := s.authz.Check(ctx, authz.UserObject("readyz"), authz.AuditViewer, authz.HubObject()); err != nil {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "openfga unavailable"})
		return
	}
	if s.restoring.Load() {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "restoring permissions"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController (the reverse proxy's websocket
// hijack and flushes) reach the connection.
func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

func (s *Server) metrics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w}
		next.ServeHTTP(rec, r)
		route := chi.RouteContext(r.Context()).RoutePattern()
		if route == "" {
			route = "unmatched"
		}
		s.reqs.inc(route, rec.status)
	})
}
