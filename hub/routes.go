package hub

import (
	"context"
	"fmt"

	"github.com/droverhq/drover/authz"
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
		if m, err := s.store.ModelByUUID(ctx, id); err == nil {
			return "model " + m.Name
		}
	case authz.TypeController:
		if c, err := s.store.ControllerByUUID(ctx, id); err == nil {
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
		if m, err := s.store.ModelByUUID(ctx, id); err == nil && m.OwnerName != "" && m.Owner != p.Identity.ID {
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
