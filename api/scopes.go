package api

import (
	"maps"
	"net/http"
	"strings"
	"sync/atomic"
)

// Behind a hub every controller has its own raft history, so one
// client-wide index would make a read of a model on controller A wait for
// an index of controller B. A client keeps instead, for each model a hub
// placed (PlaceModel), the highest index that model's controller answered
// with: the model's calls send and raise that index only. Calls to other
// routes (the hub's own: model listings, grants, controllers) send none
// and raise the client-wide one (Index), which a hub client does not send
// (ReadYourWrites off).

// PlaceModel records that a hub relays model's calls to the controller
// with UUID controller (the hub's model entry says so: ModelIndex). From
// then on every call under /v1/models/{model}/, and every change of the
// model itself, raises that controller's index (Indexes), and every such
// read waits for it (?index=): read-your-writes through a hub, whatever
// ReadYourWrites says. The hub's own answer about the model (Info) carries
// no index and sends none. Placing a model again on another controller
// (it moved) takes effect at once; an empty controller does nothing.
func (c *Client) PlaceModel(model, controller string) {
	if model == "" || controller == "" {
		return
	}
	c.scopeMu.Lock()
	defer c.scopeMu.Unlock()
	ctr := c.controllerIndexLocked(controller)
	old := c.placed.Load()
	if old != nil && (*old)[model] == ctr {
		return
	}
	next := map[string]*atomic.Uint64{model: ctr}
	if old != nil {
		next = maps.Clone(*old)
		next[model] = ctr
	}
	c.placed.Store(&next)
}

// placeAt places model on controller (PlaceModel) and raises the
// controller's index to idx.
func (c *Client) placeAt(model, controller string, idx uint64) {
	if model == "" || controller == "" {
		return
	}
	c.PlaceModel(model, controller)
	c.scopeMu.Lock()
	ctr := c.controllerIndexLocked(controller)
	c.scopeMu.Unlock()
	raise(ctr, idx)
}

// Indexes is the highest index each controller behind a hub (by UUID)
// has answered the calls of the models placed on it with, or started
// with (ClientConfig.Indexes).
func (c *Client) Indexes() map[string]uint64 {
	c.scopeMu.Lock()
	defer c.scopeMu.Unlock()
	out := make(map[string]uint64, len(c.controllers))
	for uuid, ctr := range c.controllers {
		if idx := ctr.Load(); idx > 0 {
			out[uuid] = idx
		}
	}
	return out
}

// controllerIndexLocked is controller's index, made at 0 when unknown.
func (c *Client) controllerIndexLocked(controller string) *atomic.Uint64 {
	ctr := c.controllers[controller]
	if ctr == nil {
		ctr = new(atomic.Uint64)
		if c.controllers == nil {
			c.controllers = map[string]*atomic.Uint64{}
		}
		c.controllers[controller] = ctr
	}
	return ctr
}

// scopeOf is the index of the controller whose model the call (method,
// escaped path) is of, or nil when it is not a call of a placed model (the
// client-wide index applies). It takes no lock: a client that placed no
// model pays one atomic load.
func (c *Client) scopeOf(method, path string) *atomic.Uint64 {
	placed := c.placed.Load()
	if placed == nil {
		return nil
	}
	rest, ok := strings.CutPrefix(path, "/v1/models/")
	if !ok {
		return nil
	}
	model, sub, _ := strings.Cut(rest, "/")
	if sub == "" && method == http.MethodGet {
		return nil // the hub's own entry for the model
	}
	return (*placed)[model]
}

// readIndex is the index a read r waits for besides its own: its model's
// controller's when the model is placed, else the client-wide one when
// ReadYourWrites is on.
func (c *Client) readIndex(r *request) uint64 {
	if ctr := c.scopeOf(r.method, r.path); ctr != nil {
		return ctr.Load()
	}
	if c.ryw {
		return c.Index()
	}
	return 0
}

// observe raises the index an answer to the call (method, escaped path)
// counts towards to idx.
func (c *Client) observe(method, path string, idx uint64) {
	ctr := c.scopeOf(method, path)
	if ctr == nil {
		ctr = &c.index
	}
	raise(ctr, idx)
}

// raise sets ctr to idx unless it holds a higher one already.
func raise(ctr *atomic.Uint64, idx uint64) {
	for {
		cur := ctr.Load()
		if idx <= cur || ctr.CompareAndSwap(cur, idx) {
			return
		}
	}
}
