package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/raft"
)

// A read index is raft's linearizable read without a log entry (the raft
// thesis, section 6.4; ADR 0026): the leader takes its commit index once
// an entry of its own term is committed (before that, its commit index may
// miss entries an earlier leader committed), confirms with one heartbeat
// round to a quorum that no newer leader exists (VerifyLeader), and
// answers that index. Concurrent requests share a round (reads).

// readyPoll is how often a new leader looks whether an entry of its term
// has been committed: raft signals nothing when it happens, and it takes
// one round trip after an election.
const readyPoll = 2 * time.Millisecond

// ReadIndex returns an index such that state at or after it reflects every
// write acknowledged before the call: the last command the leader knows
// is committed. Leader only. It writes no log entry, and concurrent calls
// share one heartbeat round, each waiting for a round that started after
// it asked. The caller waits until its replica has applied the index
// (WaitApplied).
func (n *Node) ReadIndex(ctx context.Context) (uint64, error) {
	if n.raft.State() != raft.Leader {
		return 0, ErrNotLeader
	}
	return n.reads.Do(ctx)
}

// ReadIndexRounds is how many read-index rounds this node has run.
func (n *Node) ReadIndexRounds() uint64 { return n.reads.Started() }

// readIndexRound is one round: its answer holds for every request that
// arrived before it started.
func (n *Node) readIndexRound(ctx context.Context) (uint64, error) {
	term, commit, err := n.termCommitted(ctx)
	if err != nil {
		return 0, err
	}
	if err := n.raft.VerifyLeader().Error(); err != nil {
		return 0, readErr(err)
	}
	// Leading in the same term before and after the heartbeat round means
	// this node led throughout: a node leads at most once per term.
	if n.raft.CurrentTerm() != term || n.raft.State() != raft.Leader {
		return 0, fmt.Errorf("%w: leadership changed during a read index", ErrNotLeader)
	}
	return n.lastCommand(commit)
}

// termCommitted waits until this leader has committed an entry of its own
// term (raft appends one on election) and returns that term and the
// commit index then.
func (n *Node) termCommitted(ctx context.Context) (term, commit uint64, err error) {
	var t *time.Timer
	for {
		if n.raft.State() != raft.Leader {
			return 0, 0, ErrNotLeader
		}
		term, commit = n.raft.CurrentTerm(), n.raft.CommitIndex()
		var l raft.Log
		switch err := n.cache.GetLog(commit, &l); {
		case err == nil && l.Term == term:
			return term, commit, nil
		case err != nil && !errors.Is(err, raft.ErrLogNotFound):
			return 0, 0, err
		}
		// Not yet (or the entry is in a snapshot just installed, which
		// cannot be of this term): look again.
		if t == nil {
			t = time.NewTimer(readyPoll)
			defer t.Stop()
		} else {
			t.Reset(readyPoll)
		}
		select {
		case <-ctx.Done():
			return 0, 0, fmt.Errorf("waiting for the new leader's first commit: %w", ctx.Err())
		case <-t.C:
		}
	}
}

// CommittedCommand is the index of the last command at or before the
// commit index this node knows (a follower learns it with the leader's
// appends): the index its FSM must have applied to reflect every entry
// the node knows committed. Raft's own applied index is no such signal:
// raft advances it when it hands entries to the FSM, before the FSM has
// applied them.
func (n *Node) CommittedCommand() (uint64, error) { return n.lastCommand(n.raft.CommitIndex()) }

// lastCommand is the index of the last command at or before index. The
// entries after it up to index (elections' no-ops, barriers,
// configuration changes) change no state, and the tracked FSM's applied
// index counts commands only, so that is the index a replica must reach.
// Where an entry is compacted out of the log, a snapshot of this node's FSM
// covers it (raft compacts the log only behind a snapshot it took or
// restored), so this FSM's applied index covers every command up to there.
func (n *Node) lastCommand(index uint64) (uint64, error) {
	for i := index; i > 0; i-- {
		var l raft.Log
		if err := n.cache.GetLog(i, &l); err != nil {
			if errors.Is(err, raft.ErrLogNotFound) {
				return n.fsm.applied.Load(), nil
			}
			return 0, err
		}
		if l.Type == raft.LogCommand {
			return i, nil
		}
	}
	return 0, nil
}

// readErr maps raft's answer to VerifyLeader: for a read, a lost
// leadership is only "not the leader" (nothing was written).
func readErr(err error) error {
	if errors.Is(err, raft.ErrLeadershipLost) || errors.Is(err, raft.ErrNotLeader) {
		return fmt.Errorf("%w: %v", ErrNotLeader, err)
	}
	return mapRaftErr(err)
}

// Barrier commits a barrier entry and returns once this node's FSM has
// applied every entry before it. Leader only. It writes a log entry on
// every node: leader workers start after one, once per term; reads use
// ReadIndex.
func (n *Node) Barrier(ctx context.Context) error {
	if n.raft.State() != raft.Leader {
		return ErrNotLeader
	}
	return mapRaftErr(n.raft.Barrier(timeoutOf(ctx, 10*time.Second)).Error())
}
