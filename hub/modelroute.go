package hub

import (
	"context"

	"github.com/droverhq/drover/hub/internal/authn"
	"github.com/droverhq/drover/hub/internal/store"
)

// The hub's per-request work on a proxied call (authentication, the model's
// route, the spoke token) is reused for a short time, so a status poll or a
// CLI session costs the hub little more than the extra hop. Each cache is a
// ttlcache.Cache; what each may serve stale, and for how long, is
// said where it is declared.

// modelRoute returns the index row of a model and its controller. Both are
// reused for decisionTTL: a model that moved to another controller
// (migration) or a controller whose addresses changed through another hub
// replica may be reached at the old place for that long, and the
// controller answers for itself (not found, or unavailable).
func (s modelCallsAPI) modelRoute(ctx context.Context, id string) (store.Model, store.Controller, error) {
	m, err := s.routeModels.Lookup(id, func() (store.Model, error) { return s.store.Models.ByUUID(ctx, id) })
	if err != nil {
		return m, store.Controller{}, err
	}
	c, err := s.routeCtrls.Lookup(m.ControllerUUID, func() (store.Controller, error) {
		return s.store.Controllers.ByUUID(ctx, m.ControllerUUID)
	})
	return m, c, err
}

// spokeTokenKey names a spoke token by everything it carries.
type spokeTokenKey struct {
	sub, name, controller, ca, access, model string
}

// cachedSpokeToken returns a spoke token for p on controller with access
// on model, minting one when none was minted in the last half of
// spokeTokenTTL: a token handed to a controller always has at least 30 s
// to live.
func (s modelCallsAPI) cachedSpokeToken(p authn.Principal, controller, caSHA256, access, model string) (string, error) {
	k := spokeTokenKey{sub: p.Identity.ID, name: p.Identity.Name(), controller: controller, ca: caSHA256, access: access, model: model}
	return s.spokeTokens.Lookup(k, func() (string, error) { return s.spokeToken(p, controller, caSHA256, access, model) })
}

// spokeTokenReuse is how long a minted spoke token is handed out again.
const spokeTokenReuse = spokeTokenTTL / 2
