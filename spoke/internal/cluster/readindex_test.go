package cluster

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/droverhq/drover/internal/pki"
)

// startThree starts a 3-node cluster whose every node holds the final
// configuration and key "a", and returns its nodes and leader.
func startThree(ctx context.Context, t *testing.T, faults *Faults) ([]*testNode, *testNode) {
	t.Helper()
	ca, err := pki.NewCA("test", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	nodes := make([]*testNode, 3)
	for i := range nodes {
		nodes[i] = &testNode{id: fmt.Sprintf("n%d", i), dir: t.TempDir(), addr: freeAddr(t)}
	}
	startNode(t, ca, nodes[0], true, faults)
	t.Cleanup(func() {
		for _, n := range nodes {
			if n.node != nil {
				n.node.Shutdown()
			}
		}
	})
	leader := waitLeader(ctx, t, nodes[:1])
	for _, n := range nodes[1:] {
		startNode(t, ca, n, false, faults)
		if err := leader.node.AddVoter(ctx, n.id, n.addr); err != nil {
			t.Fatalf("add voter %s: %v", n.id, err)
		}
	}
	leader = applyOnLeader(ctx, t, nodes, "a", "1")
	for _, n := range nodes {
		waitFor(ctx, t, func() bool { return n.fsm.get("a") == "1" }, n.id+" did not catch up")
	}
	return nodes, leader
}

// applyOnLeader writes k=v through whichever node leads (elections happen
// on a busy machine) and returns that node.
func applyOnLeader(ctx context.Context, t *testing.T, nodes []*testNode, k, v string) *testNode {
	t.Helper()
	for {
		leader := waitLeader(ctx, t, nodes)
		err := apply(ctx, leader, k, v)
		if err == nil {
			return leader
		}
		if !errors.Is(err, ErrNotLeader) || ctx.Err() != nil {
			t.Fatalf("write %s=%s: %v", k, v, err)
		}
	}
}

// quietTerm runs check until it runs within one term of leader (an
// election appends a no-op entry, which is not the reads' doing), at most
// five times; it returns the last failure of check.
func quietTerm(t *testing.T, leader *testNode, check func() error) {
	t.Helper()
	var err error
	for range 5 {
		term := leader.node.Raft().CurrentTerm()
		err = check()
		if leader.node.Raft().CurrentTerm() == term && leader.node.IsLeader() {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
}

func waitFor(ctx context.Context, t *testing.T, cond func() bool, msg string) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatal(msg)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// TestReadIndexWritesNoLogEntry: a read index appends nothing to the raft
// log, answers the last command even when non-command entries (a
// barrier) follow it, and a follower that reaches it sees every write
// acknowledged before the read (issue 26, finding 7; ADR 0026).
func TestReadIndexWritesNoLogEntry(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	nodes, _ := startThree(ctx, t, nil)
	var leader *testNode
	var wrote uint64
	for {
		leader = applyOnLeader(ctx, t, nodes, "b", "2")
		wrote = leader.node.AppliedIndex()
		if err := leader.node.Barrier(ctx); err == nil {
			break
		}
	}
	const reads = 20
	quietTerm(t, leader, func() error {
		before := leader.node.Raft().LastIndex()
		if before == wrote {
			return errors.New("the barrier appended no entry after the write")
		}
		for range reads {
			idx, err := leader.node.ReadIndex(ctx)
			if err != nil {
				return err
			}
			if idx != wrote {
				return fmt.Errorf("read index %d, want %d (the last command; a barrier follows it)", idx, wrote)
			}
			for _, n := range nodes {
				wctx, c := context.WithTimeout(ctx, 5*time.Second)
				err := n.node.WaitApplied(wctx, idx)
				c()
				if err != nil {
					return fmt.Errorf("%s never applied read index %d: %v", n.id, idx, err)
				}
				if n.fsm.get("b") != "2" {
					return fmt.Errorf("%s at read index %d misses the acknowledged write", n.id, idx)
				}
			}
		}
		for _, n := range nodes {
			if got := n.node.Raft().LastIndex(); got != before {
				return fmt.Errorf("%d read indexes moved %s's last log index from %d to %d, want no entry", reads, n.id, before, got)
			}
		}
		return nil
	})
}

// TestReadIndexRoundsAreShared: concurrent read indexes share heartbeat
// rounds, one in flight at a time, and write nothing.
func TestReadIndexRoundsAreShared(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	nodes, leader := startThree(ctx, t, nil)
	leader = waitLeader(ctx, t, nodes)
	const callers = 64
	quietTerm(t, leader, func() error {
		before := leader.node.Raft().LastIndex()
		rounds := leader.node.ReadIndexRounds()
		start := make(chan struct{})
		var g errgroup.Group
		for range callers {
			g.Go(func() error {
				<-start
				_, err := leader.node.ReadIndex(ctx)
				return err
			})
		}
		close(start)
		if err := g.Wait(); err != nil {
			return err
		}
		if n := leader.node.ReadIndexRounds() - rounds; n == 0 || n > callers/2 {
			return fmt.Errorf("%d concurrent read indexes took %d heartbeat rounds, want them shared", callers, n)
		}
		for _, n := range nodes {
			if got := n.node.Raft().LastIndex(); got != before {
				return fmt.Errorf("read indexes moved %s's last log index from %d to %d", n.id, before, got)
			}
		}
		return nil
	})
}

// TestPartitionedLeaderAnswersNoReadIndex: a leader cut off from the
// others stops answering read indexes (it cannot hear from a quorum) well
// before the majority elects a leader, and answers none once the majority
// has written. A heartbeat answered just before the cut may still count
// for a read that starts just after it (ADR 0026): such answers are
// allowed only while no other node leads.
func TestPartitionedLeaderAnswersNoReadIndex(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	faults := NewFaults()
	nodes, old := startThree(ctx, t, faults)
	old = waitLeader(ctx, t, nodes)
	var rest []*testNode
	for _, n := range nodes {
		if n != old {
			rest = append(rest, n)
		}
	}
	faults.Isolate(old.id, "n0", "n1", "n2")
	for answered := 0; ; answered++ {
		rctx, c := context.WithTimeout(ctx, 5*time.Second)
		idx, err := old.node.ReadIndex(rctx)
		c()
		if err != nil {
			if !errors.Is(err, ErrNotLeader) && !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("partitioned leader: %v, want not-leader", err)
			}
			break
		}
		for _, n := range rest {
			if n.node.IsLeader() {
				t.Fatalf("the partitioned old leader answered read index %d while %s leads", idx, n.id)
			}
		}
		if answered > 100 {
			t.Fatalf("a partitioned leader kept answering read indexes (%d)", answered)
		}
	}
	leader := applyOnLeader(ctx, t, rest, "b", "2")
	if idx, err := old.node.ReadIndex(ctx); err == nil {
		t.Fatalf("the partitioned old leader answered read index %d after the majority wrote", idx)
	}
	var idx uint64
	var err error
	for {
		if idx, err = leader.node.ReadIndex(ctx); err == nil {
			break
		}
		if !errors.Is(err, ErrNotLeader) {
			t.Fatalf("new leader: %v", err)
		}
		leader = waitLeader(ctx, t, rest)
	}
	faults.Heal()
	if err := old.node.WaitApplied(ctx, idx); err != nil {
		t.Fatal(err)
	}
	if old.fsm.get("b") != "2" {
		t.Fatal("the healed node at the read index misses the majority's write")
	}
}
