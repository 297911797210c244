package authn

import (
	"context"
	"errors"
	"fmt"

	"github.com/droverhq/drover/authz"
	"github.com/droverhq/drover/hub/internal/reply"
)

// principalCacheKey identifies a presented credential: the raw token, and
// whether it came in the session cookie (which changes CSRF rules).
type principalCacheKey struct {
	raw    string
	cookie bool
}

// principal authenticates a hub session token: its signature, issuer,
// audience and expiry, then the identity it names. The answer is reused
// for Config.PrincipalTTL and never past the token's expiry, so a token is
// verified, and its identity read from PostgreSQL, at most once every 2 s.
// badToken distinguishes a token that failed verification from an identity
// that could not be loaded.
func (s *Service) principal(ctx context.Context, raw string, cookie bool) (p Principal, badToken bool, err error) {
	k := principalCacheKey{raw: raw, cookie: cookie}
	if p, hit := s.principals.Get(k); hit {
		return p, false, nil
	}
	gen := s.principals.Generation()
	claims, err := s.keys.Verify(raw, Audience)
	if err != nil {
		return Principal{}, true, err
	}
	id, err := s.store.Identities.ByID(ctx, claims.Subject)
	if err != nil {
		return Principal{}, false, errors.Join(reply.ErrUnauthenticated, err)
	}
	if id.DisabledAt != nil {
		return Principal{}, false, errors.Join(reply.ErrForbidden, fmt.Errorf("user %s is disabled (an administrator may enable it again)", id.Name()))
	}
	if claims.SID != "" {
		// The session ended (logout, a refresh token used twice, the
		// identity disabled): its access tokens end with it.
		live, err := s.store.Sessions.Live(ctx, claims.SID)
		if err != nil {
			return Principal{}, false, errors.Join(reply.ErrUnauthenticated, err)
		}
		if !live {
			return Principal{}, true, errors.Join(reply.ErrUnauthenticated, errSessionEnded)
		}
	}
	p = Principal{Identity: id, Object: authz.UserObject(id.ID), Cookie: cookie, Expires: claims.Expiry.Time(), SID: claims.SID}
	s.principals.Put(k, p, gen, claims.Expiry.Time())
	return p, false, nil
}

// errSessionEnded refuses an access token whose session has ended.
var errSessionEnded = errors.New("the session has ended")

// CachedPrincipals counts the authenticated tokens remembered.
func (s *Service) CachedPrincipals() int { return s.principals.Len() }
