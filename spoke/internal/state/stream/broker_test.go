package stream

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"
)

func TestBrokerResumeAndReset(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b := NewBroker(3)
	ev := func(i uint64, model string) []Event {
		return []Event{{Index: i, ModelUUID: model, Kind: "unit", Key: "u", Op: OpUpsert}}
	}
	b.Publish(1, ev(1, "a"))
	b.Publish(2, ev(2, "b"))
	b.Publish(3, ev(3, "a"))

	s, _ := b.Subscribe(ctx, SubscribeRequest{ModelUUID: "a", Since: 1})
	evs, err := s.Next(ctx)
	if err != nil || len(evs) != 1 || evs[0].Index != 3 || s.Index() != 3 {
		t.Fatalf("resume: %+v %v", evs, err)
	}
	// A blocked Next wakes on publish; the publisher never waits.
	got := make(chan []Event, 1)
	go func() {
		evs, _ := s.Next(ctx)
		got <- evs
	}()
	b.Publish(4, ev(4, "b")) // filtered out
	b.Publish(5, ev(5, "a"))
	if evs := <-got; len(evs) != 1 || evs[0].Index != 5 {
		t.Fatalf("woken with %+v", evs)
	}

	// Batches 1 and 2 fell out of the ring: resuming from 1 is a gap.
	old, _ := b.Subscribe(ctx, SubscribeRequest{Since: 1})
	if _, err := old.Next(ctx); !errors.Is(err, ErrSubscriptionReset) {
		t.Fatalf("gap: %v", err)
	}
	// A slow subscriber is overtaken and reset, without blocking Publish.
	slow, _ := b.Subscribe(ctx, SubscribeRequest{Since: 5})
	for i := uint64(6); i < 20; i++ {
		b.Publish(i, ev(i, "a"))
	}
	if _, err := slow.Next(ctx); !errors.Is(err, ErrSubscriptionReset) {
		t.Fatalf("slow subscriber: %v", err)
	}
	// A reset (restore) resets everyone, even subscribers up to date.
	fresh, _ := b.Subscribe(ctx, SubscribeRequest{Since: 19})
	b.Reset(19)
	if _, err := fresh.Next(ctx); !errors.Is(err, ErrSubscriptionReset) {
		t.Fatalf("after reset: %v", err)
	}
	// Resubscribing from the snapshot index works.
	again, _ := b.Subscribe(ctx, SubscribeRequest{Since: 19})
	b.Publish(20, ev(20, "a"))
	if evs, err := again.Next(ctx); err != nil || evs[0].Index != 20 {
		t.Fatalf("resubscribed: %+v %v", evs, err)
	}
	short, stop := context.WithCancel(ctx)
	stop()
	if _, err := again.Next(short); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Next: %v", err)
	}
}

// TestSubscriptionPositions checks that a subscription resumes after its
// position whatever it falls on (batch indexes have gaps: a raft index
// without events publishes nothing), one batch or several at a time.
func TestSubscriptionPositions(t *testing.T) {
	ctx := t.Context()
	b := NewBroker(100)
	for i := uint64(10); i <= 50; i += 10 {
		b.Publish(i, []Event{{Index: i, ModelUUID: "a"}, {Index: i, ModelUUID: "b"}})
	}
	indexes := func(evs []Event) []uint64 {
		var out []uint64
		for _, e := range evs {
			out = append(out, e.Index)
		}
		return out
	}
	for _, tc := range []struct {
		since uint64
		model string
		want  []uint64
	}{
		{0, "", []uint64{10, 10, 20, 20, 30, 30, 40, 40, 50, 50}},
		{15, "", []uint64{20, 20, 30, 30, 40, 40, 50, 50}},
		{40, "", []uint64{50, 50}},
		{40, "b", []uint64{50}},
		{20, "a", []uint64{30, 40, 50}},
	} {
		s, _ := b.Subscribe(ctx, SubscribeRequest{ModelUUID: tc.model, Since: tc.since})
		evs, err := s.Next(ctx)
		if err != nil || !slices.Equal(indexes(evs), tc.want) || s.Index() != 50 {
			t.Errorf("since %d model %q: %v (index %d), %v; want %v", tc.since, tc.model, indexes(evs), s.Index(), err, tc.want)
		}
	}
	// Up to date: nothing to return, Next waits for the next publish.
	s, _ := b.Subscribe(ctx, SubscribeRequest{Since: 50})
	short, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancel()
	if evs, err := s.Next(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("up to date: %v, %v", evs, err)
	}
}
