package hub

import (
	"net/http"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/authz"
	"github.com/droverhq/drover/hub/internal/authn"
	"github.com/droverhq/drover/hub/internal/reply"
	"github.com/droverhq/drover/hub/internal/store"
	"github.com/droverhq/drover/internal/version"
)

// MintAccessToken signs a hub session token for id with the given lifetime
// and audience ("" means Audience).
func (s *Server) MintAccessToken(id store.Identity, ttl time.Duration, audience string) (string, error) {
	return s.authn.MintAccessToken(id, ttl, audience)
}

func (s identitiesAPI) handleHubInfo(w http.ResponseWriter, r *http.Request) {
	reply.JSON(w, http.StatusOK, api.HubInfo{Version: version.Version, URL: s.cfg.PublicURL})
}

// handleWhoami answers who the caller is. user and access make the answer
// readable as a controller's WhoAmI, in Juju's controller access levels:
// "superuser" for the hub's administrators, "login" for everyone else
// (what they may do beyond that comes from their grants); can says what
// the dashboard may offer them (api.Capabilities).
func (s identitiesAPI) handleWhoami(w http.ResponseWriter, r *http.Request) {
	p, _ := authn.PrincipalFrom(r.Context())
	admin, err := s.authz.Check(r.Context(), p.Object, authz.Administrator, authz.HubObject())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	access := "login"
	if admin {
		access = "superuser"
	}
	can, err := s.capabilities(r.Context(), p, admin)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	reply.JSON(w, http.StatusOK, struct {
		store.Identity
		User   string           `json:"user"`
		Access string           `json:"access"`
		Can    api.Capabilities `json:"can"`
	}{p.Identity, p.Identity.Name(), access, can})
}
