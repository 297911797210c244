package hub

import (
	"context"
	"time"

	"github.com/droverhq/drover/authz"
	"github.com/droverhq/drover/hub/internal/store"
)

// decisionTTL bounds how long a permission decision or listing is reused.
// This hub replica drops every cached one as soon as its outbox writes a
// tuple to OpenFGA, so grants and revocations made through it apply at
// once; one made through another replica applies within the TTL.
const decisionTTL = 2 * time.Second

// decisionKey names a Check (object set) or a ListObjects (typ set).
type decisionKey struct {
	user   string
	rel    authz.Relation
	object string
	typ    string
}

// authzSyncTimeout bounds how long a request that changed tuples waits for
// OpenFGA to hold them (awaitAuthz).
const authzSyncTimeout = 5 * time.Second

// awaitAuthz makes a change of tuples visible to the caller's next request
// (read your writes through the outbox): it wakes the outbox worker and
// waits, at most authzSyncTimeout, until every entry committed so far has
// reached OpenFGA on this or another replica. Without it `drover add-model
// m && drover status -m m` could be refused for a few milliseconds. The
// change is committed either way; a timeout (OpenFGA down) is only logged,
// and the worker keeps delivering.
func (s *Server) awaitAuthz(ctx context.Context) {
	s.outbox.Kick()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), authzSyncTimeout)
	defer cancel()
	head, err := s.store.OutboxHead(ctx)
	delay := time.Millisecond
	for err == nil {
		var done bool
		if done, err = s.store.OutboxDeliveredThrough(ctx, head); done || err != nil {
			break
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			err = ctx.Err()
		case <-t.C:
		}
		t.Stop()
		delay = min(2*delay, 50*time.Millisecond)
	}
	if err != nil {
		s.cfg.Logger.Warn("permission changes not yet in OpenFGA; they will be delivered", "err", err)
		return
	}
	// Whichever replica delivered them, this one's next request must see
	// them (its own notification may still be on its way).
	s.dropAuthzCaches()
}

// dropAuthzCaches forgets the authenticated tokens, permission decisions,
// listings and remembered routes this replica holds.
func (s *Server) dropAuthzCaches() {
	s.principals.clear() // an identity may have been disabled
	s.decisions.clear()
	s.listings.clear()
	s.proxyRoutes.clear()
	s.live.changed() // and end the long-lived calls that no longer hold
}

// reloadKeys has this replica reload the signing keys now (another one
// rotated or revoked them), and then drop what it holds signed with the
// old ones: controller tokens it hands out again and the sessions it has
// verified.
func (s *Server) reloadKeys(ctx context.Context) {
	if err := s.keys.Refresh(ctx); err != nil {
		s.cfg.Logger.Warn("signing key refresh failed", "err", err)
	}
	s.spokeTokens.clear()
	s.dropAuthzCaches()
}

// followAuthz drops this replica's cached decisions (and has its
// long-lived calls checked again, live.go) whenever any replica
// has delivered permission changes to OpenFGA (announced through
// PostgreSQL), so a grant or a revoke made through one replica holds on
// every other one from its next request, not when the 2 s cache expires.
// It listens again after a failure, dropping the caches for what it may
// have missed. The same channel announces a change of the signing keys
// (rotate-signing-key), which it reloads.
func (s *Server) followAuthz(ctx context.Context) error {
	// The long-lived calls are checked again on the same changes (live.go).
	live := make(chan struct{})
	go func() { defer close(live); _ = s.followLive(ctx) }()
	defer func() { <-live }()
	for relisten := false; ; relisten = true {
		err := s.store.ListenAuthzChanges(ctx, func() {
			if relisten {
				s.reloadKeys(ctx) // for a change of keys it may have missed
			}
			s.dropAuthzCaches()
		}, func(payload string) {
			if payload == store.SigningKeysChanged {
				s.reloadKeys(ctx)
				return
			}
			s.dropAuthzCaches()
		})
		if ctx.Err() != nil {
			return ctx.Err()
		}
		s.cfg.Logger.Warn("permission change notifications interrupted; listening again", "err", err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}
