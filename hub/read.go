package hub

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/authz"
	"github.com/droverhq/drover/hub/internal/authn"
	"github.com/droverhq/drover/hub/internal/reply"
	"github.com/droverhq/drover/hub/internal/store"
)

// readAPI serves the listings and the reads of organizations, controllers and models. It is the hub's Server seen through those handlers.
type readAPI struct{ *Server }

func (s readAPI) handleListOrgs(w http.ResponseWriter, r *http.Request) {
	p, _ := authn.PrincipalFrom(r.Context())
	names, err := s.gate.List(r.Context(), p, authz.Member, authz.TypeOrganization)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	orgs, err := s.store.Organizations.List(r.Context(), names)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	reply.JSON(w, http.StatusOK, map[string]any{"organizations": nonNil(orgs)})
}

func (s readAPI) handleListControllers(w http.ResponseWriter, r *http.Request) {
	p, _ := authn.PrincipalFrom(r.Context())
	uuids, err := s.gate.List(r.Context(), p, authz.Reader, authz.TypeController)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	cs, err := s.store.Controllers.List(r.Context(), uuids, false)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	for i := range cs {
		cs[i].CACert = "" // the list stays small; GET /v1/controllers/{name} has it
	}
	reply.JSON(w, http.StatusOK, map[string]any{"controllers": nonNil(cs)})
}

func (s readAPI) handleGetController(w http.ResponseWriter, r *http.Request) {
	p, _ := authn.PrincipalFrom(r.Context())
	c, err := s.controllerFor(r.Context(), p, chi.URLParam(r, "name"), authz.Reader)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	reply.JSON(w, http.StatusOK, c)
}

// controllerFor loads the controller registered as name for a caller who
// needs rel on it. One the caller cannot see is not found, by the name
// given, exactly as one that does not exist (nothing of it, such as its
// UUID, is told); one they see without rel is refused.
func (s *Server) controllerFor(ctx context.Context, p authn.Principal, name string, rel authz.Relation) (store.Controller, error) {
	c, err := s.store.Controllers.ByName(ctx, name)
	if err == nil {
		err = s.gate.Require(ctx, p, rel, authz.Reader, authz.ControllerObject(c.UUID))
	}
	if errors.Is(err, store.ErrNotFound) || errors.Is(err, reply.ErrNotFound) {
		return store.Controller{}, fmt.Errorf("%w: controller %q", reply.ErrNotFound, name)
	}
	return c, err
}

func (s readAPI) handleGetModel(w http.ResponseWriter, r *http.Request) {
	p, _ := authn.PrincipalFrom(r.Context())
	id := chi.URLParam(r, "uuid")
	if err := s.gate.Require(r.Context(), p, authz.Reader, authz.Reader, authz.ModelObject(id)); err != nil {
		s.writeError(w, r, err)
		return
	}
	m, err := s.store.Models.DetailByUUID(r.Context(), id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	// Its users, as Juju's show-model lists them, for those who manage
	// who may use it: the model's administrators.
	admin, err := s.gate.Check(r.Context(), p, authz.Administrator, authz.ModelObject(id))
	if err == nil && admin {
		m.Users, err = s.store.Models.Users(r.Context(), id)
	}
	var last *api.Migration
	if err == nil {
		last, err = s.lastMigration(r.Context(), id)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	reply.JSON(w, http.StatusOK, struct {
		store.ModelDetail
		LastMigration *api.Migration `json:"last-migration,omitempty"`
	}{m, last})
}

func nonNil[T any](xs []T) []T {
	if xs == nil {
		return []T{}
	}
	return xs
}
