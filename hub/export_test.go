package hub

import (
	"context"
	"time"

	"github.com/droverhq/drover/hub/internal/authn"
	"github.com/droverhq/drover/hub/internal/store"
)

// RunIndexer runs the model indexer alone (Run starts it with the HTTPS
// server), for tests that serve the hub with httptest.
func (s *Server) RunIndexer(ctx context.Context) error { return s.indexer.Run(ctx) }

// RunMigrations runs the migration driver alone (Run starts it with the
// HTTPS server), for tests that serve the hub with httptest.
func (s *Server) RunMigrations(ctx context.Context) error { return s.migrations.Run(ctx) }

// FollowAuthz runs the listener for other replicas' permission changes
// alone (Run starts it), for tests that serve the hub with httptest.
func (s *Server) FollowAuthz(ctx context.Context) error { return s.followAuthz(ctx) }

// RemembersRead reports whether the proxy holds a remembered read route
// for the bearer token raw on model (fastpath.go).
func (s *Server) RemembersRead(raw, model string) bool {
	return s.proxy.Remembers(raw, model)
}

// Taken returns how many connections the hub took over from net/http and
// how many it handed back (takeover.go).
func (s *Server) Taken() (takeovers, handbacks int64) { return s.proxy.Taken() }

// ListedModels returns how many listed models the hub took from its cache
// of their JSON and how many it read whole (listcache.go).
func (s *Server) ListedModels() (cached, read int64) {
	return s.modelJSON.hits.Load(), s.modelJSON.misses.Load()
}

// SetModelJSONLimit bounds the hub's cache of listed models' JSON to n
// bytes (listcache.go), emptying it.
func (s *Server) SetModelJSONLimit(n int) { s.modelJSON = newModelJSONCache(n) }

// SetAnswerHeadTimeout changes how long the proxy waits for the head of a
// controller's answer in c.
func SetAnswerHeadTimeout(c *Config, d time.Duration) { c.answerHeadTimeout = d }

// SetRestoreLimit changes how long the API waits for OpenFGA's tuples to be
// restored at start in c.
func SetRestoreLimit(c *Config, d time.Duration) { c.restoreLimit = d }

// SetOIDCTimeout changes the bound on a request to the issuer in c (for
// an OIDCHTTPClient without a Timeout of its own).
func SetOIDCTimeout(c *Config, d time.Duration) { c.oidcTimeout = d }

// SetMaxEventFrame changes the bound on one frame of a controller's event
// stream in c.
func SetMaxEventFrame(c *Config, n int64) { c.maxEventFrame = n }

// SetExportRows bounds the rows of one export.
func SetExportRows(c *Config, n int) { c.exportRows = n }

// SetClaimLease changes how long an add-model's claims last unless
// renewed in c.
func SetClaimLease(c *Config, d time.Duration) { c.claimLease = d }

// ClaimRenewals returns how many add-model claims this replica renewed.
func (s *Server) ClaimRenewals() int64 { return s.claimRenewals.Load() }

// HubOperations are the audit names of the hub's own changes (operations.go).
var HubOperations = hubOperations

// CallSpoke sends a request to the named controller with a token the hub
// signs for id with access on model, whatever the hub itself would decide:
// for tests of what the controller checks on its own.
func (s *Server) CallSpoke(ctx context.Context, controller string, id store.Identity, access, model, method, path string, in, out any) error {
	c, err := s.store.Controllers.ByName(ctx, controller)
	if err != nil {
		return err
	}
	return s.spokeCall(ctx, c, authn.Principal{Identity: id}, access, model, method, path, in, out)
}

// StatusCopies returns how many status reads the proxy answered from a
// revalidated copy, and how many answers it kept (statuscache.go).
func (s *Server) StatusCopies() (revalidated, kept int64) {
	return s.proxy.StatusCopies()
}

// CachedPrincipals counts the authenticated tokens this replica remembers.
func (s *Server) CachedPrincipals() int { return s.authn.CachedPrincipals() }

// AuthzCacheDrops returns how many times this replica dropped every cache
// resting on permissions, and how many ended sessions it dropped only the
// entries of (authzsync.go).
func (s *Server) AuthzCacheDrops() (all, sessions int64) {
	return s.cachesDropped.Load(), s.sessionsEnded.Load()
}

// RunFederation runs the federation stream's worker alone (Run starts
// it), for tests that serve the hub with httptest.
func (s *Server) RunFederation(ctx context.Context) error { return s.fed.Run(ctx) }

// SetFederationStream changes a federation stream's keepalive period,
// frame write timeout and queue of notes in c (zero: the default).
func SetFederationStream(c *Config, keepalive, writeTimeout time.Duration, queue int) {
	c.fedKeepalive, c.fedWriteTimeout, c.fedQueue = keepalive, writeTimeout, queue
}

// FederationStreams returns how many federation streams this replica
// serves, and how many it ended for a client too slow.
func (s *Server) FederationStreams() (open int, slow int64) { return s.fed.count(), s.fedSlow.Load() }
