package hub

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/mail"
	"net/url"
	"slices"
	"strings"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/droverhq/drover/authz"
	"github.com/droverhq/drover/hub/internal/authn"
	"github.com/droverhq/drover/hub/internal/gate"
	"github.com/droverhq/drover/hub/internal/reply"
	"github.com/droverhq/drover/hub/internal/store"
)

// accessAPI serves grants, groups and model ownership (the /v1/grants, /v1/groups and PATCH /v1/models/{uuid} routes). It is the hub's Server seen through those handlers.
type accessAPI struct{ *Server }

// GrantRequest is the body of POST and DELETE /v1/grants: one subject
// (user or group), one level, one target.
type GrantRequest struct {
	// User is an email, an identity id, or "everyone" (read-like levels).
	User string `json:"user,omitempty"`
	// Group is "ORG/NAME".
	Group string `json:"group,omitempty"`
	Level string `json:"level"`
	// Exactly one target: a model UUID, a controller name or an
	// organization name.
	Model        string `json:"model,omitempty"`
	Controller   string `json:"controller,omitempty"`
	Organization string `json:"organization,omitempty"`
}

// levelOrder lists, per target type, the levels that include one another,
// lowest first, as Juju's do (read < write < admin). audit_viewer stands
// alone.
var levelOrder = map[string][]string{
	authz.TypeModel:        {"read", "write", "admin"},
	authz.TypeController:   {"login", "add-model", "superuser"},
	authz.TypeOrganization: {"member", "add-model", "admin"},
}

// revokeSet is what revoking t (at level) does, as Juju's revoke: it
// removes t and the grants of the levels above it, and leaves the level
// below (revoking write leaves read; revoking read removes all access).
func revokeSet(t authz.Tuple, level string) (remove []authz.Tuple, leave *authz.Tuple) {
	typ, _, _ := authz.ParseObject(t.Object)
	order := levelOrder[typ]
	i := slices.Index(order, level)
	if i < 0 {
		return []authz.Tuple{t}, nil
	}
	for _, l := range order[i:] {
		remove = append(remove, authz.Tuple{User: t.User, Relation: gate.Levels[typ][l].Rel, Object: t.Object})
	}
	if i > 0 {
		leave = &authz.Tuple{User: t.User, Relation: gate.Levels[typ][order[i-1]].Rel, Object: t.Object}
	}
	return remove, leave
}

// seeRelation is the relation that makes an object visible to a caller.
var seeRelation = map[string]authz.Relation{
	authz.TypeModel: authz.Reader, authz.TypeController: authz.Reader, authz.TypeOrganization: authz.Member,
}

// resolveGrant validates req and returns the tuple it names plus the audit
// annotations. Only administrators of the target may grant on it.
func (s accessAPI) resolveGrant(ctx context.Context, p authn.Principal, req GrantRequest, grant bool) (authz.Tuple, *auditInfo, error) {
	bad := func(format string, args ...any) (authz.Tuple, *auditInfo, error) {
		return authz.Tuple{}, nil, badGrant(format, args...)
	}
	info := &auditInfo{}
	var typ, object string
	switch {
	case req.Model != "" && req.Controller == "" && req.Organization == "":
		if _, err := uuid.Parse(req.Model); err != nil {
			return bad("model must be a UUID")
		}
		typ, object, info.ModelUUID = authz.TypeModel, authz.ModelObject(req.Model), req.Model
	case req.Controller != "" && req.Model == "" && req.Organization == "":
		c, err := s.controllerFor(ctx, p, req.Controller, authz.Reader)
		if err != nil {
			return authz.Tuple{}, nil, err
		}
		typ, object, info.ControllerUUID, info.Org = authz.TypeController, authz.ControllerObject(c.UUID), c.UUID, c.Org
	case req.Organization != "" && req.Model == "" && req.Controller == "":
		typ, object, info.Org = authz.TypeOrganization, authz.OrgObject(req.Organization), req.Organization
	default:
		return bad("give exactly one of model, controller and organization")
	}
	lv, ok := gate.Levels[typ][req.Level]
	if !ok {
		return bad("level %q is not valid on %s (%s)", req.Level, article(typ), strings.Join(slices.Sorted(maps.Keys(gate.Levels[typ])), ", "))
	}
	if err := s.gate.Require(ctx, p, authz.Administrator, seeRelation[typ], object); err != nil {
		// A refused grant is recorded against what it asked for, as a
		// refused model request is: its auditors see the attempt.
		return authz.Tuple{}, info, err
	}
	if m, err := s.store.Models.ByUUID(ctx, req.Model); typ == authz.TypeModel && err == nil {
		info.Org, info.ControllerUUID = m.Org, m.ControllerUUID
	}
	subject, err := s.grantSubject(ctx, p, req, grant, lv.Public, typ, info)
	if err != nil {
		// Recorded against its target too, whoever it named (or nobody).
		return authz.Tuple{}, info, err
	}
	return authz.Tuple{User: subject, Relation: lv.Rel, Object: object}, info, nil
}

