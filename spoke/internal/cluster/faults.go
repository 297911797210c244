package cluster

import (
	"context"
	"errors"
	"net"
	"sync"
)

// ErrPartitioned is what a connection between two partitioned nodes sees.
var ErrPartitioned = errors.New("network partitioned (fault injection)")

// Faults injects network partitions between in-process nodes. Every raft
// connection and node-to-node HTTP request goes through it, so a test can
// cut any pair of nodes apart and heal them again. Production leaves it nil.
type Faults struct {
	mu      sync.Mutex
	addrs   map[string]string // listen address -> node id
	blocked map[[2]string]bool
	// raftBlocked cuts raft connections only (CutRaft): node-to-node
	// HTTP between the two still flows.
	raftBlocked map[[2]string]bool
	conns       map[*faultConn]struct{}
}

// NewFaults makes an empty fault injector: everything connected.
func NewFaults() *Faults {
	return &Faults{addrs: map[string]string{}, blocked: map[[2]string]bool{}, raftBlocked: map[[2]string]bool{},
		conns: map[*faultConn]struct{}{}}
}

// Register tells the injector which node listens on addr.
func (f *Faults) Register(node, addr string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.addrs[addr] = node
}

// Isolate cuts node off from every other node.
func (f *Faults) Isolate(node string, others ...string) {
	for _, o := range others {
		if o != node {
			f.Cut(node, o)
		}
	}
}

// Cut blocks traffic both ways between a and b and closes open connections.
func (f *Faults) Cut(a, b string) {
	f.mu.Lock()
	f.blocked[[2]string{a, b}] = true
	f.blocked[[2]string{b, a}] = true
	var victims []*faultConn
	for c := range f.conns {
		if (c.local == a && c.remote == b) || (c.local == b && c.remote == a) {
			victims = append(victims, c)
		}
	}
	f.mu.Unlock()
	for _, c := range victims {
		c.Conn.Close()
	}
}

// CutRaft blocks raft traffic both ways between a and b and closes their
// open raft connections; their API calls to each other still flow (a node
// that receives no log entries yet can relay a read to the leader).
func (f *Faults) CutRaft(a, b string) {
	f.mu.Lock()
	f.raftBlocked[[2]string{a, b}] = true
	f.raftBlocked[[2]string{b, a}] = true
	var victims []*faultConn
	for c := range f.conns {
		if c.raft && ((c.local == a && c.remote == b) || (c.local == b && c.remote == a)) {
			victims = append(victims, c)
		}
	}
	f.mu.Unlock()
	for _, c := range victims {
		c.Conn.Close()
	}
}

// Heal removes every partition.
func (f *Faults) Heal() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.blocked = map[[2]string]bool{}
	f.raftBlocked = map[[2]string]bool{}
}

func (f *Faults) isBlocked(local, remote string) bool {
	if f == nil {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.blocked[[2]string{local, remote}]
}

// isRaftBlocked reports whether raft traffic from local to remote is cut.
func (f *Faults) isRaftBlocked(local, remote string) bool {
	if f == nil {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	k := [2]string{local, remote}
	return f.blocked[k] || f.raftBlocked[k]
}

func (f *Faults) nodeAt(addr string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.addrs[addr]
}

// wrap tracks a connection between local and remote so Cut can close it;
// raft marks a raft connection, which CutRaft closes too.
func (f *Faults) wrap(c net.Conn, local, remote string, raft bool) net.Conn {
	if f == nil || remote == "" {
		return c
	}
	fc := &faultConn{Conn: c, f: f, local: local, remote: remote, raft: raft}
	f.mu.Lock()
	f.conns[fc] = struct{}{}
	f.mu.Unlock()
	return fc
}

// DialContext wraps a dialer so node-to-node HTTP obeys partitions too.
func (f *Faults) DialContext(local string, d *net.Dialer) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		remote := f.nodeAt(addr)
		if f.isBlocked(local, remote) {
			return nil, &net.OpError{Op: "dial", Net: network, Err: ErrPartitioned}
		}
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return f.wrap(c, local, remote, false), nil
	}
}

type faultConn struct {
	net.Conn
	f             *Faults
	local, remote string
	raft          bool
	once          sync.Once
}

func (c *faultConn) blocked() bool {
	if c.raft {
		return c.f.isRaftBlocked(c.local, c.remote)
	}
	return c.f.isBlocked(c.local, c.remote)
}

func (c *faultConn) Read(b []byte) (int, error) {
	if c.blocked() {
		c.Close()
		return 0, ErrPartitioned
	}
	return c.Conn.Read(b)
}

func (c *faultConn) Write(b []byte) (int, error) {
	if c.blocked() {
		c.Close()
		return 0, ErrPartitioned
	}
	return c.Conn.Write(b)
}

func (c *faultConn) Close() error {
	c.once.Do(func() {
		c.f.mu.Lock()
		delete(c.f.conns, c)
		c.f.mu.Unlock()
	})
	return c.Conn.Close()
}
