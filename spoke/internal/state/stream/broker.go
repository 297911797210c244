// Package stream is the spoke's event stream: the FSM publishes the events
// of each applied raft index, and watchers (the API's watch and follow
// streams, the agent gateway, the provisioner, blob sync) read them from a position.
//
// Invariants:
//
//   - Events come in raft index order, one batch per index; an index
//     without events publishes nothing.
//   - Publish never waits for subscribers. The broker keeps a bounded ring
//     of batches; a subscriber positioned before the ring, or any
//     subscriber after a Reset (a snapshot restore), gets
//     ErrSubscriptionReset and resubscribes from a fresh snapshot's index.
//   - Published batches are never modified, so they are shared with every
//     subscriber as they are.
package stream

import (
	"cmp"
	"context"
	"slices"
	"sync"

	"github.com/droverhq/drover/api"
)

// Event operations.
const (
	OpUpsert = "upsert"
	OpDelete = "delete"
)

// Event is one object changed by one raft command. Kind names the table
// (package state declares the kinds), Key the object in it. Object is the
// stored object after the change (before it, for a delete) and must not
// be modified.
type Event struct {
	Index     uint64 `json:"index"`
	ModelUUID string `json:"model-uuid,omitempty"`
	Kind      string `json:"kind"`
	Key       string `json:"key"`
	Op        string `json:"op"`
	Object    any    `json:"object"`
}

// ErrSubscriptionReset tells a subscriber that events it needs are gone
// (it fell behind the ring, or the store was restored): it must read a full
// snapshot and subscribe again from that snapshot's index.
var ErrSubscriptionReset = api.Errorf(api.CodeConflict, "event subscription reset: resynchronise from a snapshot")

// DefaultBufferSize is the number of batches the broker keeps.
const DefaultBufferSize = 4096

type eventBatch struct {
	index  uint64
	events []Event
}

// Broker keeps the last batches of events in a bounded ring.
// Publishing never waits for subscribers: a subscriber that falls behind
// the ring gets ErrSubscriptionReset.
type Broker struct {
	size int

	// mu guards the fields below. Subscribers only read them, and each
	// publish wakes them all at once, so they share it.
	mu sync.RWMutex
	// ring holds batches in index order, oldest first.
	ring []eventBatch
	// floor is the highest index whose events may be missing: a
	// subscriber positioned before it cannot be served.
	floor uint64
	// gen is bumped by Reset so that every subscriber resynchronises.
	gen uint64
	// notify is closed (and replaced) on every publish and reset.
	notify chan struct{}
}

// NewBroker returns a broker keeping size batches (default 4096).
func NewBroker(size int) *Broker {
	if size <= 0 {
		size = DefaultBufferSize
	}
	return &Broker{size: size, notify: make(chan struct{})}
}

// Publish adds the events of the command at index. Call it after the
// command's transaction committed.
func (b *Broker) Publish(index uint64, events []Event) {
	if len(events) == 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.ring = append(b.ring, eventBatch{index: index, events: events})
	if over := len(b.ring) - b.size; over > 0 {
		b.floor = b.ring[over-1].index
		// Reslicing is amortised: append copies only the live tail when it
		// next grows the backing array.
		b.ring = b.ring[over:]
	}
	b.wakeLocked()
}

// Reset drops every buffered batch and forces every subscriber to
// resynchronise; index is the store's index after a restore.
func (b *Broker) Reset(index uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.ring, b.floor = nil, index
	b.gen++
	b.wakeLocked()
}

func (b *Broker) wakeLocked() {
	close(b.notify)
	b.notify = make(chan struct{})
}

// SubscribeRequest selects the events of one model ("" for all) after
// index Since.
type SubscribeRequest struct {
	ModelUUID string
	Since     uint64
}

// Subscription reads events in index order. It holds no goroutine; use it
// from one goroutine at a time.
type Subscription struct {
	b     *Broker
	model string
	since uint64
	gen   uint64
}

// Subscribe starts a subscription. Its first Next returns
// ErrSubscriptionReset if events after Since are no longer buffered.
func (b *Broker) Subscribe(ctx context.Context, req SubscribeRequest) (*Subscription, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	b.mu.RLock()
	defer b.mu.RUnlock()
	return &Subscription{b: b, model: req.ModelUUID, since: req.Since, gen: b.gen}, nil
}

// Next blocks until there are events after the subscription's position
// and returns them (each carries its index), or until ctx ends. The slice
// may be shared with other subscribers: read it, never modify it.
func (s *Subscription) Next(ctx context.Context) ([]Event, error) {
	for {
		evs, wait, err := s.poll()
		if err != nil || len(evs) > 0 {
			return evs, err
		}
		select {
		case <-wait:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// poll returns the buffered events after the position, or the channel to
// wait on when there are none.
func (s *Subscription) poll() ([]Event, <-chan struct{}, error) {
	b := s.b
	b.mu.RLock()
	defer b.mu.RUnlock()
	if s.gen != b.gen || s.since < b.floor {
		return nil, nil, ErrSubscriptionReset
	}
	// The ring is in index order: skip what the subscriber has seen
	// without walking it (it holds thousands of batches).
	i, _ := slices.BinarySearchFunc(b.ring, s.since+1, func(e eventBatch, idx uint64) int {
		return cmp.Compare(e.index, idx)
	})
	newer := b.ring[i:]
	if len(newer) == 0 {
		return nil, b.notify, nil
	}
	s.since = newer[len(newer)-1].index
	if len(newer) == 1 && s.model == "" {
		// The usual case under load: one batch, every model. Published
		// batches are never modified, so it is handed out as is.
		return slices.Clip(newer[0].events), b.notify, nil
	}
	var out []Event
	for _, batch := range newer {
		for _, e := range batch.events {
			if s.model == "" || e.ModelUUID == s.model {
				out = append(out, e)
			}
		}
	}
	return out, b.notify, nil
}

// Index is the index of the last batch the subscription has passed.
func (s *Subscription) Index() uint64 { return s.since }
