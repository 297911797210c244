// Package propose is a controller node's raft write and read path:
// Propose applies a command on the leader or forwards it there from a
// follower (spoke/internal/peer), retrying only where the command was
// certainly not applied; WaitRead makes a read on the local replica
// current. It serves the forwarded side too (ForwardedApply,
// ForwardedReadIndex).
package propose

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/internal/coalesce"
	"github.com/droverhq/drover/spoke/internal/cluster"
	"github.com/droverhq/drover/spoke/internal/peer"
	"github.com/droverhq/drover/spoke/internal/state"
)

// Proposer writes and reads through raft for one node.
type Proposer struct {
	node  *cluster.Node
	fsm   *state.FSM
	peers *peer.Client
	// settled latches once the local replica held this node's own
	// controller-node record (CatchUp).
	settled atomic.Bool
	// forwarded shares a follower's requests for the leader's read index:
	// one request to the leader in flight at a time, whatever the number
	// of reads waiting (the leader shares its heartbeat rounds likewise).
	forwarded *coalesce.Rounds[uint64]
}

// New returns the proposer of node, whose replica is fsm and which calls
// other nodes with peers.
func New(node *cluster.Node, fsm *state.FSM, peers *peer.Client) *Proposer {
	s := &Proposer{node: node, fsm: fsm, peers: peers}
	s.forwarded = coalesce.New(s.leaderReadIndex)
	return s
}

// Propose encodes and replicates a command, forwarding it to the leader when
// this node is a follower. It retries only where the command certainly was
// not applied (no leader yet, the node asked was not the leader, the leader
// could not be dialled); any other failure reports an unknown outcome.
// The value is the FSM's Go value when this node applied the command, or
// its JSON (json.RawMessage) when the leader did.
func (s *Proposer) Propose(ctx context.Context, t state.MessageType, req any) (any, uint64, error) {
	cmd, err := state.Encode(t, req)
	if err != nil {
		return nil, 0, api.Errorf(api.CodeInternal, "encode command: %v", err)
	}
	if s.node.IsLeader() {
		// The usual case needs no deadline of its own (a timer per write
		// measured 5% of the leader's CPU under load): raft answers every
		// proposal it accepted, on commit, on losing leadership or on
		// shutdown, and ctx ends with the request.
		val, idx, err := s.applyLocal(ctx, cmd)
		if err == nil || !retryable(err) {
			return val, idx, err
		}
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 15*time.Second)
		defer cancel()
	}
	backoff := 10 * time.Millisecond
	for {
		val, idx, err := s.proposeOnce(ctx, cmd)
		if err == nil || !retryable(err) {
			return val, idx, err
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, 0, api.Errorf(api.CodeUnavailable, "no raft leader reachable: %v", err)
		case <-t.C:
		}
		if backoff < 200*time.Millisecond {
			backoff *= 2
		}
	}
}

// errRetry marks a failure where the command was certainly not applied.
type errRetry struct{ err error }

func (e errRetry) Error() string { return e.err.Error() }
func (e errRetry) Unwrap() error { return e.err }

func retryable(err error) bool {
	var r errRetry
	var nd *peer.NotDeliveredError
	return errors.As(err, &r) || errors.As(err, &nd) || errors.Is(err, cluster.ErrNotLeader) || errors.Is(err, cluster.ErrNoLeader)
}

func (s *Proposer) proposeOnce(ctx context.Context, cmd []byte) (any, uint64, error) {
	if s.node.IsLeader() {
		return s.applyLocal(ctx, cmd)
	}
	leaderID, _, err := s.node.Leader()
	if err != nil {
		return nil, 0, err
	}
	addr, err := s.APIAddrOf(leaderID)
	if err != nil {
		return nil, 0, errRetry{err}
	}
	out, err := s.peers.Apply(ctx, addr, cmd)
	if err != nil {
		return nil, 0, err
	}
	if out.Error != nil {
		if out.Error.Code == peer.CodeNotRaftLeader {
			return nil, 0, errRetry{out.Error}
		}
		return nil, out.Index, out.Error
	}
	return json.RawMessage(out.Value), out.Index, nil
}