// grantSubject resolves the user or group a grant names into an OpenFGA
// subject; public says whether the level may be granted to everyone.
func (s accessAPI) grantSubject(ctx context.Context, p authn.Principal, req GrantRequest, grant, public bool, typ string, info *auditInfo) (string, error) {
	switch {
	case req.User != "" && req.Group == "":
		if req.User == "everyone" {
			if !public {
				return "", badGrant("level %q cannot be granted to everyone", req.Level)
			}
			if typ == authz.TypeController && info.Org != "" {
				// Everyone spans every tenant (ADR 0021).
				return "", badGrant("controller %s belongs to organization %s: grant %s to its users or groups, not to everyone",
					req.Controller, info.Org, req.Level)
			}
			return authz.Everyone, nil
		}
		var id store.Identity
		var err error
		switch {
		case grant && strings.Contains(req.User, "@"):
			id, err = s.identityOrPending(ctx, req.User)
		case grant:
			id, err = s.seenIdentity(ctx, p, req.User)
		default:
			id, err = s.identityByRef(ctx, req.User)
		}
		if err != nil {
			return "", err
		}
		info.subject = id
		if grant && strings.Contains(req.User, "@") && s.answeredAsPending(ctx, p, id) {
			info.Details = map[string]any{"pending-user": id.Email}
		}
		return authz.UserObject(id.ID), nil
	case req.Group != "" && req.User == "":
		org, name, ok := strings.Cut(req.Group, "/")
		if !ok {
			return "", badGrant("group must be ORG/NAME")
		}
		g, err := s.store.Groups.ByName(ctx, org, name)
		if err != nil {
			return "", unknownGroup(req.Group)
		}
		if grant {
			// Another organization's groups are its own business: a grant
			// to one is answered as for a group nobody made, so nobody
			// learns another tenant's group names by trying them.
			if seen, err := s.seesGroup(ctx, p, g); err != nil || !seen {
				return "", cmp.Or(err, unknownGroup(req.Group))
			}
		}
		return authz.GroupMembers(g.ID), nil
	default:
		return "", badGrant("give exactly one of user and group")
	}
}

// badGrant is a grant request refused for its content.
func badGrant(format string, args ...any) error {
	return fmt.Errorf("%w: %s", reply.ErrBadRequest, fmt.Sprintf(format, args...))
}

// unknownGroup is the answer for a group that does not exist, or that the
// caller may not know of.
func unknownGroup(ref string) error { return fmt.Errorf("%w: group %q", reply.ErrNotFound, ref) }

// seesGroup reports whether p may know of g: a member of its organization
// (its administrators and the hub's included).
func (s accessAPI) seesGroup(ctx context.Context, p authn.Principal, g store.Group) (bool, error) {
	return s.gate.Check(ctx, p, authz.Member, authz.OrgObject(g.Org))
}

// seesGroupNamed is seesGroup for ORG/NAME; false when it cannot tell.
func (s accessAPI) seesGroupNamed(ctx context.Context, p authn.Principal, ref string) bool {
	org, name, _ := strings.Cut(ref, "/")
	g, err := s.store.Groups.ByName(ctx, org, name)
	if err != nil {
		return false
	}
	seen, err := s.seesGroup(ctx, p, g)
	return err == nil && seen
}

// article names an object type with its indefinite article.
func article(typ string) string {
	if strings.ContainsRune("aeiou", rune(typ[0])) {
		return "an " + typ
	}
	return "a " + typ
}

// identityByRef finds a user by email, a service account by its client
// id, or either by identity id.
func (s *Server) identityByRef(ctx context.Context, ref string) (store.Identity, error) {
	var id store.Identity
	var err error
	switch {
	case strings.Contains(ref, "@"):
		id, err = s.store.Identities.ByEmail(ctx, ref)
	case uuid.Validate(ref) == nil:
		id, err = s.store.Identities.ByID(ctx, ref)
	default:
		id, err = s.store.Identities.ByClientID(ctx, ref)
	}
	if err != nil {
		return id, unknownUser(ref)
	}
	return id, nil
}

