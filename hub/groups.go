package hub

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"slices"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/authz"
	"github.com/droverhq/drover/hub/internal/authn"
	"github.com/droverhq/drover/hub/internal/gate"
	"github.com/droverhq/drover/hub/internal/reply"
	"github.com/droverhq/drover/hub/internal/store"
)

// Groups are seen by the members of their organization and managed by its
// administrators (a hub administrator is both, everywhere). Creating one
// and changing its members are in grants.go.

// handleListGroups answers GET /v1/groups[?org=ORG]: the groups of the
// organizations the caller is a member of (one ListObjects), with their
// member counts, by organization then name. An organization the caller is
// not a member of is 404, whether or not it exists.
func (s accessAPI) handleListGroups(w http.ResponseWriter, r *http.Request) {
	p, _ := authn.PrincipalFrom(r.Context())
	orgs, err := s.gate.List(r.Context(), p, authz.Member, authz.TypeOrganization)
	if org := r.URL.Query().Get("org"); err == nil && org != "" {
		if !slices.Contains(orgs, org) {
			err = fmt.Errorf("%w: organization %q", reply.ErrNotFound, org)
		}
		orgs = []string{org}
	}
	var gs []store.GroupSummary
	if err == nil {
		gs, err = s.store.Groups.List(r.Context(), orgs)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := make([]api.Group, len(gs))
	for i, g := range gs {
		out[i] = apiGroup(g.Group, g.Members)
	}
	reply.JSON(w, http.StatusOK, map[string]any{"groups": out})
}

// handleGetGroup answers GET /v1/groups/{group} for the members of the
// group's organization: the group, its members and the grants made to it.
func (s accessAPI) handleGetGroup(w http.ResponseWriter, r *http.Request) {
	d, err := s.groupDetails(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	reply.JSON(w, http.StatusOK, d)
}

func (s accessAPI) groupDetails(r *http.Request) (api.GroupDetails, error) {
	g, err := s.groupFor(r, authz.Member)
	if err != nil {
		return api.GroupDetails{}, err
	}
	members, err := s.store.Groups.ListMembers(r.Context(), g.ID)
	if err != nil {
		return api.GroupDetails{}, err
	}
	tuples, err := s.store.Groups.Grants(r.Context(), g.ID)
	if err != nil {
		return api.GroupDetails{}, err
	}
	// A grant on something the caller cannot see (another organization's
	// model granted to this group) is not theirs to learn of.
	p, _ := authn.PrincipalFrom(r.Context())
	visible := tuples[:0]
	for _, t := range tuples {
		typ, _, _ := authz.ParseObject(t.Object)
		see, ok := seeRelation[typ]
		if !ok {
			continue
		}
		if can, err := s.gate.Check(r.Context(), p, see, t.Object); err != nil {
			return api.GroupDetails{}, err
		} else if can {
			visible = append(visible, t)
		}
	}
	d := api.GroupDetails{Group: apiGroup(g, len(members)), Members: make([]api.GroupMember, len(members)),
		Grants: s.describeGrants(r.Context(), visible)}
	for i, m := range members {
		d.Members[i] = api.GroupMember{Name: m.Name, Kind: m.Kind}
	}
	return d, nil
}

// describeGrants names grants as drover grant takes them, by target and
// then level, lowest first.
func (s accessAPI) describeGrants(ctx context.Context, ts []authz.Tuple) []api.GroupGrant {
	out := make([]api.GroupGrant, len(ts))
	for i, t := range ts {
		out[i] = api.GroupGrant{Level: gate.LevelOf(t.Object, t.Relation), Target: s.gate.Describe(ctx, t.Object), Object: t.Object}
	}
	rank := func(g api.GroupGrant) int {
		typ, _, _ := authz.ParseObject(g.Object)
		if i := slices.Index(levelOrder[typ], g.Level); i >= 0 {
			return i
		}
		return len(levelOrder[typ]) // audit_viewer, on its own
	}
	slices.SortStableFunc(out, func(a, b api.GroupGrant) int {
		return cmp.Or(cmp.Compare(a.Target, b.Target), cmp.Compare(a.Object, b.Object), cmp.Compare(rank(a), rank(b)))
	})
	return out
}

func apiGroup(g store.Group, members int) api.Group {
	return api.Group{ID: g.ID, Org: g.Org, Name: g.Name, CreatedAt: g.CreatedAt, MemberCount: members}
}

// handleRemoveGroup answers DELETE /v1/groups/{group} for the
// organization's administrators: the group, its memberships and every
// grant made to it go in one transaction, so its members lose what it gave
// them, from their next request on.
func (s accessAPI) handleRemoveGroup(w http.ResponseWriter, r *http.Request) {
	g, err := s.groupToChange(r)
	annotateGroup(r.Context(), g)
	if err == nil {
		err = s.store.Groups.Remove(r.Context(), g.ID)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.gate.AwaitAuthz(r.Context())
	w.WriteHeader(http.StatusNoContent)
}

// handleRenameGroup answers PATCH /v1/groups/{group} {"name": NEW} for the
// organization's administrators. Tuples name the group by id: its members
// and grants stay as they are.
func (s accessAPI) handleRenameGroup(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Name string `json:"name"`
	}
	if err := reply.Decode(r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	g, err := s.groupForAdmin(r)
	annotateGroup(r.Context(), g)
	if err == nil {
		g, err = s.store.Groups.Rename(r.Context(), g.ID, req.Name)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	reply.JSON(w, http.StatusOK, g)
}

// annotateGroup records the group a request acted on, as it was called
// then, when it was found.
func annotateGroup(ctx context.Context, g store.Group) {
	if g.ID != "" {
		annotate(ctx, func(a *auditInfo) {
			a.Target = g.Org + "/" + g.Name
			a.Details = map[string]any{"group-id": g.ID}
		})
	}
}
