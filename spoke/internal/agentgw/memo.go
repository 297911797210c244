package agentgw

import (
	"sync"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/spoke/internal/lookup"
	"github.com/droverhq/drover/spoke/internal/state"
)

// storeVersion names the data a snapshot holds: equal versions, equal data.
type storeVersion struct {
	gen, index uint64
}

// buildMemo shares, between the machine-state builds of one store version,
// the parts that do not depend on the machine: the model's settings, each
// application's config, lease and relations, and each non-container
// relation as its applications' units see it. One event batch wakes many
// connections, which then build from the same version, so a change to
// kv's application bag costs one relation lookup for all N web units
// instead of N. Parts are shared read-only by the states that use them.
// A few recent versions are kept, since writes keep landing while a
// fan-out is under way; a build from an older version computes everything
// itself.
type buildMemo struct {
	// mu guards the fields below; parts are computed under it.
	mu       sync.Mutex
	versions [memoVersions]*memoVersion
}

// memoVersions is how many store versions the memo keeps.
const memoVersions = 4

// memoVersion holds the parts of one store version.
type memoVersion struct {
	v      storeVersion
	models map[string]*modelPart
	apps   map[appKey]*appPart
	rels   map[relKey]*api.RelationRemoteState
}

type appKey struct{ model, app string }

type relKey struct {
	model    string
	id       int
	localApp string
}

// modelPart is what every machine of a model shares.
type modelPart struct {
	m           *api.Model
	interval    time.Duration
	autoRetry   bool
	controllers []string
}

// appPart is what every unit of an application shares.
type appPart struct {
	a             *api.Application
	config        map[string]any
	lease         *api.Lease // nil if none
	leaderVersion int
	rels          []*api.Relation
}

func (v storeVersion) before(w storeVersion) bool {
	return v.gen < w.gen || (v.gen == w.gen && v.index < w.index)
}

// lockFor takes mu and returns the parts of version v, making room for it
// if it is newer than the oldest kept; it returns nil, without mu, if v is
// too old.
func (b *buildMemo) lockFor(v storeVersion) *memoVersion {
	if b == nil {
		return nil
	}
	b.mu.Lock()
	oldest := 0
	for i, e := range b.versions {
		if e == nil {
			oldest = i
			break
		}
		if e.v == v {
			return e
		}
		if e.v.before(b.versions[oldest].v) {
			oldest = i
		}
	}
	if o := b.versions[oldest]; o != nil && !o.v.before(v) {
		b.mu.Unlock()
		return nil
	}
	e := &memoVersion{v: v, models: map[string]*modelPart{}, apps: map[appKey]*appPart{},
		rels: map[relKey]*api.RelationRemoteState{}}
	b.versions[oldest] = e
	return e
}

// memoized returns part(e)[k] for version v, computing and recording it on
// a miss.
func memoized[K comparable, V any](b *buildMemo, v storeVersion, part func(e *memoVersion) map[K]V, k K, compute func() (V, error)) (V, error) {
	e := b.lockFor(v)
	if e == nil {
		return compute()
	}
	defer b.mu.Unlock()
	m := part(e)
	if p, ok := m[k]; ok {
		return p, nil
	}
	p, err := compute()
	if err == nil {
		m[k] = p
	}
	return p, err
}

func (b *buildMemo) model(snap *state.Snapshot, v storeVersion, uuid string) (*modelPart, error) {
	return memoized(b, v, func(e *memoVersion) map[string]*modelPart { return e.models }, uuid, func() (*modelPart, error) {
		m, err := lookup.Model(snap, uuid)
		if err != nil {
			return nil, err
		}
		p := &modelPart{m: m, interval: configDuration(m.Config[cfgUpdateStatusInterval], defaultUpdateStatus),
			autoRetry: configBool(m.Config[cfgAutoRetry], true)}
		nodes, err := snap.ListControllerNodes()
		if err != nil {
			return nil, err
		}
		for _, n := range nodes {
			if n.APIAddr != "" {
				p.controllers = append(p.controllers, n.APIAddr)
			}
		}
		return p, nil
	})
}

func (b *buildMemo) app(g *Gateway, snap *state.Snapshot, v storeVersion, model, name string) (*appPart, error) {
	return memoized(b, v, func(e *memoVersion) map[appKey]*appPart { return e.apps }, appKey{model, name}, func() (*appPart, error) {
		a, err := lookup.Application(snap, model, name)
		if err != nil {
			return nil, err
		}
		p := &appPart{a: a}
		if p.config, err = g.effectiveConfig(snap, a); err != nil {
			return nil, err
		}
		if p.lease, err = snap.LeaseByApp(model, name); err != nil {
			return nil, err
		}
		if ls, err := snap.LeaderSettingsByApp(model, name); err != nil {
			return nil, err
		} else if ls != nil {
			p.leaderVersion = ls.Version
		}
		if p.rels, err = snap.RelationsByApplication(model, name); err != nil {
			return nil, err
		}
		return p, nil
	})
}

// relation is non-container relation r as every unit of localApp sees it,
// but with Joined unset and, for peers, the unit itself among Members.
func (b *buildMemo) relation(snap *state.Snapshot, v storeVersion, model string, r *api.Relation, local, remote *api.RelationEndpoint) (*api.RelationRemoteState, error) {
	k := relKey{model, r.ID, local.Application}
	return memoized(b, v, func(e *memoVersion) map[relKey]*api.RelationRemoteState { return e.rels }, k, func() (*api.RelationRemoteState, error) {
		rrs := &api.RelationRemoteState{ID: r.ID, Endpoint: local.Name, Interface: local.Interface, Role: local.Role,
			Scope: local.Scope, RemoteApp: remote.Application, Life: r.Life, Members: map[string]int{}}
		others, err := snap.UnitsByApplication(model, remote.Application)
		if err != nil {
			return nil, err
		}
		for _, o := range others {
			if err := addMember(snap, model, r.ID, o.Name, rrs.Members); err != nil {
				return nil, err
			}
		}
		if bag, err := snap.RelationDataBag(model, r.ID, remote.Application, true); err != nil {
			return nil, err
		} else if bag != nil {
			rrs.AppVersion = bag.Version
		}
		return rrs, nil
	})
}

// addMember records unit's bag version in members if it is in r's scope.
func addMember(snap *state.Snapshot, model string, relID int, unit string, members map[string]int) error {
	in, err := snap.InScope(model, relID, unit)
	if err != nil || !in {
		return err
	}
	v := 0
	if bag, err := snap.RelationDataBag(model, relID, unit, false); err != nil {
		return err
	} else if bag != nil {
		v = bag.Version
	}
	members[unit] = v
	return nil
}