// applyLocal applies on this node, which believes it leads.
func (s *Proposer) applyLocal(ctx context.Context, cmd []byte) (any, uint64, error) {
	resp, idx, err := s.node.Apply(ctx, cmd)
	if err != nil {
		switch {
		case errors.Is(err, cluster.ErrNotLeader):
			return nil, 0, err
		case errors.Is(err, cluster.ErrUnknownOutcome):
			return nil, 0, api.Errorf(api.CodeTimeout, "leadership changed while the write was in flight; it may or may not have been applied")
		case errors.Is(err, cluster.ErrShutdown):
			return nil, 0, api.Errorf(api.CodeUnavailable, "controller node is shutting down")
		}
		return nil, 0, api.Errorf(api.CodeTimeout, "raft apply: %v", err)
	}
	res, ok := resp.(state.ApplyResult)
	if !ok {
		return nil, idx, api.Errorf(api.CodeInternal, "unexpected FSM response %T", resp)
	}
	if res.Err != nil {
		return nil, idx, res.Err
	}
	return res.Value, idx, nil
}

// ForwardedApply serves a follower's forwarded command.
func (s *Proposer) ForwardedApply(ctx context.Context, cmd []byte) (json.RawMessage, uint64, error) {
	if !s.node.IsLeader() {
		return nil, 0, &api.Error{Code: peer.CodeNotRaftLeader, Message: "this node is not the raft leader"}
	}
	val, idx, err := s.applyLocal(ctx, cmd)
	if errors.Is(err, cluster.ErrNotLeader) {
		return nil, 0, &api.Error{Code: peer.CodeNotRaftLeader, Message: "this node is not the raft leader"}
	}
	if err != nil {
		return nil, idx, err
	}
	raw, err := json.Marshal(val)
	if err != nil {
		return nil, idx, api.Errorf(api.CodeInternal, "encode result: %v", err)
	}
	return raw, idx, nil
}

// ForwardedReadIndex serves a follower's read-index request.
func (s *Proposer) ForwardedReadIndex(ctx context.Context) (uint64, error) {
	idx, err := s.node.ReadIndex(ctx)
	if errors.Is(err, cluster.ErrNotLeader) {
		return 0, &api.Error{Code: peer.CodeNotRaftLeader, Message: "this node is not the raft leader"}
	}
	return idx, err
}

// WaitRead prepares a read: with consistent it first learns the leader's
// read index (a heartbeat round on the leader, no log entry; concurrent
// reads share rounds); then it waits until the local replica has applied
// at least that and minIndex. It returns the index the read will reflect.
func (s *Proposer) WaitRead(ctx context.Context, minIndex uint64, consistent bool) (uint64, error) {
	if consistent {
		idx, err := s.readIndex(ctx)
		if err != nil {
			return 0, err
		}
		minIndex = max(minIndex, idx)
	}
	if minIndex > 0 {
		if err := s.node.WaitApplied(ctx, minIndex); err != nil {
			return 0, api.Errorf(api.CodeTimeout, "waiting for raft index %d: %v", minIndex, err)
		}
	}
	return s.node.AppliedIndex(), nil
}

// CatchUp waits until the local replica has applied every entry this node
// knows to be committed (a follower learns the leader's commit index with
// each append or heartbeat). It sends no message and writes no log entry,
// so it may run for any request, authenticated or not: it serves checks
// that a lagging node must not refuse (a credential another node created
// a moment ago) at the price of bounded, not zero, staleness.
//
// A node that has not yet applied its own controller-node record (it
// registers itself right after joining, so that record comes after the
// controller's first user) has just joined and cannot know what is
// committed: until then CatchUp is a consistent read. Once the record is
// seen, that is remembered.
func (s *Proposer) CatchUp(ctx context.Context) error {
	if !s.registered() {
		_, err := s.WaitRead(ctx, 0, true)
		return err
	}
	idx, err := s.node.CommittedCommand()
	if err != nil {
		return api.Errorf(api.CodeUnavailable, "read the raft log: %v", err)
	}
	if err := s.node.WaitApplied(ctx, idx); err != nil {
		return api.Errorf(api.CodeTimeout, "waiting for raft index %d: %v", idx, err)
	}
	return nil
}

