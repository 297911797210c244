package spoke

import (
	"context"
	"sync"
	"syscall"
	"time"
)

// spawned reaps the controller nodes EnableHA started. They run in their
// own session and outlive this node by design, so shutdown does not wait
// for them; while this node serves (Serve runs run), each is reaped soon
// after it exits, so none is left a zombie.
type spawned struct {
	mu    sync.Mutex
	pids  map[int]bool
	added chan struct{} // wakes run when it has nothing to reap
}

func (c *spawned) add(pid int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pids == nil {
		c.pids = map[int]bool{}
	}
	c.pids[pid] = true
	select {
	case c.wake() <- struct{}{}:
	default:
	}
}

func (c *spawned) wake() chan struct{} {
	if c.added == nil {
		c.added = make(chan struct{}, 1)
	}
	return c.added
}

// run reaps exited nodes, polling once a second while any runs, until ctx
// ends.
func (c *spawned) run(ctx context.Context) error {
	c.mu.Lock()
	added := c.wake()
	c.mu.Unlock()
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		if c.reap() == 0 {
			select {
			case <-ctx.Done():
				return nil
			case <-added:
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// reap collects the nodes that exited and returns how many still run.
func (c *spawned) reap() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	for pid := range c.pids {
		var ws syscall.WaitStatus
		if n, err := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil); n == pid || err != nil {
			delete(c.pids, pid)
		}
	}
	return len(c.pids)
}
