package hub

import (
	"context"
	"time"
)

// decisionTTL bounds how long a permission decision or listing is reused.
// This hub replica drops every cached one as soon as its outbox writes a
// tuple to OpenFGA, so grants and revocations made through it apply at
// once; one made through another replica applies within the TTL.
const decisionTTL = 2 * time.Second

// dropAuthzCaches forgets the authenticated tokens, permission decisions,
// listings and remembered routes this replica holds.
func (s *Server) dropAuthzCaches() {
	s.cachesDropped.Add(1)
	s.authn.Forget() // an identity may have been disabled
	s.gate.Forget()
	s.proxy.Forget() // and end the long-lived calls that no longer hold
	s.fed.authzChanged()
}

// endSession forgets what this replica holds of session sid, which ended
// on some replica (logout, a refresh token presented again): the tokens of
// it verified here, the routes remembered for them and the long-lived
// calls opened with them. A session's end changes no permission, so the
// decisions, and every other caller's entries, stay (ADR 0025).
func (s *Server) endSession(sid string) {
	s.sessionsEnded.Add(1)
	s.authn.ForgetSessions([]string{sid})
	s.proxy.EndSession(sid)
	s.fed.endSession(sid)
}

// reloadKeys has this replica reload the signing keys now (another one
// rotated or revoked them), and then drop what it holds signed with the
// old ones: controller tokens it hands out again and the sessions it has
// verified.
func (s *Server) reloadKeys(ctx context.Context) {
	if err := s.keys.Refresh(ctx); err != nil {
		s.cfg.Logger.Warn("signing key refresh failed", "err", err)
	}
	s.spokeTokens.Clear()
	s.dropAuthzCaches()
}

// followAuthz follows the permission changes of every replica (gate's
// Follow), and has the long-lived calls checked again on the same changes
// (live.go).
func (s *Server) followAuthz(ctx context.Context) error {
	live := make(chan struct{})
	go func() { defer close(live); _ = s.proxy.FollowLive(ctx) }()
	defer func() { <-live }()
	return s.gate.Follow(ctx)
}
