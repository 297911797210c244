package state

import (
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/spoke/internal/state/stream"
	"github.com/hashicorp/raft"
)

// ApplyResult is what FSM.Apply returns to the proposer (through
// raft.ApplyFuture.Response). Err is an *api.Error or wraps one.
type ApplyResult struct {
	Value any
	Err   error
}

// FSMConfig holds the FSM's dependencies.
type FSMConfig struct {
	Logger *slog.Logger
	// EventBufferSize is the number of event batches kept for resuming
	// subscribers; 0 means stream.DefaultBufferSize.
	EventBufferSize int
}

// FSM is the raft state machine: it applies commands to the Store and
// publishes their events.
type FSM struct {
	logger *slog.Logger
	store  *Store
	events *stream.Broker
}

var _ raft.FSM = (*FSM)(nil)

// NewFSM returns an FSM over an empty store.
func NewFSM(cfg FSMConfig) (*FSM, error) {
	if cfg.Logger == nil {
		return nil, errors.New("state: FSMConfig.Logger is required")
	}
	if cfg.EventBufferSize < 0 {
		return nil, errors.New("state: FSMConfig.EventBufferSize is negative")
	}
	s, err := NewStore()
	if err != nil {
		return nil, err
	}
	return &FSM{logger: cfg.Logger, store: s, events: stream.NewBroker(cfg.EventBufferSize)}, nil
}

// Store is the store the FSM applies to; read it, never write it.
func (f *FSM) Store() *Store { return f.store }

// Events is the broker the FSM publishes to.
func (f *FSM) Events() *stream.Broker { return f.events }

// Apply applies one committed command. It never panics on a command it
// cannot decode: a log entry written by a newer version (an unknown
// MessageType) is logged and answered with an error result, and the entry
// changes nothing, so an older node keeps running until it is upgraded.
// Apply is deterministic: the same log gives the same store on every node.
func (f *FSM) Apply(l *raft.Log) any {
	res, events := f.apply(l.Index, l.Data)
	f.events.Publish(l.Index, events)
	return res
}

// ApplyBatch applies the commands of one group-committed raft entry in
// order, each atomically on its own, and publishes their events once, at
// the entry's index (watchers resume by index, so one index must be one
// event batch).
func (f *FSM) ApplyBatch(index uint64, cmds [][]byte) []any {
	out := make([]any, len(cmds))
	// Fast path: every command decodes and succeeds, in one transaction.
	fns := make([]func(tx *Txn) (any, error), 0, len(cmds))
	for _, buf := range cmds {
		_, c, req, err := decode(buf)
		if err != nil {
			fns = nil
			break
		}
		fns = append(fns, func(tx *Txn) (any, error) { return c.apply(tx, req) })
	}
	if fns != nil {
		if vals, events, ok := f.store.UpdateAll(index, fns); ok {
			for i, v := range vals {
				out[i] = ApplyResult{Value: v}
			}
			f.events.Publish(index, events)
			return out
		}
	}
	// Slow path: one transaction per command, so a failing one changes
	// nothing and the others still apply.
	var all []stream.Event
	for i, c := range cmds {
		res, events := f.apply(index, c)
		out[i] = res
		all = append(all, events...)
	}
	f.events.Publish(index, all)
	return out
}

func (f *FSM) apply(index uint64, data []byte) (ApplyResult, []stream.Event) {
	t, c, req, err := decode(data)
	if err != nil {
		f.logger.Error("cannot decode raft command; skipped", "index", index, "type", t, "err", err)
		return ApplyResult{Err: err}, nil
	}
	v, events, err := f.store.Update(index, func(tx *Txn) (any, error) { return c.apply(tx, req) })
	if err != nil {
		if api.CodeOf(err) == api.CodeInternal {
			f.logger.Error("raft command failed", "index", index, "type", t, "err", err)
		}
		// Returned as is: the *api.Error's message is the user-facing text.
		return ApplyResult{Err: err}, nil
	}
	return ApplyResult{Value: v}, events
}

// Snapshot captures the store as of now; Persist streams it later, off
// the apply path, from the immutable memdb view.
func (f *FSM) Snapshot() (raft.FSMSnapshot, error) {
	return &fsmSnapshot{snap: f.store.Snapshot()}, nil
}

// Restore replaces the whole store with a snapshot and makes every event
// subscriber resynchronise.
func (f *FSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	if err := f.store.Restore(rc); err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	idx, err := f.store.Snapshot().LatestIndex()
	if err != nil {
		return err
	}
	f.events.Reset(idx)
	return nil
}

type fsmSnapshot struct {
	snap *Snapshot
}

func (s *fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	if err := WriteSnapshot(s.snap, sink); err != nil {
		if cerr := sink.Cancel(); cerr != nil {
			return errors.Join(err, cerr)
		}
		return err
	}
	return sink.Close()
}

func (s *fsmSnapshot) Release() {}
