package hookctx

import (
	"context"
	"fmt"
	"maps"
	"strings"
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

// ActionParams returns the running action's parameters.
func (c *Context) ActionParams() (map[string]any, error) {
	if c.cfg.Action == nil {
		return nil, ErrNotInAction
	}
	return c.cfg.Action.Params, nil
}

// Action returns the running action, if any.
func (c *Context) Action() (Action, bool) {
	if c.cfg.Action == nil {
		return Action{}, false
	}
	return *c.cfg.Action, true
}

// SetActionResult sets a result at a key path (a.b.c), building nested maps.
// A non-map value in the way is replaced by a map.
func (c *Context) SetActionResult(path []string, value string) error {
	if c.cfg.Action == nil {
		return ErrNotInAction
	}
	if len(path) == 0 {
		return fmt.Errorf("empty action result key")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.outcome.Results == nil {
		c.outcome.Results = map[string]any{}
	}
	m := c.outcome.Results
	for _, k := range path[:len(path)-1] {
		next, ok := m[k].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[k] = next
		}
		m = next
	}
	m[path[len(path)-1]] = value
	return nil
}

// DefaultActionFailMessage is action-fail's message when none is given.
const DefaultActionFailMessage = "action failed without reason given, check action for errors"

// FailAction marks the action failed; the hook still exits normally.
func (c *Context) FailAction(message string) error {
	if c.cfg.Action == nil {
		return ErrNotInAction
	}
	if strings.TrimSpace(message) == "" {
		message = DefaultActionFailMessage
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.outcome.Failed = true
	c.outcome.Message = message
	return nil
}

// LogAction records an action-log message immediately.
func (c *Context) LogAction(ctx context.Context, message string) error {
	if c.cfg.Action == nil {
		return ErrNotInAction
	}
	return c.cfg.Remote.LogAction(ctx, message)
}

// ActionOutcome returns a deep-enough copy of the action's results and
// failure state; the uniter records it whatever the exit code.
func (c *Context) ActionOutcome() ActionOutcome {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.outcome
	out.Results = deepCopyMap(c.outcome.Results)
	return out
}

func deepCopyMap(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		if sub, ok := v.(map[string]any); ok {
			v = deepCopyMap(sub)
		}
		out[k] = v
	}
	return out
}

// Flush returns the net change set to commit after the hook exited 0. It
// does not clear the buffers: the uniter either commits the result once or
// discards the whole Context.
func (c *Context) Flush() Changes {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := Changes{Relations: c.relationChangesLocked()}
	ch.OpenPorts, ch.ClosePorts = c.portChangesLocked()
	if c.stateDirty && !maps.Equal(c.state, c.cfg.State) {
		ch.State, ch.StateChanged = maps.Clone(c.state), true
	}
	return ch
}
