package machine

import (
	"context"
	"sync"
)

// locks are the machine's named hook locks ("machine", and
// "exec-command-<group>" for action execution groups). The machine agent
// is the only process running hooks on the machine, so an in-process lock
// serialises them machine-wide.
type locks struct {
	mu sync.Mutex
	m  map[string]chan struct{}
}

func newLocks() *locks { return &locks{m: map[string]chan struct{}{}} }

// Acquire blocks until the named lock is held or ctx ends.
func (l *locks) Acquire(ctx context.Context, name string) (func(), error) {
	l.mu.Lock()
	ch := l.m[name]
	if ch == nil {
		ch = make(chan struct{}, 1)
		l.m[name] = ch
	}
	l.mu.Unlock()
	select {
	case ch <- struct{}{}:
		var once sync.Once
		return func() { once.Do(func() { <-ch }) }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
