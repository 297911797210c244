package cluster

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/raft"
)

// trackedFSM wraps the model FSM to know exactly which raft index the local
// state reflects. raft's own AppliedIndex runs ahead of the FSM (it is set
// when logs are handed to the FSM goroutine) and counts barrier entries the
// FSM never sees, so it cannot back read-your-writes. The tracked index is
// the last command applied; snapshots carry it in an 8-byte header so a
// restore sets it too.
type trackedFSM struct {
	inner   raft.FSM
	applied atomic.Uint64
	mu      sync.Mutex
	changed chan struct{} // closed and replaced on every advance
}

func newTrackedFSM(inner raft.FSM) *trackedFSM {
	return &trackedFSM{inner: inner, changed: make(chan struct{})}
}

func (f *trackedFSM) advance(idx uint64) {
	f.applied.Store(idx)
	f.mu.Lock()
	close(f.changed)
	f.changed = make(chan struct{})
	f.mu.Unlock()
}

func (f *trackedFSM) Apply(l *raft.Log) any {
	var resp any
	if len(l.Data) > 0 && l.Data[0] == BatchMarker {
		resp = applyBatch(f.inner, l)
	} else {
		resp = f.inner.Apply(l)
	}
	f.advance(l.Index)
	return resp
}

func (f *trackedFSM) Snapshot() (raft.FSMSnapshot, error) {
	s, err := f.inner.Snapshot()
	if err != nil {
		return nil, err
	}
	return &trackedSnapshot{inner: s, index: f.applied.Load()}, nil
}

func (f *trackedFSM) Restore(rc io.ReadCloser) error {
	var hdr [8]byte
	if _, err := io.ReadFull(rc, hdr[:]); err != nil {
		rc.Close()
		return fmt.Errorf("snapshot header: %w", err)
	}
	if err := f.inner.Restore(rc); err != nil {
		return err
	}
	f.advance(binary.BigEndian.Uint64(hdr[:]))
	return nil
}

// wait blocks until the applied index reaches idx.
func (f *trackedFSM) wait(ctx context.Context, idx uint64) error {
	for {
		f.mu.Lock()
		ch := f.changed
		f.mu.Unlock()
		if f.applied.Load() >= idx {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ch:
		}
	}
}

type trackedSnapshot struct {
	inner raft.FSMSnapshot
	index uint64
}

func (s *trackedSnapshot) Persist(sink raft.SnapshotSink) error {
	var hdr [8]byte
	binary.BigEndian.PutUint64(hdr[:], s.index)
	if _, err := sink.Write(hdr[:]); err != nil {
		sink.Cancel()
		return err
	}
	return s.inner.Persist(sink)
}

func (s *trackedSnapshot) Release() { s.inner.Release() }
