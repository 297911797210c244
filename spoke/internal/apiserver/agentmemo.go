package apiserver

import (
	"sync"
	"time"

	"github.com/droverhq/drover/api"
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
// A build from an older version than the memo's computes everything
// itself; one from a newer version starts a new memo.
type buildMemo struct {
	// mu guards the fields below; parts are computed under it.
	mu     sync.Mutex
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

// lockFor takes mu if the memo serves version v (starting a new memo if v
// is newer) and reports whether it did.
func (b *buildMemo) lockFor(v storeVersion) bool {
	if b == nil {
		return false
	}
	b.mu.Lock()
	switch {
	case v == b.v && b.models != nil:
	case v.gen > b.v.gen || (v.gen == b.v.gen && v.index > b.v.index) || b.models == nil:
		b.v = v
		b.models = map[string]*modelPart{}
		b.apps = map[appKey]*appPart{}
		b.rels = map[relKey]*api.RelationRemoteState{}
	default:
		b.mu.Unlock()
		return false
	}
	return true
}

// memoized returns m[k], computing and recording it on a miss.
func memoized[K comparable, V any](b *buildMemo, v storeVersion, m func() map[K]V, k K, compute func() (V, error)) (V, error) {
	if !b.lockFor(v) {
		return compute()
	}
	defer b.mu.Unlock()
	if p, ok := m()[k]; ok {
		return p, nil
	}
	p, err := compute()
	if err == nil {
		m()[k] = p
	}
	return p, err
}

func (b *buildMemo) model(snap *state.Snapshot, v storeVersion, uuid string) (*modelPart, error) {
	return memoized(b, v, func() map[string]*modelPart { return b.models }, uuid, func() (*modelPart, error) {
		m, err := lookupModel(snap, uuid)
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

func (b *buildMemo) app(s *Server, snap *state.Snapshot, v storeVersion, model, name string) (*appPart, error) {
	return memoized(b, v, func() map[appKey]*appPart { return b.apps }, appKey{model, name}, func() (*appPart, error) {
		a, err := lookupApplication(snap, model, name)
		if err != nil {
			return nil, err
		}
		p := &appPart{a: a}
		if p.config, err = s.effectiveConfig(snap, a); err != nil {
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
	return memoized(b, v, func() map[relKey]*api.RelationRemoteState { return b.rels }, k, func() (*api.RelationRemoteState, error) {
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
