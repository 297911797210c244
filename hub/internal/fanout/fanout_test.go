package fanout

import "testing"

// TestSlowSubscriberIsDropped: a subscriber that does not drain its queue
// is dropped when a value finds it full; the producer never blocks, and
// the others go on receiving every value in order.
func TestSlowSubscriberIsDropped(t *testing.T) {
	b := New[int]()
	slow, fast := b.Subscribe(2), b.Subscribe(2)
	for i := range 10 {
		b.Publish(i) // would block here were the producer held by slow
		if got := <-fast.C; got != i {
			t.Fatalf("fast subscriber got %d, want %d", got, i)
		}
	}
	select {
	case <-slow.Gone():
	default:
		t.Fatal("the slow subscriber was not dropped")
	}
	select {
	case <-fast.Gone():
		t.Fatal("the fast subscriber was dropped")
	default:
	}
	if got, want := <-slow.C, 0; got != want {
		t.Fatalf("slow subscriber's first value %d, want %d", got, want)
	}
	if b.Len() != 1 || b.Dropped() != 1 {
		t.Fatalf("Len %d Dropped %d, want 1 and 1", b.Len(), b.Dropped())
	}
	b.Unsubscribe(fast)
	b.Unsubscribe(fast)
	b.Unsubscribe(slow)
	if b.Len() != 0 {
		t.Fatalf("Len %d after unsubscribing all", b.Len())
	}
	b.Publish(99) // no subscriber: nothing to do
}
