package hub

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/google/uuid"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/authz"
	"github.com/droverhq/drover/hub/internal/authn"
	"github.com/droverhq/drover/hub/internal/reply"
)

// accessLevels are the relations GET /v1/access reads as read, write and
// admin on each type of object (authz/model.fga): a controller's write is
// placing models on it; an organization's read is membership and its
// write adding models; everyone reads the hub, and its write and admin are
// its administration.
var accessLevels = map[string][3]authz.Relation{
	authz.TypeModel:        {authz.Reader, authz.Writer, authz.Administrator},
	authz.TypeController:   {authz.Reader, authz.CanAddModel, authz.Administrator},
	authz.TypeOrganization: {authz.Member, authz.CanAddModel, authz.Administrator},
	authz.TypeHub:          {"", authz.Administrator, authz.Administrator},
}

// parseAccessObject reads GET /v1/access's object: "hub",
// "organization:NAME", "controller:NAME-or-UUID" or "model:UUID".
func parseAccessObject(s string) (typ, id string, err error) {
	if s == authz.TypeHub {
		return authz.TypeHub, authz.HubID, nil
	}
	typ, id, ok := strings.Cut(s, ":")
	switch {
	case !ok || id == "" || strings.ContainsAny(id, ":#* \t\r\n"):
	case typ == authz.TypeModel:
		if uuid.Validate(id) == nil {
			return typ, id, nil
		}
	case typ == authz.TypeController, typ == authz.TypeOrganization:
		return typ, id, nil
	}
	return "", "", fmt.Errorf("%w: object must be hub, organization:NAME, controller:NAME or model:UUID", reply.ErrBadRequest)
}

// handleAccess answers the caller's read, write and admin on one object;
// one the caller cannot see is not found, as everywhere.
func (s accessAPI) handleAccess(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	p, _ := authn.PrincipalFrom(ctx)
	raw := r.URL.Query().Get("object")
	typ, id, err := parseAccessObject(raw)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var object string
	switch typ {
	case authz.TypeController:
		c, err := s.controllerFor(ctx, p, id, authz.Reader)
		if err != nil {
			// A controller may be named by UUID as well.
			if c2, err2 := s.store.Controllers.ByUUID(ctx, id); err2 == nil {
				c, err = s.controllerFor(ctx, p, c2.Name, authz.Reader)
			}
		}
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		object = authz.ControllerObject(c.UUID)
	default:
		object = typ + ":" + id
	}
	levels := accessLevels[typ]
	out := api.Access{Object: raw}
	got := [3]*bool{&out.Read, &out.Write, &out.Admin}
	for i, rel := range levels {
		if rel == "" {
			*got[i] = true
			continue
		}
		if *got[i], err = s.gate.Check(ctx, p, rel, object); err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	if !out.Read && !out.Admin {
		s.writeError(w, r, fmt.Errorf("%w: %s", reply.ErrNotFound, raw))
		return
	}
	reply.JSON(w, http.StatusOK, out)
}

// capabilities is what p may do on the hub as a whole (GET /v1/whoami's
// "can"), superuser already known.
func (s *Server) capabilities(ctx context.Context, p authn.Principal, superuser bool) (api.Capabilities, error) {
	c := api.Capabilities{Superuser: superuser, AdminOrgs: []string{}}
	var err error
	if c.AdminOrgs, err = s.gate.List(ctx, p, authz.Administrator, authz.TypeOrganization); err != nil {
		return c, err
	}
	if c.AdminOrgs == nil {
		c.AdminOrgs = []string{}
	}
	if c.AuditViewer, err = s.gate.Check(ctx, p, authz.AuditViewer, authz.HubObject()); err != nil {
		return c, err
	}
	for _, typ := range []string{authz.TypeOrganization, authz.TypeController, authz.TypeModel} {
		if c.AuditViewer {
			break
		}
		ids, err := s.gate.List(ctx, p, authz.AuditViewer, typ)
		if err != nil {
			return c, err
		}
		c.AuditViewer = len(ids) > 0
	}
	// Adding a model takes both: placing it on a controller, and owning
	// it in an organization.
	ctrls, err := s.gate.List(ctx, p, authz.CanAddModel, authz.TypeController)
	if err != nil || len(ctrls) == 0 {
		return c, err
	}
	orgs, err := s.gate.List(ctx, p, authz.CanAddModel, authz.TypeOrganization)
	c.AddModel = len(orgs) > 0
	return c, err
}
