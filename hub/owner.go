package hub

import (
	"fmt"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/droverhq/drover/authz"
	"github.com/droverhq/drover/hub/internal/authn"
	"github.com/droverhq/drover/hub/internal/reply"
	"github.com/droverhq/drover/hub/internal/store"
)

// SetModelOwnerRequest is PATCH /v1/models/{uuid}'s body (drover
// set-model-owner).
type SetModelOwnerRequest struct {
	// Owner is the new owner: an email, a service account's client id or
	// an identity id, of someone in the model's organization.
	Owner string `json:"owner"`
}

// handleSetModelOwner gives a model a new owner, as jimmctl import-model
// --owner does for a model JIMM found on a controller: the owner a model
// adopted from its controller lacks, or another one when its owner leaves.
// Only the administrators of the model's organization (and so the hub's)
// may; the new owner must be a member of that organization, and gets
// administrator on the model. The previous owner keeps the access they
// hold until it is revoked.
func (s accessAPI) handleSetModelOwner(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	p, _ := authn.PrincipalFrom(ctx)
	id := chi.URLParam(r, "uuid")
	var req SetModelOwnerRequest
	err := reply.Decode(r, &req)
	if err == nil && req.Owner == "" {
		err = fmt.Errorf("%w: the body must name the new owner: {\"owner\": EMAIL, CLIENT-ID or IDENTITY-ID}", reply.ErrBadRequest)
	}
	var m store.Model
	if err == nil {
		annotate(ctx, func(a *auditInfo) { a.ModelUUID = id })
		err = s.gate.Require(ctx, p, authz.Reader, authz.Reader, authz.ModelObject(id))
	}
	if err == nil {
		if m, err = s.store.Models.ByUUID(ctx, id); err == nil {
			annotate(ctx, func(a *auditInfo) { a.Org, a.ControllerUUID, a.Target = m.Org, m.ControllerUUID, m.Name })
			var ok bool
			if ok, err = s.gate.Check(ctx, p, authz.Administrator, authz.OrgObject(m.Org)); err == nil && !ok {
				err = fmt.Errorf("%w: %s needs admin access to organization %s to change the owner of its model %s",
					reply.ErrForbidden, p.Identity.Name(), m.Org, m.Name)
			}
		}
	}
	var owner store.Identity
	if err == nil {
		owner, err = s.newModelOwner(r, m, req.Owner)
	}
	var previous string
	if err == nil {
		previous, err = s.store.Models.SetOwner(ctx, id, owner.ID)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	annotate(ctx, func(a *auditInfo) {
		a.Details = map[string]any{"owner": owner.Name(), "owner-id": owner.ID, "previous-owner-id": previous}
		if previous == "" {
			delete(a.Details, "previous-owner-id")
		}
	})
	s.gate.AwaitAuthz(ctx)
	if m, err = s.store.Models.ByUUID(ctx, id); err != nil {
		s.writeError(w, r, err)
		return
	}
	reply.JSON(w, http.StatusOK, m)
}

// newModelOwner finds the identity ref names, and checks it may own m: a
// member of m's organization, enabled, who has logged in.
func (s accessAPI) newModelOwner(r *http.Request, m store.Model, ref string) (store.Identity, error) {
	id, err := s.identityByRef(r.Context(), ref)
	if err != nil {
		return id, err
	}
	switch member, err := s.authz.Check(r.Context(), authz.UserObject(id.ID), authz.Member, authz.OrgObject(m.Org)); {
	case err != nil:
		return id, err
	case id.DisabledAt != nil:
		return id, fmt.Errorf("%w: user %s is disabled", reply.ErrBadRequest, id.Name())
	case id.Pending():
		return id, fmt.Errorf("%w: %s has not logged in yet: a model's owner must have", reply.ErrBadRequest, ref)
	case !member:
		return id, fmt.Errorf("%w: %s is not a member of organization %s, which owns model %s (a model's owner is one of its organization)",
			reply.ErrBadRequest, id.Name(), m.Org, m.Name)
	}
	return id, nil
}
