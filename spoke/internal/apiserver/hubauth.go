package apiserver

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/spoke/internal/credential"
	"github.com/droverhq/drover/spoke/internal/hubtrust"
	"github.com/droverhq/drover/spoke/internal/lookup"
	"github.com/droverhq/drover/spoke/internal/reply"
	"github.com/droverhq/drover/spoke/internal/state"
)

// TokenVerifier verifies a hub's per-request tokens against the hub the
// controller trusts at that moment (hubtrust.Follower).
type TokenVerifier interface {
	Verify(ctx context.Context, hub *hubtrust.Hub, raw, audience string) (hubtrust.Claims, error)
	// KeyCurrent reports whether kid is still one of hub's keys (false once
	// the hub has revoked it and the controller has fetched its keys since).
	KeyCurrent(ctx context.Context, hub *hubtrust.Hub, kid string) bool
}

func bearerToken(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	if len(h) > 7 && strings.EqualFold(h[:7], "bearer ") {
		return strings.TrimSpace(h[7:]), true
	}
	return "", false
}

// authenticateHub admits a request carrying a hub token: audience = this
// controller's UUID, issuer = the hub the replicated state trusts, and the
// hub's decision (access on one model, or superuser) is enforced route by
// route by hubScope. A refused token is charged to its source address
// only: the issuer it names is no secret, and throttling it would cut the
// trusted hub off for everyone.
func (s *Server) authenticateHub(w http.ResponseWriter, r *http.Request, raw string, next http.Handler) {
	addr := credential.SourceAddr(r.RemoteAddr)
	if te := s.limiter.Allow(addr, ""); te != nil {
		reply.WriteError(w, r, credential.Refusal(w.Header(), te))
		return
	}
	if s.cfg.Hub == nil {
		s.limiter.Fail(addr, "")
		reply.WriteError(w, r, api.Errorf(api.CodeUnauthorized, "this controller trusts no hub: use the controller's user and password"))
		return
	}
	snap := s.b.Store().Snapshot()
	ctrl, err := lookup.Controller(snap)
	// A node that joined a moment ago may not have applied the controller
	// record yet.
	if err != nil && credential.CaughtUp(r.Context(), s.b) {
		snap = s.b.Store().Snapshot()
		ctrl, err = lookup.Controller(snap)
	}
	if err != nil {
		reply.WriteError(w, r, api.Errorf(api.CodeUnavailable, "controller state not replicated yet"))
		return
	}
	hub, err := s.trustedHub(r.Context(), snap, raw)
	if err != nil {
		reply.WriteError(w, r, err)
		return
	}
	c, err := s.cfg.Hub.Verify(r.Context(), hub, raw, ctrl.UUID)
	if err != nil {
		switch {
		case errors.Is(err, hubtrust.ErrNoHub):
			s.limiter.Fail(addr, "")
			reply.WriteError(w, r, api.Errorf(api.CodeUnauthorized, "this controller trusts no hub: use the controller's user and password"))
		case errors.Is(err, hubtrust.ErrUnavailable):
			s.log.Warn("hub token not verified", "err", err)
			reply.WriteError(w, r, api.Errorf(api.CodeUnavailable, "the hub's signing keys cannot be fetched"))
		case errors.Is(err, hubtrust.ErrClock):
			// Not the token's fault, nor the trust's: say what to fix.
			s.log.Warn("hub token refused: the clocks differ", "err", err)
			_, detail, _ := strings.Cut(err.Error(), hubtrust.ErrClock.Error()+": ")
			reply.WriteError(w, r, api.Errorf(api.CodeUnauthorized, "%s (%s; the hub's and this controller's clocks differ: "+
				"keep them in step, with NTP for one)", hubtrust.ErrClock, detail))
		default:
			s.limiter.Fail(addr, "")
			s.log.Debug("hub token refused", "err", err)
			reply.WriteError(w, r, api.Errorf(api.CodeUnauthorized, "invalid hub token"))
		}
		return
	}
	name := c.Name
	if name == "" {
		name = c.Subject
	}
	ctx := context.WithValue(r.Context(), userKey, caller{Name: name, Access: c.Access, Hub: true, Model: c.Model, HubURL: hub.URL, KeyID: c.KeyID})
	if err := hubScope(r, callerOf(ctx)); err != nil {
		reply.WriteError(w, r, err)
		return
	}
	next.ServeHTTP(w, r.WithContext(ctx))
}

