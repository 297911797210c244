package hub

import (
	"cmp"
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
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/sync/errgroup"

	"github.com/droverhq/drover/authz"
	"github.com/droverhq/drover/hub/internal/authn"
	"github.com/droverhq/drover/hub/internal/gate"
	"github.com/droverhq/drover/hub/internal/indexer"
	"github.com/droverhq/drover/hub/internal/migrate"
	"github.com/droverhq/drover/hub/internal/outbox"
	"github.com/droverhq/drover/hub/internal/proxy"
	"github.com/droverhq/drover/hub/internal/reply"
	"github.com/droverhq/drover/hub/internal/store"
	"github.com/droverhq/drover/hub/internal/token"
	"github.com/droverhq/drover/hub/internal/ttlcache"
	"github.com/droverhq/drover/internal/corkconn"
)

// Server is a hub replica. Build it with New, serve with Run.
type Server struct {
	cfg    Config
	store  *store.Store
	authz  *authz.Client
	keys   *token.Keys
	authn  *authn.Service
	outbox *outbox.Worker
	// restoring is set while OpenFGA is given back the tuples it lost
	// (restore.go), since restoreStart.
	restoring    atomic.Bool
	restoreStart time.Time
	// gate answers and caches authorization decisions; they are dropped
	// whenever the outbox writes a tuple (authzsync.go).
	gate *gate.Gate
	// modelJSON keeps listed models' JSON by row version (listcache.go).
	modelJSON *modelJSONCache
	// routeModels, routeCtrls and spokeTokens cache the per-request work
	// of proxying (fastpath.go).
	routeModels *ttlcache.Cache[string, store.Model]
	routeCtrls  *ttlcache.Cache[string, store.Controller]
	spokeTokens *ttlcache.Cache[spokeTokenKey, string]
	// proxy relays model calls to their controllers (proxy.go decides).
	proxy *proxy.Relay
	// claimRenewals counts add-model claims renewed (placement.go).
	claimRenewals atomic.Int64
	// cachesDropped counts the times this replica dropped every cache
	// resting on permissions, and sessionsEnded the ended sessions it
	// dropped only the entries of (authzsync.go).
	cachesDropped, sessionsEnded atomic.Int64

	router  chi.Router
	api     chi.Router // /v1, authenticated and audited
	reg     *prometheus.Registry
	reqs    *requestCounters
	outages *outageCounters
	spokes  *proxy.Clients
	indexer *indexer.Indexer
	// migrations drives model migrations (hub/internal/migrate).
	migrations *migrate.Driver
	// fed serves the federation stream (federation.go); fedSlow counts
	// its streams ended for a client that did not keep up.
	fed     *federation
	fedSlow atomic.Int64
}

// New connects to PostgreSQL (migrating it), OpenFGA and the OIDC issuer,
// and builds the routes. Close releases what New opened.
func New(ctx context.Context, cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, reg: prometheus.NewRegistry()}
	var err error
	if s.store, err = store.Open(ctx, cfg.DSN, store.WithStatementTimeout(cfg.DatabaseTimeout)); err != nil {
		return nil, err
	}
	fail := func(err error) (*Server, error) { s.store.Close(); return nil, err }
	s.fed = newFederation(s)
	if s.authz, err = authz.New(ctx, cfg.OpenFGAURL, cfg.OpenFGAStore, authz.WithRequestTimeout(cfg.OpenFGATimeout)); err != nil {
		return fail(err)
	}
	if s.keys, err = token.New(ctx, token.Config{Store: s.store, Issuer: cfg.PublicURL, KeepFor: cfg.RefreshTTL,
		Seal: cfg.keyRing, Logger: cfg.Logger, Now: cfg.Now}); err != nil {
		return fail(err)
	}
	if s.gate, err = gate.New(gate.Config{Authz: s.authz, Store: s.store, TTL: decisionTTL, Logger: cfg.Logger, Now: cfg.Now,
		Kick: func() { s.outbox.Kick() }, Changed: s.dropAuthzCaches, KeysChanged: s.reloadKeys, SessionEnded: s.endSession}); err != nil {
		return fail(err)
	}
	if s.authn, err = authn.New(ctx, authn.Config{Store: s.store, Keys: s.keys,
		OIDCIssuer: cfg.OIDCIssuer, OIDCClientID: cfg.OIDCClientID, OIDCClientSecret: cfg.OIDCClientSecret, OIDCHTTPClient: cfg.OIDCHTTPClient,
		PublicURL: cfg.PublicURL, DefaultOrg: cfg.DefaultOrg, Admins: cfg.Admins, SessionTTL: cfg.SessionTTL, RefreshTTL: cfg.RefreshTTL,
		TrustedProxies: cfg.TrustedProxies, PrincipalTTL: decisionTTL, Logger: cfg.Logger, Now: cfg.Now,
		WriteError: s.writeError, Unavailable: func(err error) bool { _, _, ok := unavailability(err); return ok },
		Audit: s.appendAudit, AwaitAuthz: s.gate.AwaitAuthz}); err != nil {
		return fail(err)
	}
	s.modelJSON = newModelJSONCache(modelJSONLimit)
	s.routeModels = ttlcache.New[string, store.Model](cfg.Now, decisionTTL)
	s.routeCtrls = ttlcache.New[string, store.Controller](cfg.Now, decisionTTL)
	s.spokeTokens = ttlcache.New[spokeTokenKey, string](cfg.Now, spokeTokenReuse)
	s.spokes = proxy.NewClients(proxy.Timeouts{Head: cfg.answerHeadTimeout, Uncancelable: proxy.DefaultTimeouts.Uncancelable})
	if s.proxy, err = proxy.New(proxy.Config{Logger: cfg.Logger, Now: cfg.Now,
		StatusCacheBytes: bound(cfg.StatusCacheBytes, defaultStatusCacheBytes), MaxLiveCalls: cfg.MaxLiveCalls, RouteTTL: decisionTTL, IdleTimeout: cfg.IdleTimeout,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { s.router.ServeHTTP(w, r) }),
		Count:   func(route string, status int) { s.reqs.inc(route, status) },
		Enabled: s.store.Identities.Enabled, Check: s.gate.Check, SessionsLive: s.store.Sessions.LiveOf}); err != nil {
		return fail(err)
	}
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
	if s.indexer, err = indexer.New(indexer.Config{Store: s.store, Logger: cfg.Logger, Now: cfg.Now, DefaultOrg: cfg.DefaultOrg,
		ResyncEvery: cmp.Or(max(cfg.IndexResyncEvery, 0), defaultIndexResync),
		MaxModels:   bound(cfg.MaxControllerModels, defaultMaxControllerModels),
		WriteRate:   bound(cfg.IndexWriteRate, defaultIndexWriteRate),
		Poll:        5 * time.Second, MaxEventFrame: cfg.maxEventFrame,
		Kick: func() { s.outbox.Kick() }, Subscribe: s.subscribeEvents}); err != nil {
		return fail(err)
	}
	if s.migrations, err = s.newMigrationDriver(); err != nil {
		return fail(err)
	}
	s.reg.MustRegister(s.collectors()...)
	if err := s.routes(); err != nil {
		return fail(err)
	}
	return s, nil
}

