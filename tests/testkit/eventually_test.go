package testkit

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeTB records failures instead of ending the goroutine, so tests can
// check what Eventually reports. Methods not overridden panic via the nil
// embedded interface, which would flag an unexpected call.
type fakeTB struct {
	testing.TB
	ctx context.Context

	mu     sync.Mutex
	fatals []string
}

func (f *fakeTB) Helper()                  {}
func (f *fakeTB) Context() context.Context { return f.ctx }
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fatals = append(f.fatals, fmt.Sprintf(format, args...))
}

func (f *fakeTB) failures() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.fatals...)
}

func TestEventuallySucceedsAfterErrors(t *testing.T) {
	CheckLeaks(t)
	ft := &fakeTB{ctx: t.Context()}
	calls := 0
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	Eventually(ctx, ft, func() (bool, error) {
		calls++
		switch {
		case calls < 3:
			return false, errors.New("not yet")
		case calls < 5:
			return false, nil
		}
		return true, nil
	})
	if got := ft.failures(); len(got) != 0 {
		t.Fatalf("unexpected failures: %v", got)
	}
	if calls != 5 {
		t.Fatalf("cond called %d times, want 5", calls)
	}
}

func TestEventuallyTimeoutReportsLastErrorAndMessage(t *testing.T) {
	CheckLeaks(t)
	ft := &fakeTB{ctx: t.Context()}
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	calls := 0
	start := time.Now()
	Eventually(ctx, ft, func() (bool, error) {
		calls++
		return false, fmt.Errorf("attempt %d failed", calls)
	}, "waiting for %s", "widgets")
	elapsed := time.Since(start)

	got := ft.failures()
	if len(got) != 1 {
		t.Fatalf("got %d failures, want 1: %v", len(got), got)
	}
	for _, want := range []string{"waiting for widgets", fmt.Sprintf("last error: attempt %d failed", calls), "deadline exceeded"} {
		if !strings.Contains(got[0], want) {
			t.Errorf("failure %q does not contain %q", got[0], want)
		}
	}
	if calls < 3 {
		t.Errorf("cond called %d times in 50ms, want several (backoff starts at 5ms)", calls)
	}
	if elapsed > 5*time.Second {
		t.Errorf("Eventually returned after %v, long past the 50ms deadline", elapsed)
	}
}

func TestEventuallyWithinUsesTestContext(t *testing.T) {
	CheckLeaks(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel() // the "test" is already over: EventuallyWithin must not wait d
	ft := &fakeTB{ctx: ctx}
	EventuallyWithin(ft, time.Hour, func() (bool, error) { return false, nil }, "never")
	got := ft.failures()
	if len(got) != 1 || !strings.Contains(got[0], "never") || !strings.Contains(got[0], "canceled") {
		t.Fatalf("failures = %v, want one mentioning the message and cancellation", got)
	}
}

func TestFormatMsg(t *testing.T) {
	for _, tc := range []struct {
		in   []any
		want string
	}{
		{nil, ""},
		{[]any{"plain"}, "plain"},
		{[]any{"n=%d", 3}, "n=3"},
		{[]any{42, "x"}, "42 x"},
	} {
		if got := formatMsg(tc.in); got != tc.want {
			t.Errorf("formatMsg(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
