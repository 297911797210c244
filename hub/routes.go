package hub

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/droverhq/drover/authz"
	"github.com/droverhq/drover/hub/internal/store"
)

// Check reports whether the caller has relation on object. Code mounted
// with Mount uses it for its own routes.
func (s *Server) Check(ctx context.Context, p Principal, rel authz.Relation, object string) (bool, error) {
	return s.decisions.lookup(decisionKey{user: p.Object, rel: rel, object: object}, func() (bool, error) {
		return s.authz.Check(ctx, p.Object, rel, object)
	})
}

// require answers nil when the caller has rel on object. Otherwise it
// answers errNotFound when the caller cannot even see the object (see is
// the relation that reveals it), so nobody learns what exists in another
// tenant, and errForbidden when they can see it but not do this.
func (s *Server) require(ctx context.Context, p Principal, rel, see authz.Relation, object string) error {
	ok, err := s.Check(ctx, p, rel, object)
	if err != nil || ok {
		return err
	}
	if see != rel {
		visible, err := s.Check(ctx, p, see, object)
		if err != nil {
			return err
		}
		if visible {
			return fmt.Errorf("%w: %s needs %s access to %s", errForbidden, p.Identity.Name(), levelOf(object, rel), s.describeFor(ctx, p, object))
		}
	}
	return fmt.Errorf("%w: %s", errNotFound, object)
}

// levelOf names rel on object's type as drover grant does ("write" on a
// model, "superuser" on a controller); the relation itself where no level
// maps to it.
func levelOf(object string, rel authz.Relation) string {
	typ, _, _ := authz.ParseObject(object)
	for name, l := range levels[typ] {
		if l.rel == rel {
			return name
		}
	}
	return string(rel)
}

// describe names an object for people: "model prod", "controller east",
// "organization acme", "the hub"; the raw object when it is not indexed.
func (s *Server) describe(ctx context.Context, object string) string {
	typ, id, err := authz.ParseObject(object)
	if err != nil {
		return object
	}
	switch typ {
	case authz.TypeModel:
		if m, err := s.store.Models.ByUUID(ctx, id); err == nil {
			return "model " + m.Name
		}
	case authz.TypeController:
		if c, err := s.store.Controllers.ByUUID(ctx, id); err == nil {
			return "controller " + c.Name
		}
	case authz.TypeOrganization:
		return "organization " + id
	case authz.TypeHub:
		return "the hub"
	}
	return object
}

// describeFor is describe as p knows the object: another owner's model is
// OWNER/NAME, as drover lists it (the name alone means p's own).
func (s *Server) describeFor(ctx context.Context, p Principal, object string) string {
	if typ, id, err := authz.ParseObject(object); err == nil && typ == authz.TypeModel {
		if m, err := s.store.Models.ByUUID(ctx, id); err == nil && m.OwnerName != "" && m.Owner != p.Identity.ID {
			return "model " + m.OwnerName + "/" + m.Name
		}
	}
	return s.describe(ctx, object)
}

// list returns the ids of the objects of typ on which the caller has rel:
// one ListObjects call, never a Check per row, reused for decisionTTL.
func (s *Server) list(ctx context.Context, p Principal, rel authz.Relation, typ string) ([]string, error) {
	return s.listings.lookup(decisionKey{user: p.Object, rel: rel, typ: typ}, func() ([]string, error) {
		objs, err := s.authz.ListObjects(ctx, p.Object, rel, typ)
		return ids(objs), err
	})
}

func (s *Server) handleListOrgs(w http.ResponseWriter, r *http.Request) {
	p, _ := PrincipalFrom(r.Context())
	names, err := s.list(r.Context(), p, authz.Member, authz.TypeOrganization)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	orgs, err := s.store.Organizations.List(r.Context(), names)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"organizations": nonNil(orgs)})
}

func (s *Server) handleListControllers(w http.ResponseWriter, r *http.Request) {
	p, _ := PrincipalFrom(r.Context())
	uuids, err := s.list(r.Context(), p, authz.Reader, authz.TypeController)
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
	writeJSON(w, http.StatusOK, map[string]any{"controllers": nonNil(cs)})
}

func (s *Server) handleGetController(w http.ResponseWriter, r *http.Request) {
	p, _ := PrincipalFrom(r.Context())
	c, err := s.controllerFor(r.Context(), p, chi.URLParam(r, "name"), authz.Reader)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, c)
}

// controllerFor loads the controller registered as name for a caller who
// needs rel on it. One the caller cannot see is not found, by the name
// given, exactly as one that does not exist (nothing of it, such as its
// UUID, is told); one they see without rel is refused.
func (s *Server) controllerFor(ctx context.Context, p Principal, name string, rel authz.Relation) (store.Controller, error) {
	c, err := s.store.Controllers.ByName(ctx, name)
	if err == nil {
		err = s.require(ctx, p, rel, authz.Reader, authz.ControllerObject(c.UUID))
	}
	if errors.Is(err, store.ErrNotFound) || errors.Is(err, errNotFound) {
		return store.Controller{}, fmt.Errorf("%w: controller %q", errNotFound, name)
	}
	return c, err
}

func (s *Server) handleGetModel(w http.ResponseWriter, r *http.Request) {
	p, _ := PrincipalFrom(r.Context())
	id := chi.URLParam(r, "uuid")
	if err := s.require(r.Context(), p, authz.Reader, authz.Reader, authz.ModelObject(id)); err != nil {
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
	admin, err := s.Check(r.Context(), p, authz.Administrator, authz.ModelObject(id))
	if err == nil && admin {
		m.Users, err = s.store.Models.Users(r.Context(), id)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, m)
}

func nonNil[T any](xs []T) []T {
	if xs == nil {
		return []T{}
	}
	return xs
}
