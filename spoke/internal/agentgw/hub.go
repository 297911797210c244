package agentgw

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/spoke/internal/state"
	"github.com/droverhq/drover/spoke/internal/state/stream"
	"github.com/droverhq/drover/spoke/internal/state/tables"
)

// agentHub fans the event broker out to agent connections. It holds one
// subscription for the whole node (not one per connection), groups each
// batch by model, and for every connection of that model decides from the
// connection's interest whether the batch can change its machine's state;
// only those connections are poked (a flag set under the connection's
// lock, which starts its writer goroutine if none runs, so the hub never
// waits for a connection and repeated wakes coalesce). It also owns the one
// keepalive ticker every connection shares.
type agentHub struct {
	// mu guards the fields below.
	mu     sync.Mutex
	models map[string]map[*agentConn]struct{}
	closed bool // Gateway.Close has shut every connection
}

func newAgentHub() *agentHub {
	return &agentHub{models: map[string]map[*agentConn]struct{}{}}
}

// register adds c, unless the server is closing.
func (h *agentHub) register(c *agentConn) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return false
	}
	m := h.models[c.model]
	if m == nil {
		m = map[*agentConn]struct{}{}
		h.models[c.model] = m
	}
	m[c] = struct{}{}
	return true
}

func (h *agentHub) unregister(c *agentConn) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.models[c.model], c)
	if len(h.models[c.model]) == 0 {
		delete(h.models, c.model)
	}
}

// keepalive makes every connection send a keepalive frame.
func (h *agentHub) keepalive() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, m := range h.models {
		for c := range m {
			c.mu.Lock()
			c.keepalive = true
			c.startWriterLocked()
			c.mu.Unlock()
		}
	}
}

// closeAll shuts every connection and refuses new ones.
func (h *agentHub) closeAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	for _, m := range h.models {
		for c := range m {
			c.shut()
		}
	}
}

// Connections returns the number of agent connections on this node.
func (g *Gateway) Connections() int {
	h := g.hub
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, m := range h.models {
		n += len(m)
	}
	return n
}

// Run feeds the agent connections until ctx ends. It is a node worker:
// the spoke runs it under its supervisor.
func (g *Gateway) Run(ctx context.Context) error {
	eg, ctx := errgroup.WithContext(ctx)
	eg.Go(func() error {
		t := time.NewTicker(g.keepaliveInterval())
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return nil
			case <-t.C:
				g.hub.keepalive()
			}
		}
	})
	eg.Go(func() error { return g.feedAgents(ctx) })
	return eg.Wait()
}

func (g *Gateway) feedAgents(ctx context.Context) error {
	since, err := g.b.Store().Snapshot().LatestIndex()
	if err != nil {
		return err
	}
	for {
		sub, err := g.b.Events().Subscribe(ctx, stream.SubscribeRequest{Since: since})
		if err != nil {
			return nil
		}
		for {
			evs, err := sub.Next(ctx)
			if ctx.Err() != nil {
				return nil
			}
			if errors.Is(err, stream.ErrSubscriptionReset) {
				// Missed events: everyone rebuilds (and sends only if changed).
				g.pokeAll()
				if since, err = g.b.Store().Snapshot().LatestIndex(); err != nil {
					return err
				}
				break
			}
			if err != nil {
				return err
			}
			since = sub.Index()
			g.dispatch(evs)
		}
	}
}

func (g *Gateway) pokeAll() {
	h := g.hub
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, m := range h.models {
		for c := range m {
			c.poke()
		}
	}
}

// dispatch pokes the connections a batch of events may concern. Events of
// one model only reach that model's connections; within them, the interest
// test is a few slice lookups.
func (g *Gateway) dispatch(evs []stream.Event) {
	h := g.hub
	h.mu.Lock()
	defer h.mu.Unlock()
	for i := 0; i < len(evs); {
		model := evs[i].ModelUUID
		j := i + 1
		for j < len(evs) && evs[j].ModelUUID == model {
			j++
		}
		batch := evs[i:j]
		i = j
		if model == "" { // controller nodes and the like: every agent
			for _, ev := range batch {
				if ev.Kind == state.KindControllerNode {
					for _, m := range h.models {
						for c := range m {
							c.poke()
						}
					}
					break
				}
			}
			continue
		}
		for c := range h.models[model] {
			if c.concerned(batch) {
				c.poke()
			}
		}
	}
}

// concerned reports whether any event can change c's machine state. While
// c is between taking its snapshot and publishing the interest that
// snapshot gave, every event of the model concerns it.
func (c *agentConn) concerned(evs []stream.Event) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.building {
		return true
	}
	in := &c.in
	for _, ev := range evs {
		if in.concerns(ev) {
			return true
		}
	}
	return false
}

func (in *interest) concerns(ev stream.Event) bool {
	switch o := ev.Object.(type) {
	case *api.Model:
		return true
	case *api.Application:
		return slices.Contains(in.apps, o.Name)
	case *api.Unit:
		return o.MachineID == in.machine || slices.Contains(in.units, o.Name)
	case *api.Machine:
		return o.ID == in.machine
	case *api.Relation:
		return slices.ContainsFunc(o.Endpoints, func(ep api.RelationEndpoint) bool { return slices.Contains(in.apps, ep.Application) })
	case *api.RelationScope:
		r := in.rel(o.RelationID)
		return r != nil && (slices.Contains(in.units, o.Unit) || unitAppOf(o.Unit) == r.remoteApp)
	case *api.RelationData:
		r := in.rel(o.RelationID)
		if r == nil {
			return false
		}
		if o.App {
			return o.Owner == r.remoteApp
		}
		return unitAppOf(o.Owner) == r.remoteApp && !slices.Contains(in.units, o.Owner)
	case *api.Lease:
		return slices.Contains(in.units, o.Holder) || slices.Contains(in.leaderApps, o.Application)
	case *api.Task:
		return slices.Contains(in.units, o.Receiver) || o.Receiver == api.MachineReceiver(in.machine)
	case *tables.AppLeaderSettings:
		return slices.Contains(in.apps, o.Application)
	case *tables.ModelConfigEntry:
		// Only the keys agents act on: other config writes must not make
		// every agent of the model rebuild its state.
		return o.Key == cfgUpdateStatusInterval || o.Key == cfgAutoRetry
	}
	return false
}

func (in *interest) rel(id int) *relInterest {
	for i := range in.rels {
		if in.rels[i].id == id {
			return &in.rels[i]
		}
	}
	return nil
}
