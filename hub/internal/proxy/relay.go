// Package proxy relays the hub's model calls to the controllers that own
// the models, and keeps what makes that cheap: one client per controller
// (client.go) with the proxy's own HTTP/1.1 connections (fastproxy.go,
// fasthead.go), the routes of reads it may serve again without asking the
// hub (remember.go), connections it takes from net/http to serve such
// reads itself (takeover.go, handback.go), revalidated copies of models'
// statuses (statuscache.go, statusstamps.go), and the long-lived calls it
// ends when their access goes (live.go).
//
// The proxy decides nothing: the hub authorizes a call, then hands it to
// Forward with its Route, and may Remember the route for the caller's next
// reads; Forget drops every remembered route the moment a permission
// changes, and EndSession those of one session the moment it ends. Answers relayed are sanitized (answersafe.go): a controller
// cannot set the hub's cookies or have its answers sniffed.
package proxy

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/droverhq/drover/authz"
	"github.com/droverhq/drover/hub/internal/authn"
	"github.com/droverhq/drover/hub/internal/ttlcache"
)

// Config is what the proxy needs.
type Config struct {
	Logger *slog.Logger
	Now    func() time.Time
	// StatusCacheBytes bounds the model statuses kept to revalidate (0:
	// none kept, every status relayed as it comes).
	StatusCacheBytes int64
	// MaxLiveCalls bounds the long-lived calls one identity holds open
	// (negative: no bound).
	MaxLiveCalls int
	// RouteTTL bounds how long a remembered read route is used.
	RouteTTL time.Duration
	// IdleTimeout closes a taken connection left idle this long (the
	// hub's keep-alive bound).
	IdleTimeout time.Duration
	// Handler serves what the proxy does not (the hub's router).
	Handler http.Handler
	// Count counts a request served under route with status (the hub's
	// request counters).
	Count func(route string, status int)
	// Enabled reports which of the identities ids are enabled, and Check
	// whether p holds rel on object: the long-lived calls are checked
	// again with them after each permission change.
	Enabled func(ctx context.Context, ids []string) (map[string]bool, error)
	Check   func(ctx context.Context, p authn.Principal, rel authz.Relation, object string) (bool, error)
	// SessionsLive reports which of the sessions ids go on (not logged
	// out): a long-lived call opened with a session's token ends with it.
	SessionsLive func(ctx context.Context, ids []string) (map[string]bool, error)
}

// Relay is the hub's proxy to its controllers.
type Relay struct {
	cfg Config
	// proxyRoutes are the remembered read routes (remember.go).
	proxyRoutes *ttlcache.Cache[proxyRouteKey, rememberedRoute]
	// statuses keeps models' statuses to revalidate (statuscache.go); nil
	// when Config.StatusCacheBytes is 0.
	statuses  *statusCache
	live      *liveCalls // long-lived proxied calls, ended when their access goes (live.go)
	handback  *handback  // taken connections back to net/http (takeover.go)
	taken     takenConns // connections the hub serves itself
	takeovers atomic.Int64
	handbacks atomic.Int64
}

// New builds a relay from a complete cfg.
func New(cfg Config) (*Relay, error) {
	if cfg.Logger == nil || cfg.Now == nil || cfg.Handler == nil || cfg.Count == nil || cfg.Enabled == nil || cfg.Check == nil || cfg.SessionsLive == nil {
		return nil, errors.New("proxy: Config needs Logger, Now, Handler, Count, Enabled, Check and SessionsLive")
	}
	if cfg.RouteTTL <= 0 || cfg.IdleTimeout <= 0 || cfg.StatusCacheBytes < 0 {
		return nil, errors.New("proxy: RouteTTL and IdleTimeout must be positive, StatusCacheBytes not negative")
	}
	s := &Relay{cfg: cfg, handback: newHandback(), live: newLiveCalls(cfg.MaxLiveCalls),
		proxyRoutes: ttlcache.New[proxyRouteKey, rememberedRoute](cfg.Now, cfg.RouteTTL)}
	if cfg.StatusCacheBytes > 0 {
		s.statuses = newStatusCache(cfg.StatusCacheBytes)
	}
	return s, nil
}

// Forget drops every remembered route, and has the long-lived calls
// checked again (FollowLive): a permission changed.
func (s *Relay) Forget() {
	s.proxyRoutes.Clear()
	s.live.changed()
}

// EndSession drops the remembered routes of the tokens of session sid, and
// ends the long-lived calls opened with them, without asking PostgreSQL or
// OpenFGA again: the session ended (logged out) on some replica. Everyone
// else's routes and calls are left as they are.
func (s *Relay) EndSession(sid string) {
	if sid == "" {
		return
	}
	s.proxyRoutes.DeleteFunc(func(_ proxyRouteKey, pr rememberedRoute) bool { return pr.sid == sid })
	for _, c := range s.live.ofSession(sid) {
		s.cfg.Logger.Info("ending a live call: its session ended", "user", c.p.Identity.Name(), "model", c.model)
		c.cancel()
	}
}

// Track counts r, a long-lived call (LongLived) of p's resting on rel on
// model, until done is called, and has it end when that access goes.
func (s *Relay) Track(r *http.Request, p authn.Principal, rel authz.Relation, model string) (tracked *http.Request, done func(), err error) {
	return s.live.track(r, p, rel, model)
}

// Close stops handing connections back and closes the taken ones, waiting
// until ctx ends at most.
func (s *Relay) Close(ctx context.Context) {
	s.handback.Close()
	s.taken.shutdown(ctx)
}

// Shutdown closes the taken connections once they are idle, waiting until
// ctx ends at most.
func (s *Relay) Shutdown(ctx context.Context) { s.taken.shutdown(ctx) }

// Taken counts the connections taken from net/http and handed back.
func (s *Relay) Taken() (takeovers, handbacks int64) { return s.takeovers.Load(), s.handbacks.Load() }

// StatusCopies counts the status reads answered with a revalidated copy
// and the copies kept.
func (s *Relay) StatusCopies() (revalidated, kept int64) {
	return s.statuses.counter(func(c *statusCache) int64 { return c.revalidated.Load() }),
		s.statuses.counter(func(c *statusCache) int64 { return c.kept.Load() })
}