// trustedHub returns the hub the replicated state trusts (nil: none). When
// the local replica trusts no hub, or another issuer than the token names,
// it may lag behind a trust just set through another node (a hub that
// registered this controller calls it at once, see ADR 0006), so it looks
// again once the replica has applied what this node knows is committed
// and at each commit it hears of for a short while (no raft traffic), and,
// only while a hub token is pending (a hub may be registering right now),
// after a consistent read. Outside a registration
// no token costs a raft round trip, whatever issuer it names (ADR 0019).
func (s *Server) trustedHub(ctx context.Context, snap *state.Snapshot, raw string) (*hubtrust.Hub, error) {
	t, err := snap.HubTrust()
	if err != nil {
		return nil, err
	}
	if trusts(t, raw) {
		return hubOf(t), nil
	}
	if credential.CaughtUp(ctx, s.b) {
		snap = s.b.Store().Snapshot()
		if t, err = snap.HubTrust(); err != nil {
			return nil, err
		}
	}
	if trusts(t, raw) {
		return hubOf(t), nil
	}
	// A trust set through another node just before: a follower hears that
	// it is committed with the leader's next append (ADR 0028).
	err = credential.Recheck(ctx, s.b, func() (bool, error) {
		snap = s.b.Store().Snapshot()
		t, err = snap.HubTrust()
		return err != nil || trusts(t, raw), err
	})
	if err != nil {
		return nil, err
	}
	if trusts(t, raw) {
		return hubOf(t), nil
	}
	pending, err := snap.HubTokenPending(s.cfg.Now())
	if err != nil {
		return nil, err
	}
	if pending {
		if _, werr := s.b.WaitRead(ctx, 0, true); werr == nil {
			if t, err = s.b.Store().Snapshot().HubTrust(); err != nil {
				return nil, err
			}
		}
	}
	return hubOf(t), nil
}

// trusts reports whether t is the trust of the hub that issued raw.
func trusts(t *api.HubTrust, raw string) bool {
	return t != nil && strings.TrimRight(t.URL, "/") == hubtrust.UnverifiedIssuer(raw)
}

// hubOf is the hub t trusts, nil for none.
func hubOf(t *api.HubTrust) *hubtrust.Hub {
	if t == nil {
		return nil
	}
	return &hubtrust.Hub{URL: t.URL, JWKSURL: t.JWKSURL, CACert: []byte(t.CACert)}
}

// hubScope enforces a model-scoped hub token: only its model's routes, GETs
// for read, changes for write, destroying the model for admin; elsewhere
// only whoami and the controller's description. Superuser tokens pass.
func hubScope(r *http.Request, c caller) error {
	if c.Access == hubtrust.AccessSuperuser {
		return nil
	}
	read := r.Method == http.MethodGet || r.Method == http.MethodHead
	prefix := "/v1/models/" + c.Model
	rest, inModel := strings.CutPrefix(r.URL.Path, prefix)
	if !inModel || (rest != "" && rest != "/" && !strings.HasPrefix(rest, "/")) {
		if read && (r.URL.Path == "/v1/whoami" || r.URL.Path == "/v1/controller") {
			return nil
		}
		return api.Errorf(api.CodeForbidden, "the hub token does not cover %s %s", r.Method, r.URL.Path)
	}
	switch {
	case read:
		return nil
	case r.Method == http.MethodDelete && (rest == "" || rest == "/"):
		if c.Access == hubtrust.AccessAdmin {
			return nil
		}
		return api.Errorf(api.CodeForbidden, "destroying a model needs admin access")
	case c.Access == hubtrust.AccessWrite || c.Access == hubtrust.AccessAdmin:
		return nil
	}
	return api.Errorf(api.CodeForbidden, "%s access does not allow %s %s", c.Access, r.Method, r.URL.Path)
}

// errHubTrustEnded ends a stream a hub opened once the controller no
// longer trusts that hub; errHubKeyRevoked once the hub has revoked the key
// that signed the token it opened the stream with.
var (
	errHubTrustEnded = errors.New("the controller no longer trusts the hub that opened this stream")
	errHubKeyRevoked = errors.New("the hub revoked the key that signed the token this stream was opened with")
)

// hubTrustEnded says why a stream ctx's caller opened with a hub token must
// end, or nil: remove-hub-trust ran, or another hub registered the
// controller since (errHubTrustEnded), or the hub revoked the key that
// signed the token (errHubKeyRevoked: drover rotate-signing-key
// --revoke-previous, seen here within the JWKS's MaxAge). Streams a hub
// opened (its event subscription, watches and followed logs proxied
// through it) check it whenever they wake, at least once per keepalive
// interval, and end: a hub token is checked when a stream opens, and the
// stream would otherwise outlive the trust, or the key, for good.
func (s *base) hubTrustEnded(ctx context.Context) error {
	c := callerOf(ctx)
	if !c.Hub {
		return nil
	}
	t, err := s.b.Store().Snapshot().HubTrust()
	if err != nil {
		return nil
	}
	if t == nil || strings.TrimRight(t.URL, "/") != strings.TrimRight(c.HubURL, "/") {
		return errHubTrustEnded
	}
	if !s.cfg.Hub.KeyCurrent(ctx, &hubtrust.Hub{URL: t.URL, JWKSURL: t.JWKSURL, CACert: []byte(t.CACert)}, c.KeyID) {
		return errHubKeyRevoked
	}
	return nil
}