func (s accessAPI) handleGrant(w http.ResponseWriter, r *http.Request)  { s.changeGrant(w, r, true) }
func (s accessAPI) handleRevoke(w http.ResponseWriter, r *http.Request) { s.changeGrant(w, r, false) }

func (s accessAPI) changeGrant(w http.ResponseWriter, r *http.Request, grant bool) {
	p, _ := authn.PrincipalFrom(r.Context())
	var req GrantRequest
	if err := reply.Decode(r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	t, info, err := s.resolveGrant(r.Context(), p, req, grant)
	if err != nil {
		if info != nil {
			annotate(r.Context(), func(a *auditInfo) {
				a.Org, a.ModelUUID, a.ControllerUUID = info.Org, info.ModelUUID, info.ControllerUUID
			})
		}
		s.writeError(w, r, err)
		return
	}
	annotate(r.Context(), func(a *auditInfo) {
		a.Org, a.ModelUUID, a.ControllerUUID = info.Org, info.ModelUUID, info.ControllerUUID
		a.Details = map[string]any{"tuple": t.String()}
		maps.Copy(a.Details, info.Details)
	})
	if grant {
		err = s.store.Grants.Add(r.Context(), t)
	} else {
		remove, leave := revokeSet(t, req.Level)
		if err = s.store.Grants.Revoke(r.Context(), remove, leave); errors.Is(err, store.ErrNotFound) {
			// Named as the caller named them, not as tuples. Another
			// organization's group granted nothing here is, as for a grant,
			// a group nobody made (one granted something is revoked: the
			// target's administrators see who holds access to it).
			err = fmt.Errorf("%w: %s holds no %s access on %s (nothing to revoke; inherited access is revoked where it is granted)",
				reply.ErrNotFound, cmp.Or(req.User, "group "+req.Group), req.Level, s.grantTarget(r.Context(), req))
			switch {
			case req.Group != "" && !s.seesGroupNamed(r.Context(), p, req.Group):
				err = unknownGroup(req.Group)
			case req.User != "" && req.User != "everyone":
				var hidden bool
				if hidden, err = s.heldNothing(r.Context(), p, info.subject, req.User, err); hidden {
					// Recorded as a revoke naming nobody is: without the tuple.
					annotate(r.Context(), func(a *auditInfo) { a.Details = nil })
				}
			}
		}
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.gate.AwaitAuthz(r.Context())
	if u, ok := info.Details["pending-user"]; ok {
		reply.JSON(w, http.StatusOK, GrantResponse{PendingUser: u.(string)})
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// GrantResponse is the answer to a grant or to adding a group member that
// named, by email, someone who has not logged in yet (otherwise the answer
// is 204, with no body).
type GrantResponse struct {
	// PendingUser is that email: the access applies from their first login
	// with the issuer vouching for the email (email_verified).
	PendingUser string `json:"pending-user,omitempty"`
}

// identityOrPending is identityByRef for a grant or a new group member:
// an email nobody has logged in with yet names a pending identity (see
// store.Identities.Pending), created in the organization first logins go to.
func (s accessAPI) identityOrPending(ctx context.Context, ref string) (store.Identity, error) {
	id, err := s.identityByRef(ctx, ref)
	if err == nil || !strings.Contains(ref, "@") {
		return id, err
	}
	if a, perr := mail.ParseAddress(ref); perr != nil || a.Address != ref || a.Name != "" {
		return id, fmt.Errorf("%w: user %q: not an email address, a service account's client id or an identity id", reply.ErrBadRequest, ref)
	}
	return s.store.Identities.Pending(ctx, ref, s.cfg.DefaultOrg)
}

// grantTarget names a grant's target as people do: a model by its name.
func (s accessAPI) grantTarget(ctx context.Context, req GrantRequest) string {
	switch {
	case req.Model != "":
		if m, err := s.store.Models.ByUUID(ctx, req.Model); err == nil {
			return "model " + m.Name
		}
		return "model " + req.Model
	case req.Controller != "":
		return "controller " + req.Controller
	}
	return "organization " + req.Organization
}

// handleCreateGroup creates a group in an organization the caller
// administers.
func (s accessAPI) handleCreateGroup(w http.ResponseWriter, r *http.Request) {
	p, _ := authn.PrincipalFrom(r.Context())
	var req struct {
		Org  string `json:"org"`
		Name string `json:"name"`
	}
	if err := reply.Decode(r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	if req.Org == "" {
		req.Org = p.Identity.Org
	}
	annotate(r.Context(), func(a *auditInfo) { a.Org = req.Org })
	if err := s.gate.Require(r.Context(), p, authz.Administrator, authz.Member, authz.OrgObject(req.Org)); err != nil {
		s.writeError(w, r, err)
		return
	}
	g, err := s.store.Groups.Create(r.Context(), req.Org, req.Name)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	reply.JSON(w, http.StatusCreated, g)
}

// groupForAdmin loads the {group} of the path, its id or ORG/NAME (the
// slash escaped), and checks that the caller administers the group's
// organization.
func (s accessAPI) groupForAdmin(r *http.Request) (store.Group, error) {
	return s.groupFor(r, authz.Administrator)
}

// groupToChange is groupForAdmin for a change of the group's members, or
// its removal: one whose members administer the hub needs a hub
// administrator, as those members do (notAbove).
func (s accessAPI) groupToChange(r *http.Request) (store.Group, error) {
	g, err := s.groupForAdmin(r)
	if err != nil {
		return g, err
	}
	p, _ := authn.PrincipalFrom(r.Context())
	return g, s.notAbove(r.Context(), p, authz.GroupMembers(g.ID), "group "+g.Org+"/"+g.Name)
}

// groupFor is groupForAdmin for rel on the group's organization: the
// organization's members may see the group (others get 404), and only
// those with rel may go on (the others get 403).
func (s accessAPI) groupFor(r *http.Request, rel authz.Relation) (store.Group, error) {
	p, _ := authn.PrincipalFrom(r.Context())
	ref, err := url.PathUnescape(chi.URLParam(r, "group"))
	var g store.Group
	if err == nil {
		if org, name, ok := strings.Cut(ref, "/"); ok {
			g, err = s.store.Groups.ByName(r.Context(), org, name)
		} else {
			g, err = s.store.Groups.ByID(r.Context(), ref)
		}
	}
	if err != nil {
		return store.Group{}, unknownGroup(ref)
	}
	annotate(r.Context(), func(a *auditInfo) { a.Org = g.Org })
	return g, s.gate.Require(r.Context(), p, rel, authz.Member, authz.OrgObject(g.Org))
}

func (s accessAPI) handleAddMember(w http.ResponseWriter, r *http.Request) {
	var req struct {
		User string `json:"user"`
	}
	if err := reply.Decode(r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	g, err := s.groupToChange(r)
	var id store.Identity
	p, _ := authn.PrincipalFrom(r.Context())
	if err == nil {
		if strings.Contains(req.User, "@") {
			id, err = s.identityOrPending(r.Context(), req.User)
		} else {
			id, err = s.seenIdentity(r.Context(), p, req.User)
		}
		if err == nil {
			err = s.store.Groups.AddMember(r.Context(), g.ID, id.ID)
		}
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.gate.AwaitAuthz(r.Context())
	if strings.Contains(req.User, "@") && s.answeredAsPending(r.Context(), p, id) {
		annotate(r.Context(), func(a *auditInfo) { a.Details = map[string]any{"pending-user": id.Email} })
		reply.JSON(w, http.StatusOK, GrantResponse{PendingUser: id.Email})
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s accessAPI) handleRemoveMember(w http.ResponseWriter, r *http.Request) {
	if err := s.removeMember(r); err != nil {
		s.writeError(w, r, err)
		return
	}
	s.gate.AwaitAuthz(r.Context())
	w.WriteHeader(http.StatusNoContent)
}

// removeMember removes the {member} of the path (an email, a service
// account's client id or an identity id) from the {group}.
func (s accessAPI) removeMember(r *http.Request) error {
	g, err := s.groupToChange(r)
	if err != nil {
		return err
	}
	member, err := url.PathUnescape(chi.URLParam(r, "member"))
	if err != nil {
		return fmt.Errorf("%w: member: %w", reply.ErrBadRequest, err)
	}
	id, err := s.identityByRef(r.Context(), member)
	if err != nil {
		return err
	}
	err = s.store.Groups.RemoveMember(r.Context(), g.ID, id.ID)
	if errors.Is(err, store.ErrNotFound) {
		p, _ := authn.PrincipalFrom(r.Context())
		_, err = s.heldNothing(r.Context(), p, id, member, err)
	}
	return err
}
