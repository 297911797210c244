package hub

import (
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/authz"
	"github.com/droverhq/drover/hub/internal/authn"
	"github.com/droverhq/drover/hub/internal/reply"
	"github.com/droverhq/drover/hub/internal/store"
)

// handleComplianceCharms answers GET /v1/compliance/charms[?org=O]: the
// charms of the models the caller may read, as GET /v1/models lists them
// (the hub's administrators and audit viewers: every model), from the
// index alone.
func (s *Server) handleComplianceCharms(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	p, _ := authn.PrincipalFrom(ctx)
	scope := store.CharmScope{Org: r.URL.Query().Get("org")}
	var err error
	for _, rel := range []authz.Relation{authz.Administrator, authz.AuditViewer} {
		if !scope.All && err == nil {
			scope.All, err = s.authz.Check(ctx, p.Object, rel, authz.HubObject())
		}
	}
	if err == nil && !scope.All {
		var v store.Visibility
		if v, err = (readAPI{s}).visibility(ctx, p); err == nil {
			scope.Models, err = s.store.Models.VisibleKeys(ctx, v, nil)
		}
	}
	var placed []store.CharmPlacement
	if err == nil {
		placed, err = s.store.Models.ListCharms(ctx, scope)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := api.CharmInventory{Charms: make([]api.CharmPlacement, 0, len(placed))}
	for _, c := range placed {
		out.Charms = append(out.Charms, api.CharmPlacement{Org: c.Org, Controller: c.Controller, ControllerUUID: c.ControllerUUID,
			Region: c.Region, ModelUUID: c.ModelUUID, Model: c.Model, CharmInUse: api.CharmInUse{Application: c.Application,
				Charm: c.Charm.Charm, Revision: c.Revision, SHA256: c.SHA256, Units: c.Units}})
	}
	reply.JSON(w, http.StatusOK, out)
}

// handleComplianceAccess answers GET /v1/compliance/access[?org=O]
// [&format=csv|json]: the grants of authz_tuples (the hub's record of
// OpenFGA's tuples) with the names of their subjects and objects; to the
// hub's administrators every one, to an organization's administrators
// those on its objects, to anyone else 403. The review is a record taken
// out of the hub: audited (access-review-export) as the audit export is.
func (s *Server) handleComplianceAccess(w http.ResponseWriter, r *http.Request) {
	s.auditedRead(w, r, "access-review-export", []string{"org", "format"}, func(w http.ResponseWriter, details map[string]any, _ time.Time) {
		ctx := r.Context()
		p, _ := authn.PrincipalFrom(ctx)
		v := r.URL.Query()
		format := v.Get("format")
		if format != "" && format != "json" && format != "csv" {
			s.writeError(w, r, fmt.Errorf("%w: format must be json or csv", reply.ErrBadRequest))
			return
		}
		scope := store.GrantScope{Org: v.Get("org")}
		var err error
		if scope.All, err = s.authz.Check(ctx, p.Object, authz.Administrator, authz.HubObject()); err == nil && !scope.All {
			var objs []string
			if objs, err = s.gate.List(ctx, p, authz.Administrator, authz.TypeOrganization); err == nil {
				scope.Orgs = objs
				switch {
				case len(objs) == 0:
					err = fmt.Errorf("%w: the access review is its administrators' (of the hub, or of an organization)", reply.ErrForbidden)
				case scope.Org != "" && !slices.Contains(objs, scope.Org):
					err = fmt.Errorf("%w: the access review of organization %q is its administrators'", reply.ErrForbidden, scope.Org)
				}
			}
		}
		var grants []store.Grant
		if err == nil {
			grants, err = s.store.Grants.Review(ctx, scope, s.cfg.exportRows)
		}
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		details["rows"] = len(grants)
		if format != "csv" {
			out := api.AccessReview{Grants: make([]api.ReviewedGrant, 0, len(grants))}
			for _, g := range grants {
				out.Grants = append(out.Grants, api.ReviewedGrant{Subject: g.Subject, SubjectName: g.SubjectName, Relation: g.Relation,
					Object: g.Object, ObjectName: g.ObjectName, Org: g.Org, Since: g.Since.UTC()})
			}
			reply.JSON(w, http.StatusOK, out)
			return
		}
		attachment(w, "access", "csv", s.cfg.Now())
		t, err := newTable(w, "subject", "subject_name", "relation", "object", "object_name", "org", "since")
		for i := 0; err == nil && i < len(grants); i++ {
			g := grants[i]
			err = t.row(g.Subject, g.SubjectName, g.Relation, g.Object, g.ObjectName, g.Org, g.Since.UTC().Format(time.RFC3339Nano))
			if err == nil && (i+1)%exportPage == 0 {
				err = t.flush()
			}
		}
		if err == nil {
			err = t.flush()
		}
		if err != nil {
			details["error"] = err.Error()
			s.cfg.Logger.Warn("access review export cut off", "err", err)
			panic(http.ErrAbortHandler)
		}
	})
}
