package hub

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/authz"
	"github.com/droverhq/drover/hub/internal/authn"
	"github.com/droverhq/drover/hub/internal/reply"
	"github.com/droverhq/drover/hub/internal/store"
)

// identitiesAPI serves the users, the caller's own identity and the hub's signing keys. It is the hub's Server seen through those handlers.
type identitiesAPI struct{ *Server }

// userOf is id as GET /v1/users shows it.
func userOf(id store.Identity) api.HubUser {
	u := api.HubUser{Name: id.Name(), Kind: id.Kind, Org: id.Org, Pending: id.Pending(), Disabled: id.DisabledAt != nil,
		CreatedAt: id.CreatedAt, LastLogin: id.LastLogin}
	if id.DisplayName != "" && id.DisplayName != u.Name {
		u.DisplayName = id.DisplayName
	}
	return u
}

// handleListUsers answers GET /v1/users[?org=ORG]: the people and service
// accounts of the organizations the caller administers (a hub
// administrator's: all of them), and the caller. Others' identities are
// their administrators' business, so a plain member sees only themselves,
// as Juju's users does for a user without superuser.
func (s identitiesAPI) handleListUsers(w http.ResponseWriter, r *http.Request) {
	p, _ := authn.PrincipalFrom(r.Context())
	orgs, err := s.gate.List(r.Context(), p, authz.Administrator, authz.TypeOrganization)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	self := p.Identity.ID
	if org := r.URL.Query().Get("org"); org != "" {
		if slices.Contains(orgs, org) {
			orgs = []string{org}
		} else {
			orgs = []string{}
		}
		if p.Identity.Org != org {
			self = ""
		}
	}
	ids, err := s.store.Identities.List(r.Context(), orgs, self)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := make([]api.HubUser, len(ids))
	for i, id := range ids {
		out[i] = userOf(id)
	}
	reply.JSON(w, http.StatusOK, map[string]any{"users": out})
}

// handleGetUser answers GET /v1/users/{user} (Juju's show-user) for the
// user themselves and their organization's administrators: the user and
// the groups they are in. Anyone else is told nobody has that name.
func (s identitiesAPI) handleGetUser(w http.ResponseWriter, r *http.Request) {
	p, _ := authn.PrincipalFrom(r.Context())
	ref, err := url.PathUnescape(chi.URLParam(r, "user"))
	var id store.Identity
	if err != nil {
		err = fmt.Errorf("%w: user: %w", reply.ErrBadRequest, err)
	} else {
		id, err = s.identityByRef(r.Context(), ref)
	}
	if err == nil && id.ID != p.Identity.ID {
		var ok bool
		if ok, err = s.gate.Check(r.Context(), p, authz.Administrator, authz.OrgObject(id.Org)); err == nil && !ok {
			err = unknownUser(ref)
		}
	}
	var groups []string
	if err == nil {
		groups, err = s.store.Identities.Groups(r.Context(), id.ID)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	u := userOf(id)
	u.Groups = groups
	reply.JSON(w, http.StatusOK, u)
}

// userForAdmin loads the {user} of the path (an email, a service account's
// client id or an identity id) for an administrator of its organization.
// Anyone else is told it does not exist, as users shows them nobody.
func (s identitiesAPI) userForAdmin(r *http.Request) (store.Identity, error) {
	p, _ := authn.PrincipalFrom(r.Context())
	ref, err := url.PathUnescape(chi.URLParam(r, "user"))
	if err != nil {
		return store.Identity{}, fmt.Errorf("%w: user: %w", reply.ErrBadRequest, err)
	}
	annotate(r.Context(), func(a *auditInfo) { a.Target = ref })
	id, err := s.identityByRef(r.Context(), ref)
	if err != nil {
		return id, err
	}
	if id.ID == p.Identity.ID {
		return id, fmt.Errorf("%w: you cannot %s yourself", reply.ErrBadRequest, strings.TrimSuffix(operationOf(r), "-user"))
	}
	ok, err := s.gate.Check(r.Context(), p, authz.Administrator, authz.OrgObject(id.Org))
	if err != nil {
		return id, err
	}
	if !ok {
		return store.Identity{}, unknownUser(ref)
	}
	annotate(r.Context(), func(a *auditInfo) { a.Org, a.Target = id.Org, id.Name() })
	if err := s.notAbove(r.Context(), p, authz.UserObject(id.ID), "user "+id.Name()); err != nil {
		return store.Identity{}, err
	}
	return id, nil
}

// notAbove refuses (reply.ErrForbidden) when subject (a user, or a group's
// members) holds the hub's administration and the caller does not: an
// organization's administrator manages its members, never someone whose
// privilege is above its own (ADR 0021).
func (s *Server) notAbove(ctx context.Context, p authn.Principal, subject, what string) error {
	above, err := s.gate.Check(ctx, authn.Principal{Object: subject}, authz.Administrator, authz.HubObject())
	if err != nil || !above {
		return err
	}
	ok, err := s.gate.Check(ctx, p, authz.Administrator, authz.HubObject())
	if err != nil || ok {
		return err
	}
	return fmt.Errorf("%w: %s administers the hub: only the hub's administrators may change it", reply.ErrForbidden, what)
}

// operationOf is the audit operation a handler set.
func operationOf(r *http.Request) string {
	var op string
	annotate(r.Context(), func(a *auditInfo) { op = a.Operation })
	return op
}

func (s identitiesAPI) handleDisableUser(w http.ResponseWriter, r *http.Request) {
	s.setDisabled(w, r, true)
}
func (s identitiesAPI) handleEnableUser(w http.ResponseWriter, r *http.Request) {
	s.setDisabled(w, r, false)
}

// setDisabled answers POST /v1/users/{user}/disable and .../enable (the
// organization's administrators): a disabled identity can neither log in
// nor use a token it holds, on any replica, from its next request; its
// sessions end. Its grants stay, for when it is enabled again.
func (s identitiesAPI) setDisabled(w http.ResponseWriter, r *http.Request, disabled bool) {
	id, err := s.userForAdmin(r)
	if err == nil {
		_, err = s.store.Identities.SetDisabled(r.Context(), id.ID, disabled, s.cfg.Now())
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.dropAuthzCaches()
	w.WriteHeader(http.StatusNoContent)
}

// handleRemoveUser answers DELETE /v1/users/{user} (the organization's
// administrators): the identity goes with its grants, memberships and
// sessions; one that owns models is refused (409) with their names. A
// person removed who logs in again starts afresh, with no access.
func (s identitiesAPI) handleRemoveUser(w http.ResponseWriter, r *http.Request) {
	id, err := s.userForAdmin(r)
	if err == nil {
		err = s.store.Identities.Remove(r.Context(), id.ID)
	}
	if owns := (*store.OwnsModelsError)(nil); errors.As(err, &owns) {
		err = errors.Join(reply.ErrConflict, fmt.Errorf("%w: destroy them first, or disable the user instead (drover disable-user)", err))
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.gate.AwaitAuthz(r.Context())
	s.dropAuthzCaches()
	w.WriteHeader(http.StatusNoContent)
}
