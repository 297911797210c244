// Package gate decides what a caller may do: Check and Require answer
// whether a Principal holds a relation on an object (OpenFGA), List which
// objects of a type it holds one on, and Levels names the relations in
// Juju's access levels.
//
// Decisions and listings are reused for Config.TTL. This hub replica drops
// every one as soon as its outbox writes a tuple to OpenFGA, so grants and
// revocations made through it apply at once; one made through another
// replica applies when Follow hears of it, and within the TTL at worst.
package gate

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/droverhq/drover/authz"
	"github.com/droverhq/drover/hub/internal/authn"
	"github.com/droverhq/drover/hub/internal/reply"
	"github.com/droverhq/drover/hub/internal/store"
	"github.com/droverhq/drover/hub/internal/ttlcache"
)

// Config is what the gate needs.
type Config struct {
	Authz *authz.Client
	Store *store.Store
	// TTL bounds how long a decision or listing is reused (see the
	// package comment).
	TTL    time.Duration
	Logger *slog.Logger
	Now    func() time.Time
	// Kick wakes the outbox worker (AwaitAuthz).
	Kick func()
	// Changed drops every cache on this replica that rests on
	// permissions, this package's among them (Forget): called when any
	// replica delivered permission changes.
	Changed func()
	// KeysChanged reloads the signing keys another replica changed.
	KeysChanged func(context.Context)
	// SessionEnded drops what this replica holds of session sid, which
	// ended on some replica (logout, a refresh token presented again),
	// and nothing else: a session's end changes no permission.
	SessionEnded func(sid string)
}

// Gate answers the hub's authorization questions.
type Gate struct {
	cfg   Config
	authz *authz.Client
	store *store.Store
	// decisions and listings cache Check and List answers for Config.TTL;
	// Forget clears them.
	decisions *ttlcache.Cache[decisionKey, bool]
	listings  *ttlcache.Cache[decisionKey, []string]
}

// New builds a gate from a complete cfg.
func New(cfg Config) (*Gate, error) {
	if cfg.Authz == nil || cfg.Store == nil || cfg.Logger == nil || cfg.Now == nil ||
		cfg.Kick == nil || cfg.Changed == nil || cfg.KeysChanged == nil || cfg.SessionEnded == nil || cfg.TTL <= 0 {
		return nil, errors.New("gate: Config needs Authz, Store, Logger, Now, the hooks and a positive TTL")
	}
	return &Gate{cfg: cfg, authz: cfg.Authz, store: cfg.Store,
		decisions: ttlcache.New[decisionKey, bool](cfg.Now, cfg.TTL),
		listings:  ttlcache.New[decisionKey, []string](cfg.Now, cfg.TTL)}, nil
}

// decisionKey names a Check (object set) or a ListObjects (typ set).
type decisionKey struct {
	user   string
	rel    authz.Relation
	object string
	typ    string
}

// Forget drops every cached decision and listing.
func (g *Gate) Forget() {
	g.decisions.Clear()
	g.listings.Clear()
}

// DecisionExpiry is when p's cached decision of rel on object expires, if
// it is cached: what rests on it must not outlive it.
func (g *Gate) DecisionExpiry(p authn.Principal, rel authz.Relation, object string) (time.Time, bool) {
	return g.decisions.Expiry(decisionKey{user: p.Object, rel: rel, object: object})
}

// Check reports whether the caller has relation on object, reusing a
// decision for Config.TTL.
func (g *Gate) Check(ctx context.Context, p authn.Principal, rel authz.Relation, object string) (bool, error) {
	return g.decisions.Lookup(decisionKey{user: p.Object, rel: rel, object: object}, func() (bool, error) {
		return g.authz.Check(ctx, p.Object, rel, object)
	})
}

// Require answers nil when the caller has rel on object. Otherwise it
// answers reply.ErrNotFound when the caller cannot even see the object (see is
// the relation that reveals it), so nobody learns what exists in another
// tenant, and reply.ErrForbidden when they can see it but not do this.
func (g *Gate) Require(ctx context.Context, p authn.Principal, rel, see authz.Relation, object string) error {
	ok, err := g.Check(ctx, p, rel, object)
	if err != nil || ok {
		return err
	}
	if see != rel {
		visible, err := g.Check(ctx, p, see, object)
		if err != nil {
			return err
		}
		if visible {
			return fmt.Errorf("%w: %s needs %s access to %s", reply.ErrForbidden, p.Identity.Name(), LevelOf(object, rel), g.DescribeFor(ctx, p, object))
		}
	}
	return fmt.Errorf("%w: %s", reply.ErrNotFound, object)
}

// LevelOf names rel on object's type as drover grant does ("write" on a
// model, "superuser" on a controller); the relation itself where no level
// maps to it.
func LevelOf(object string, rel authz.Relation) string {
	typ, _, _ := authz.ParseObject(object)
	for name, l := range Levels[typ] {
		if l.Rel == rel {
			return name
		}
	}
	return string(rel)
}

// Describe names an object for people: "model prod", "controller east",
// "organization acme", "the hub"; the raw object when it is not indexed.
func (g *Gate) Describe(ctx context.Context, object string) string {
	typ, id, err := authz.ParseObject(object)
	if err != nil {
		return object
	}
	switch typ {
	case authz.TypeModel:
		if m, err := g.store.Models.ByUUID(ctx, id); err == nil {
			return "model " + m.Name
		}
	case authz.TypeController:
		if c, err := g.store.Controllers.ByUUID(ctx, id); err == nil {
			return "controller " + c.Name
		}
	case authz.TypeOrganization:
		return "organization " + id
	case authz.TypeHub:
		return "the hub"
	}
	return object
}

// DescribeFor is Describe as p knows the object: another owner's model is
// OWNER/NAME, as drover lists it (the name alone means p's own).
func (g *Gate) DescribeFor(ctx context.Context, p authn.Principal, object string) string {
	if typ, id, err := authz.ParseObject(object); err == nil && typ == authz.TypeModel {
		if m, err := g.store.Models.ByUUID(ctx, id); err == nil && m.OwnerName != "" && m.Owner != p.Identity.ID {
			return "model " + m.OwnerName + "/" + m.Name
		}
	}
	return g.Describe(ctx, object)
}

// List returns the ids of the objects of typ on which the caller has rel:
// one ListObjects call, never a Check per row, reused for Config.TTL.
func (g *Gate) List(ctx context.Context, p authn.Principal, rel authz.Relation, typ string) ([]string, error) {
	return g.listings.Lookup(decisionKey{user: p.Object, rel: rel, typ: typ}, func() ([]string, error) {
		objs, err := g.authz.ListObjects(ctx, p.Object, rel, typ)
		return IDs(objs), err
	})
}

// IDs strips the type from ListObjects' "type:id" answers.
func IDs(objs []string) []string {
	out := make([]string, 0, len(objs))
	for _, o := range objs {
		if _, id, err := authz.ParseObject(o); err == nil {
			out = append(out, id)
		}
	}
	return out
}
