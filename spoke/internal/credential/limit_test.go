package credential

import (
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/droverhq/drover/api"
)

type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

// TestLimiterRefusesAndRecovers: a name's failures use up its bucket (from
// any address), an address's failures its own (for any name), and both
// recover at their rates.
func TestLimiterRefusesAndRecovers(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1e9, 0)}
	l := NewLimiter(Limits{AddrBurst: 5, AddrEvery: time.Second, NameBurst: 3, NameEvery: 10 * time.Second, MaxKeys: 100}, clock.now)
	for i := range 3 {
		if err := l.Allow("a", "alice"); err != nil {
			t.Fatalf("failure %d refused: %v", i, err)
		}
		l.Fail("a", "alice")
	}
	te := l.Allow("b", "alice")
	if te == nil || !errors.Is(error(te), ErrThrottled) || te.Seconds() != 10 {
		t.Fatalf("a used-up name from another address: %v, want throttled for 10s", te)
	}
	if err := l.Allow("b", "bob"); err != nil {
		t.Fatalf("another name from another address: %v", err)
	}
	l.Fail("a", "bob")
	l.Fail("a", "carol")
	if err := l.Allow("a", "dave"); err == nil {
		t.Fatalf("a used-up address with a new name: %v, want throttled", err)
	}
	clock.t = clock.t.Add(time.Second)
	if err := l.Allow("a", "dave"); err != nil {
		t.Fatalf("the address a second later: %v", err)
	}
	clock.t = clock.t.Add(9 * time.Second)
	if err := l.Allow("b", "alice"); err != nil {
		t.Fatalf("the name after its retry time: %v", err)
	}
	h := http.Header{}
	if got := Refusal(h, te); api.CodeOf(got) != api.CodeTooMany || h.Get("Retry-After") != "10" {
		t.Errorf("throttled answers %v with Retry-After %q, want too-many and 10", got, h.Get("Retry-After"))
	}
}

// TestLimiterBounded: a flood of new addresses and names keeps the
// limiter's memory at its bound.
func TestLimiterBounded(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1e9, 0)}
	l := NewLimiter(Limits{MaxKeys: 50}, clock.now)
	for i := range 10000 {
		l.Fail(fmt.Sprintf("10.0.%d.%d", i/256, i%256), fmt.Sprintf("name-%d", i))
	}
	if a, n := l.Len(); a > 50 || n > 50 {
		t.Fatalf("after 10000 failures from new addresses and names the limiter keeps %d addresses and %d names, want at most 50", a, n)
	}
	long := string(make([]byte, 1<<20))
	l.Fail("x", long)
	for k := range l.names.m {
		if len(k) > maxNameKey {
			t.Fatalf("a name key of %d bytes kept", len(k))
		}
	}
}
