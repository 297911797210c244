// Package fanout hands values from one producer to many subscribers
// without ever blocking the producer: each subscriber has a bounded
// queue, and one whose queue is full when a value comes is dropped (its
// Gone channel closes). A dropped subscriber has missed a value; it
// subscribes again and starts over from what it reads elsewhere (a
// stream resumes by index).
package fanout

import "sync"

// Broker fans values of type T out to its subscribers.
type Broker[T any] struct {
	mu   sync.Mutex
	subs map[*Sub[T]]struct{}
	// dropped counts the subscribers dropped for a full queue.
	dropped int64
}

// Sub is one subscription: values arrive on C in order; Gone closes when
// the broker drops it for falling behind.
type Sub[T any] struct {
	C    <-chan T
	c    chan T
	gone chan struct{}
}

// Gone closes when the subscriber is dropped for a full queue.
func (s *Sub[T]) Gone() <-chan struct{} { return s.gone }

// New returns an empty broker.
func New[T any]() *Broker[T] { return &Broker[T]{subs: map[*Sub[T]]struct{}{}} }

// Subscribe adds a subscriber whose queue holds depth values (at least 1).
func (b *Broker[T]) Subscribe(depth int) *Sub[T] {
	c := make(chan T, max(depth, 1))
	s := &Sub[T]{C: c, c: c, gone: make(chan struct{})}
	b.mu.Lock()
	b.subs[s] = struct{}{}
	b.mu.Unlock()
	return s
}

// Unsubscribe removes s; it is safe to call more than once, and on a
// subscriber already dropped.
func (b *Broker[T]) Unsubscribe(s *Sub[T]) {
	b.mu.Lock()
	delete(b.subs, s)
	b.mu.Unlock()
}

// Publish queues v for every subscriber, dropping those whose queue is
// full. It never blocks.
func (b *Broker[T]) Publish(v T) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for s := range b.subs {
		select {
		case s.c <- v:
		default:
			delete(b.subs, s)
			close(s.gone)
			b.dropped++
		}
	}
}

// Len returns how many subscribers the broker holds.
func (b *Broker[T]) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.subs)
}

// Dropped returns how many subscribers were dropped for a full queue.
func (b *Broker[T]) Dropped() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.dropped
}
