package hub

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/droverhq/drover/authz"
	"github.com/droverhq/drover/hub/internal/authn"
	"github.com/droverhq/drover/hub/internal/reply"
	"github.com/droverhq/drover/hub/internal/store"
)

// The hub tells nobody who has an account on it: a caller who may not see
// an identity (another organization's, the caller not administering it)
// gets, naming it by email, identity id or client id, the answer nobody
// by that name gets. Naming by email a grant or a membership goes through,
// answered as one to someone who has not logged in yet; naming by id it is
// refused as for an unknown id; a revoke or a removal that finds nothing
// held by the identity is answered as for an unknown name.

// unknownUser is the answer for a user ref that names nobody, or nobody
// the caller may see. It depends on ref alone.
func unknownUser(ref string) error {
	hint := ""
	if strings.Contains(ref, "/") {
		hint = "; a group is granted as one: drover grant --group ORG/NAME"
	}
	return fmt.Errorf("%w: user %q (nobody by that name has logged in or been granted access%s)", reply.ErrNotFound, ref, hint)
}

// sees reports whether p may see id: itself, one of its organization, or
// one of an organization p administers.
func (s *Server) sees(ctx context.Context, p authn.Principal, id store.Identity) (bool, error) {
	if id.Org == p.Identity.Org || id.ID == p.Identity.ID {
		return true, nil
	}
	return s.gate.Check(ctx, p, authz.Administrator, authz.OrgObject(id.Org))
}

// answeredAsPending reports whether a grant (or a group membership) to id,
// named by email, is answered as one to someone who has not logged in yet:
// when they have not, and when p may not see them. A check that fails
// answers as pending too.
func (s *Server) answeredAsPending(ctx context.Context, p authn.Principal, id store.Identity) bool {
	if id.Pending() {
		return true
	}
	ok, err := s.sees(ctx, p, id)
	return err != nil || !ok
}

// seenIdentity is identityByRef for p naming the subject of a grant or of
// a membership by identity id or client id: an identity p may not see is
// answered as unknownUser(ref). Unknown or hidden, the answer costs one
// lookup and one Check, so the time it takes does not tell them apart.
func (s *Server) seenIdentity(ctx context.Context, p authn.Principal, ref string) (store.Identity, error) {
	id, err := s.identityByRef(ctx, ref)
	if errors.Is(err, reply.ErrNotFound) {
		// The Check an identity of another organization costs.
		org := cmp.Or(p.Identity.Org, s.cfg.DefaultOrg)
		if _, cerr := s.gate.Check(ctx, p, authz.Administrator, authz.OrgObject(org)); cerr != nil {
			return id, cerr
		}
		return id, err
	}
	if err != nil {
		return id, err
	}
	switch ok, err := s.sees(ctx, p, id); {
	case err != nil:
		return id, err
	case !ok:
		return store.Identity{}, unknownUser(ref)
	}
	return id, nil
}

// heldNothing is the answer to p's revoke or removal naming ref (id) that
// found nothing held: err as it is when p may see id, else hidden and
// unknownUser(ref) (the request is then recorded as one naming nobody).
func (s *Server) heldNothing(ctx context.Context, p authn.Principal, id store.Identity, ref string, err error) (hidden bool, answer error) {
	switch ok, cerr := s.sees(ctx, p, id); {
	case cerr != nil:
		return false, cerr
	case !ok:
		return true, unknownUser(ref)
	}
	return false, err
}