// Close releases the database pool.
func (s *Server) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s.proxy.Close(ctx)
	s.store.Close()
}

// HandbackListener accepts the connections the proxy took to serve
// remembered reads and hands back to net/http (Run serves it).
func (s *Server) HandbackListener() net.Listener { return s.proxy.HandbackListener() }

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
// router whose handlers can call authn.PrincipalFrom(r.Context()) and s.Check. It
// must be called before Run. This is the seam for the federation work
// (controllers registration, model proxying, watches).
func (s *Server) Mount(fn func(r chi.Router)) { fn(s.api) }

// Check reports whether the caller has relation on object. Code mounted
// with Mount uses it for its own routes.
func (s *Server) Check(ctx context.Context, p authn.Principal, rel authz.Relation, object string) (bool, error) {
	return s.gate.Check(ctx, p, rel, object)
}

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
	g.Go(func() error { return ignoreCanceled(s.migrations.Run(gctx)) })
	g.Go(func() error { return ignoreCanceled(s.fed.Run(gctx)) })
	g.Go(func() error {
		<-gctx.Done()
		sctx, cancel := context.WithTimeout(context.WithoutCancel(gctx), 10*time.Second)
		defer cancel()
		err := srv.Shutdown(sctx)
		s.proxy.Shutdown(sctx)
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
	return &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: idle, ConnContext: proxy.ConnContext,
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

// removalsKept and removalsKeptRows bound the index removals the hub
// keeps for federation streams resuming after them (fedstream.go): a
// stream away longer, or behind more removals, gets a reset.
const (
	removalsKept     = 24 * time.Hour
	removalsKeptRows = 100_000
)

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
		if _, err := s.store.PruneRemovals(mctx, now.Add(-removalsKept), removalsKeptRows); err != nil {
			s.cfg.Logger.Warn("index removal pruning failed", "err", err)
		}
		if _, err := s.store.Sessions.PruneWebLogins(mctx, now); err != nil {
			s.cfg.Logger.Warn("pending web login pruning failed", "err", err)
		}
		// A bucket untouched this long is full again.
		if err := s.store.Throttle.Prune(mctx, now.Add(-authn.ThrottleKept)); err != nil {
			s.cfg.Logger.Warn("login throttle pruning failed", "err", err)
		}
		cancel()
		if err := s.keys.Refresh(ctx); err != nil {
			s.cfg.Logger.Warn("signing key refresh failed", "err", err)
		}
		s.spokes.CloseIdle(time.Now())
		s.authn.Prune()

		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

func (s *Server) handleReady(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 3*time.Second)
	defer cancel()
	if err := s.store.Ping(ctx); err != nil {
		reply.JSON(w, http.StatusServiceUnavailable, map[string]string{"status": "postgres unavailable"})
		return
	}
	if _, err := s.authz.Check(ctx, authz.UserObject("readyz"), authz.AuditViewer, authz.HubObject()); err != nil {
		reply.JSON(w, http.StatusServiceUnavailable, map[string]string{"status": "openfga unavailable"})
		return
	}
	if s.restoring.Load() {
		reply.JSON(w, http.StatusServiceUnavailable, map[string]string{"status": "restoring permissions"})
		return
	}
	reply.JSON(w, http.StatusOK, map[string]string{"status": "ready"})
}

func (s *Server) metrics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &proxy.Recorder{ResponseWriter: w}
		next.ServeHTTP(rec, r)
		route := chi.RouteContext(r.Context()).RoutePattern()
		if route == "" {
			route = "unmatched"
		}
		s.reqs.inc(route, rec.Status)
	})
}
