package hookctx

import (
	"fmt"
	"maps"
)

// State returns the charm state as this hook sees it, writes included.
func (c *Context) State() map[string]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.state)
}

// SetState buffers charm state writes.
func (c *Context) SetState(kv map[string]string) error {
	for k, v := range kv {
		if len(k) > MaxStateKeySize {
			return fmt.Errorf("%w: key %q exceeds the %d-byte limit", ErrTooLarge, k, MaxStateKeySize)
		}
		if len(v) > MaxStateValueSize {
			return fmt.Errorf("%w: value of key %q exceeds the %d-byte limit", ErrTooLarge, k, MaxStateValueSize)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, v := range kv {
		if old, ok := c.state[k]; !ok || old != v {
			c.state[k] = v
			c.stateDirty = true
		}
	}
	return nil
}

// DeleteState buffers deleting a charm state key; a missing key is a no-op.
func (c *Context) DeleteState(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.state[key]; ok {
		delete(c.state, key)
		c.stateDirty = true
	}
}

// Flush returns the net change set to commit after the hook exited 0. It
// does not clear the buffers: the uniter either commits the result once or
// discards the whole Context.
func (c *Context) Flush() Changes {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := Changes{Relations: c.relationChangesLocked()}
	ch.OpenPorts, ch.ClosePorts = c.ports.changes()
	if c.stateDirty && !maps.Equal(c.state, c.cfg.State) {
		ch.State, ch.StateChanged = maps.Clone(c.state), true
	}
	return ch
}
