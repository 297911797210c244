package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/droverhq/drover/internal/pki"
)

// kvFSM is a tiny real state machine: a map of key to value.
type kvFSM struct {
	mu sync.Mutex
	m  map[string]string
}

func (f *kvFSM) Apply(l *raft.Log) any {
	var kv [2]string
	if err := json.Unmarshal(l.Data, &kv); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.m[kv[0]] = kv[1]
	return kv[1]
}

func (f *kvFSM) get(k string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.m[k]
}

func (f *kvFSM) Snapshot() (raft.FSMSnapshot, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	b, err := json.Marshal(f.m)
	return kvSnap(b), err
}

func (f *kvFSM) Restore(r io.ReadCloser) error {
	defer r.Close()
	m := map[string]string{}
	if err := json.NewDecoder(r).Decode(&m); err != nil {
		return err
	}
	f.mu.Lock()
	f.m = m
	f.mu.Unlock()
	return nil
}

type kvSnap []byte

func (s kvSnap) Persist(sink raft.SnapshotSink) error {
	if _, err := sink.Write(s); err != nil {
		sink.Cancel()
		return err
	}
	return sink.Close()
}
func (kvSnap) Release() {}

type testNode struct {
	id, dir, addr string
	fsm           *kvFSM
	node          *Node
}

func freeAddr(t *testing.T) string { return freeAddrB(t) }

func freeAddrB(t testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func startNodeB(t testing.TB, ca *pki.CA, tn *testNode, bootstrap bool) {
	startNodeTB(t, ca, tn, bootstrap, nil)
}

func startNode(t *testing.T, ca *pki.CA, tn *testNode, bootstrap bool, faults *Faults) {
	startNodeTB(t, ca, tn, bootstrap, faults)
}

func startNodeTB(t testing.TB, ca *pki.CA, tn *testNode, bootstrap bool, faults *Faults) {
	t.Helper()
	cert, _, _, err := ca.Issue(tn.id, nil, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	tn.fsm = &kvFSM{m: map[string]string{}}
	n, err := Open(Config{
		NodeID: tn.id, DataDir: tn.dir, BindAddr: tn.addr,
		ServerTLS: pki.MutualConfig(ca, cert), PeerTLS: pki.PeerConfig(ca, cert),
		FSM: tn.fsm, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Bootstrap: bootstrap, Faults: faults,
		HeartbeatTimeout: 300 * time.Millisecond, ElectionTimeout: 300 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	tn.node = n
}

func waitLeaderB(ctx context.Context, nodes []*testNode) *testNode {
	for {
		for _, n := range nodes {
			if n.node != nil && n.node.IsLeader() {
				return n
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func waitLeader(ctx context.Context, t *testing.T, nodes []*testNode) *testNode {
	t.Helper()
	for {
		for _, n := range nodes {
			if n.node != nil && n.node.IsLeader() {
				return n
			}
		}
		select {
		case <-ctx.Done():
			t.Fatal("no leader elected")
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func apply(ctx context.Context, n *testNode, k, v string) error {
	b, _ := json.Marshal([2]string{k, v})
	_, _, err := n.node.Apply(ctx, b)
	return err
}

func TestThreeNodesPartitionHealRestart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ca, err := pki.NewCA("test", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	faults := NewFaults()
	nodes := make([]*testNode, 3)
	for i := range nodes {
		nodes[i] = &testNode{id: fmt.Sprintf("n%d", i), dir: t.TempDir(), addr: freeAddr(t)}
	}
	startNode(t, ca, nodes[0], true, faults)
	defer func() {
		for _, n := range nodes {
			if n.node != nil {
				n.node.Shutdown()
			}
		}
	}()
	leader := waitLeader(ctx, t, nodes[:1])
	for _, n := range nodes[1:] {
		startNode(t, ca, n, false, faults)
		if err := leader.node.AddVoter(ctx, n.id, n.addr); err != nil {
			t.Fatalf("add voter %s: %v", n.id, err)
		}
	}
	if err := apply(ctx, leader, "a", "1"); err != nil {
		t.Fatal(err)
	}
	// Every node must hold the final configuration before the leader is
	// cut off: a node that missed the last AddVoter would refuse to vote
	// for the one that holds it, and neither could win an election.
	for _, n := range nodes {
		for n.fsm.get("a") != "1" {
			select {
			case <-ctx.Done():
				t.Fatalf("%s did not catch up", n.id)
			case <-time.After(10 * time.Millisecond):
			}
		}
	}

	// Isolate the leader: the majority elects a new one and keeps writing.
	old := leader
	faults.Isolate(old.id, "n0", "n1", "n2")
	var rest []*testNode
	for _, n := range nodes {
		if n != old {
			rest = append(rest, n)
		}
	}
	for {
		leader = waitLeader(ctx, t, rest)
		err := apply(ctx, leader, "b", "2")
		if err == nil {
			break
		}
		t.Logf("write to %s during partition: %v", leader.id, err)
	}
	// The isolated node cannot commit anything.
	short, c2 := context.WithTimeout(ctx, 500*time.Millisecond)
	if _, _, err := old.node.Apply(short, []byte(`["c","3"]`)); err == nil {
		t.Fatal("isolated old leader committed a write")
	}
	c2()

	faults.Heal()
	// After healing the old leader catches up.
	for old.fsm.get("b") != "2" {
		select {
		case <-ctx.Done():
			t.Fatal("healed node did not catch up")
		case <-time.After(10 * time.Millisecond):
		}
	}
	if old.fsm.get("c") == "3" {
		t.Fatal("uncommitted write from the isolated leader survived")
	}

	// Kill a follower, write, restart it on its data dir: it catches up.
	var f *testNode
	for _, n := range nodes {
		if n != leader {
			f = n
			break
		}
	}
	f.node.Shutdown()
	f.node = nil
	leader = waitLeader(ctx, t, nodes)
	if err := apply(ctx, leader, "d", "4"); err != nil {
		t.Fatal(err)
	}
	startNode(t, ca, f, false, faults)
	idx, err := leader.node.ReadIndex(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.node.WaitApplied(ctx, idx); err != nil {
		t.Fatal(err)
	}
	if f.fsm.get("d") != "4" || f.fsm.get("a") != "1" {
		t.Fatalf("restarted node state: %v", f.fsm.m)
	}
}
