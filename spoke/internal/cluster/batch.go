package cluster

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// Group commit. While earlier proposals are being replicated, new ones
// queue and go out together as one raft entry, so the per-entry costs
// (log encoding, replication messages, futures, FSM calls) are paid once
// per batch rather than once per write. A lone proposal is sent at once,
// unbatched: batching adds no latency when there is no queue.
//
// A batch entry is BatchMarker followed by uvarint count and, per command,
// uvarint length and bytes. The FSM sees each command in order, all at the
// batch entry's raft index (BatchFSM applies them in one call).

// BatchMarker is the first byte of a batch entry. The FSM's own command
// encoding must never start with it.
const BatchMarker byte = 0xFF

const (
	maxBatch    = 256 // commands per entry
	maxInflight = 4   // entries being replicated at once
)

// BatchFSM is implemented by an FSM that can apply the commands of one
// batch entry together (publishing their effects once per raft index).
// Each command must still apply atomically on its own: one failing does
// not affect the others.
type BatchFSM interface {
	ApplyBatch(index uint64, cmds [][]byte) []any
}

type proposal struct {
	cmd  []byte
	done chan struct{}
	resp any
	idx  uint64
	err  error
}

type batcher struct {
	n        *Node
	mu       sync.Mutex
	pending  []*proposal
	inflight int
}

func (b *batcher) propose(ctx context.Context, cmd []byte) (any, uint64, error) {
	p := &proposal{cmd: cmd, done: make(chan struct{})}
	b.mu.Lock()
	b.pending = append(b.pending, p)
	b.flushLocked()
	b.mu.Unlock()
	select {
	case <-p.done:
		return p.resp, p.idx, p.err
	case <-ctx.Done():
		// The command may still commit; the caller reports an unknown
		// outcome.
		return nil, 0, fmt.Errorf("%w: %v", ErrUnknownOutcome, ctx.Err())
	}
}

// flushLocked starts replicating queued proposals if fewer than
// maxInflight entries are in flight.
func (b *batcher) flushLocked() {
	for b.inflight < maxInflight && len(b.pending) > 0 {
		n := min(len(b.pending), maxBatch)
		batch := b.pending[:n:n]
		b.pending = b.pending[n:]
		b.inflight++
		go b.submit(batch) // bounded by maxInflight; joined via the proposals' done channels
	}
}

func (b *batcher) submit(batch []*proposal) {
	defer func() {
		b.mu.Lock()
		b.inflight--
		b.flushLocked()
		b.mu.Unlock()
	}()
	data := batch[0].cmd
	if len(batch) > 1 {
		data = encodeBatch(batch)
	}
	f := b.n.raft.Apply(data, 30*time.Second)
	err := mapRaftErr(f.Error())
	var resps []any
	if err == nil {
		if len(batch) == 1 {
			resps = []any{f.Response()}
		} else if r, ok := f.Response().([]any); ok && len(r) == len(batch) {
			resps = r
		} else {
			err = fmt.Errorf("cluster: FSM answered a batch of %d with %T", len(batch), f.Response())
		}
	}
	for i, p := range batch {
		if err != nil {
			p.err = err
		} else {
			p.resp, p.idx = resps[i], f.Index()
		}
		close(p.done)
	}
}

func encodeBatch(batch []*proposal) []byte {
	size := 1 + binary.MaxVarintLen64
	for _, p := range batch {
		size += binary.MaxVarintLen64 + len(p.cmd)
	}
	buf := make([]byte, 0, size)
	buf = append(buf, BatchMarker)
	buf = binary.AppendUvarint(buf, uint64(len(batch)))
	for _, p := range batch {
		buf = binary.AppendUvarint(buf, uint64(len(p.cmd)))
		buf = append(buf, p.cmd...)
	}
	return buf
}

var errBadBatch = errors.New("cluster: malformed batch entry")

func decodeBatch(data []byte) ([][]byte, error) {
	if len(data) == 0 || data[0] != BatchMarker {
		return nil, errBadBatch
	}
	rest := data[1:]
	n, k := binary.Uvarint(rest)
	if k <= 0 || n > uint64(len(rest)) {
		return nil, errBadBatch
	}
	rest = rest[k:]
	cmds := make([][]byte, 0, n)
	for i := uint64(0); i < n; i++ {
		l, k := binary.Uvarint(rest)
		if k <= 0 || l > uint64(len(rest)-k) {
			return nil, errBadBatch
		}
		cmds = append(cmds, rest[k:k+int(l)])
		rest = rest[k+int(l):]
	}
	if len(rest) != 0 {
		return nil, errBadBatch
	}
	return cmds, nil
}

// applyBatch applies a batch entry through the FSM, command by command if
// it does not implement BatchFSM.
func applyBatch(fsm raft.FSM, l *raft.Log) any {
	cmds, err := decodeBatch(l.Data)
	if err != nil {
		return err
	}
	if bf, ok := fsm.(BatchFSM); ok {
		return bf.ApplyBatch(l.Index, cmds)
	}
	out := make([]any, len(cmds))
	for i, c := range cmds {
		out[i] = fsm.Apply(&raft.Log{Index: l.Index, Term: l.Term, Type: l.Type, Data: c, AppendedAt: l.AppendedAt})
	}
	return out
}