// HeardCommit waits until this node knows of a commit index newer than
// known, or ctx ends, and returns the newest it knows; heard reports
// whether it is newer than known. The leader knows every commit at once:
// it hears of none. A follower learns that entries are committed with
// the leader's next append, some tens of milliseconds after the leader
// acknowledged them; waiting sends no message.
func (s *Proposer) HeardCommit(ctx context.Context, known uint64) (commit uint64, heard bool) {
	if s.node.IsLeader() {
		return 0, false
	}
	r := s.node.Raft()
	t := time.NewTicker(commitPoll)
	defer t.Stop()
	for {
		if c := r.CommitIndex(); c > known {
			return c, true
		}
		select {
		case <-ctx.Done():
			return r.CommitIndex(), false
		case <-t.C:
		}
	}
}

// registered reports whether the local replica holds this node's own
// controller-node record.
func (s *Proposer) registered() bool {
	if s.settled.Load() {
		return true
	}
	nodes, err := s.fsm.Store().Snapshot().ListControllerNodes()
	if err != nil {
		return false
	}
	for _, n := range nodes {
		if n.ID == s.node.ID() {
			s.settled.Store(true)
			return true
		}
	}
	return false
}

// commitPoll is how often HeardCommit looks at the commit index, which
// raft signals to no one.
const commitPoll = 5 * time.Millisecond

func (s *Proposer) readIndex(ctx context.Context) (uint64, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
	}
	backoff := 10 * time.Millisecond
	for {
		idx, err := s.readIndexOnce(ctx)
		if err == nil || !retryable(err) {
			return idx, err
		}
		select {
		case <-ctx.Done():
			return 0, api.Errorf(api.CodeUnavailable, "no raft leader reachable: %v", err)
		case <-time.After(backoff):
		}
		if backoff < 200*time.Millisecond {
			backoff *= 2
		}
	}
}

func (s *Proposer) readIndexOnce(ctx context.Context) (uint64, error) {
	if s.node.IsLeader() {
		idx, err := s.node.ReadIndex(ctx)
		if err != nil && !errors.Is(err, cluster.ErrNotLeader) {
			return 0, api.Errorf(api.CodeUnavailable, "read index: %v", err)
		}
		return idx, err
	}
	return s.forwarded.Do(ctx)
}

// leaderReadIndex asks the leader for its read index: one round of
// s.forwarded.
func (s *Proposer) leaderReadIndex(ctx context.Context) (uint64, error) {
	leaderID, _, err := s.node.Leader()
	if err != nil {
		return 0, err
	}
	addr, err := s.APIAddrOf(leaderID)
	if err != nil {
		return 0, errRetry{err}
	}
	out, err := s.peers.ReadIndex(ctx, addr)
	if err != nil {
		// A read changes nothing: any failure may be retried.
		return 0, errRetry{err}
	}
	if out.Error != nil {
		return 0, errRetry{out.Error}
	}
	return out.Index, nil
}

// LeaderAPIAddr is the API address of the node this one believes leads.
func (s *Proposer) LeaderAPIAddr() (string, error) {
	id, _, err := s.node.Leader()
	if err != nil {
		return "", err
	}
	return s.APIAddrOf(id)
}

// APIAddrOf maps a raft server ID to its API address from the replicated
// controller-node records.
func (s *Proposer) APIAddrOf(nodeID string) (string, error) {
	nodes, err := s.fsm.Store().Snapshot().ListControllerNodes()
	if err != nil {
		return "", err
	}
	for _, n := range nodes {
		if n.ID == nodeID && n.APIAddr != "" {
			return n.APIAddr, nil
		}
	}
	return "", fmt.Errorf("no API address known for node %s", nodeID)
}
