package hub

import (
	"context"

	"github.com/droverhq/drover/authz"
	"github.com/droverhq/drover/hub/internal/authn"
	"github.com/droverhq/drover/hub/internal/store"
)

// answeredAsPending reports whether a grant (or a group membership) to id,
// named by email, is answered as one to someone who has not logged in yet:
// when they have not, and when p may not see them (another organization's
// user, p not administering it), so that the answer tells nobody who has
// an account on the hub. A check that fails answers as pending too.
func (s *Server) answeredAsPending(ctx context.Context, p authn.Principal, id store.Identity) bool {
	if id.Pending() {
		return true
	}
	if id.Org == p.Identity.Org || id.ID == p.Identity.ID {
		return false
	}
	ok, err := s.gate.Check(ctx, p, authz.Administrator, authz.OrgObject(id.Org))
	return err != nil || !ok
}
