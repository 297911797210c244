package hookctx

import (
	"context"
	"fmt"
	"strings"
	"sync"
)

// ActionRun is the action side of a Context: the running action, if any,
// and what the charm reported through action-set and action-fail. Every
// method but Info and Outcome fails with ErrNotInAction outside an action.
// It is safe for concurrent use.
type ActionRun struct {
	action *Action // nil outside an action
	remote Remote

	mu      sync.Mutex
	outcome ActionOutcome
}

// Info returns the running action, if any.
func (a *ActionRun) Info() (Action, bool) {
	if a.action == nil {
		return Action{}, false
	}
	return *a.action, true
}

// Params returns the running action's parameters.
func (a *ActionRun) Params() (map[string]any, error) {
	if a.action == nil {
		return nil, ErrNotInAction
	}
	return a.action.Params, nil
}

// SetResult sets a result at a key path (a.b.c), building nested maps.
// A non-map value in the way is replaced by a map.
func (a *ActionRun) SetResult(path []string, value string) error {
	if a.action == nil {
		return ErrNotInAction
	}
	if len(path) == 0 {
		return fmt.Errorf("empty action result key")
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.outcome.Results == nil {
		a.outcome.Results = map[string]any{}
	}
	m := a.outcome.Results
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

// Fail marks the action failed; the hook still exits normally.
func (a *ActionRun) Fail(message string) error {
	if a.action == nil {
		return ErrNotInAction
	}
	if strings.TrimSpace(message) == "" {
		message = DefaultActionFailMessage
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.outcome.Failed = true
	a.outcome.Message = message
	return nil
}

// Log records an action-log message immediately.
func (a *ActionRun) Log(ctx context.Context, message string) error {
	if a.action == nil {
		return ErrNotInAction
	}
	return a.remote.LogAction(ctx, message)
}

// Outcome returns a deep-enough copy of the action's results and failure
// state; the uniter records it whatever the exit code.
func (a *ActionRun) Outcome() ActionOutcome {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := a.outcome
	out.Results = deepCopyMap(a.outcome.Results)
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
