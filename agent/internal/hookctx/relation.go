package hookctx

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/droverhq/drover/api"
)

type bagKey struct {
	name string
	app  bool
}

// relationState is one relation's members, read cache and buffered writes.
// It is guarded by Context.mu.
type relationState struct {
	info    Relation
	cache   map[bagKey]map[string]string // controller copies read in this hook
	unitW   map[string]string            // buffered writes to the unit's own bag
	appW    map[string]string            // buffered writes to the app bag
	members []string
}

func newRelationState(r Relation, cfg Config) *relationState {
	members := slices.Clone(r.Members)
	// Membership is what has committed, adjusted for the running hook: the
	// remote unit is already a member during its own joined/changed hook
	// and no longer one during its departed hook (§3.3).
	if hr := cfg.Relation; hr != nil && hr.ID == r.ID && hr.RemoteUnit != "" {
		switch {
		case strings.HasSuffix(cfg.Hook, "-relation-joined"), strings.HasSuffix(cfg.Hook, "-relation-changed"):
			if !slices.Contains(members, hr.RemoteUnit) {
				members = append(members, hr.RemoteUnit)
			}
		case strings.HasSuffix(cfg.Hook, "-relation-departed"):
			members = slices.DeleteFunc(members, func(u string) bool { return u == hr.RemoteUnit })
		}
	}
	sort.Strings(members)
	r.Members = nil
	return &relationState{
		info:    r,
		cache:   map[bagKey]map[string]string{},
		unitW:   map[string]string{},
		appW:    map[string]string{},
		members: members,
	}
}

// Relation returns a relation in context.
func (c *Context) Relation(id int) (Relation, error) {
	r, ok := c.relations[id]
	if !ok {
		return Relation{}, fmt.Errorf("%w: %d", ErrRelationNotFound, id)
	}
	info := r.info
	info.Members = slices.Clone(r.members)
	return info, nil
}

// RelationIDs returns the IDs of the non-dead relations on an endpoint,
// in increasing order.
func (c *Context) RelationIDs(endpoint string) []int {
	var ids []int
	for id, r := range c.relations {
		if r.info.Endpoint == endpoint && r.info.Life != api.Dead {
			ids = append(ids, id)
		}
	}
	sort.Ints(ids)
	return ids
}

// ReadSettings returns a bag of a relation in context: name is a unit or,
// with app, an application. The unit's own bag, and its own application's
// bag while it leads, come back as the local view including this hook's
// writes; other bags come from the controller, read once per hook.
func (c *Context) ReadSettings(ctx context.Context, id int, name string, app bool) (map[string]string, error) {
	r, ok := c.relations[id]
	if !ok {
		return nil, fmt.Errorf("%w: %d", ErrRelationNotFound, id)
	}
	var writes map[string]string
	switch {
	case !app && name == c.cfg.Unit:
		writes = r.unitW
	case app && name == c.app:
		leader, err := c.IsLeader(ctx)
		if err != nil {
			return nil, fmt.Errorf("cannot determine leadership status: %w", err)
		}
		if leader {
			writes = r.appW
		}
	}
	base, err := c.readCached(ctx, r, bagKey{name, app})
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	out := maps.Clone(base)
	for k, v := range writes {
		if v == "" {
			delete(out, k)
		} else {
			out[k] = v
		}
	}
	return out, nil
}

func (c *Context) readCached(ctx context.Context, r *relationState, key bagKey) (map[string]string, error) {
	c.mu.Lock()
	base, ok := r.cache[key]
	c.mu.Unlock()
	if ok {
		return base, nil
	}
	got, err := c.cfg.Remote.ReadSettings(ctx, r.info.ID, key.name, key.app)
	if err != nil {
		return nil, err
	}
	got = maps.Clone(got)
	if got == nil {
		got = map[string]string{}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if prev, ok := r.cache[key]; ok {
		return prev, nil // a concurrent read won; keep the first copy
	}
	r.cache[key] = got
	return got, nil
}

// SetSettings buffers writes to the unit's own bag or, with app, to its
// application's bag, which needs leadership. An empty value deletes.
func (c *Context) SetSettings(ctx context.Context, id int, app bool, kv map[string]string) error {
	r, ok := c.relations[id]
	if !ok {
		return fmt.Errorf("%w: %d", ErrRelationNotFound, id)
	}
	size := 0
	for k, v := range kv {
		size += len(k) + len(v)
	}
	if size > MaxRelationSettingsSize {
		return fmt.Errorf("%w: relation settings of %d bytes exceed the %d-byte limit", ErrTooLarge, size, MaxRelationSettingsSize)
	}
	target := r.unitW
	if app {
		if err := c.requireLeader(ctx); err != nil {
			return err
		}
		target = r.appW
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	maps.Copy(target, kv)
	return nil
}

// netChange drops buffered writes that the cached controller copy shows to
// be no-ops. Without a cached copy every write is kept: the controller
// computes the effective change again when it applies the commit.
func netChange(writes, base map[string]string, haveBase bool) map[string]string {
	out := map[string]string{}
	for k, v := range writes {
		if haveBase {
			old, had := base[k]
			if (v == "" && !had) || (v != "" && had && old == v) {
				continue
			}
		}
		out[k] = v
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func (c *Context) relationChangesLocked() []RelationChanges {
	var out []RelationChanges
	for id, r := range c.relations {
		ub, uok := r.cache[bagKey{c.cfg.Unit, false}]
		ab, aok := r.cache[bagKey{c.app, true}]
		ch := RelationChanges{ID: id, Unit: netChange(r.unitW, ub, uok), App: netChange(r.appW, ab, aok)}
		if ch.Unit != nil || ch.App != nil {
			out = append(out, ch)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}
