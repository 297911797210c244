package testkit

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// Poll backoff bounds: short enough that a test waits little past the moment
// the condition holds, capped so a slow condition is not hammered.
const (
	pollStart = 5 * time.Millisecond
	pollCap   = 200 * time.Millisecond
)

// Eventually calls cond until it returns true, backing off from 5ms to 200ms
// between calls. An error from cond does not stop the polling: it is kept and
// reported if ctx ends first, in which case the test fails with the last
// error and the optional message (msgAndArgs[0] may be a format string for
// the rest).
func Eventually(ctx context.Context, t testing.TB, cond func() (bool, error), msgAndArgs ...any) {
	t.Helper()
	delay := pollStart
	var lastErr error
	timer := time.NewTimer(0)
	defer timer.Stop()
	for attempt := 1; ; attempt++ {
		ok, err := cond()
		if err == nil && ok {
			return
		}
		if err != nil {
			lastErr = err
		}
		timer.Reset(delay)
		select {
		case <-ctx.Done():
			t.Fatalf("%s", failureText(ctx, attempt, lastErr, msgAndArgs))
			return
		case <-timer.C:
		}
		delay = min(2*delay, pollCap)
	}
}

// EventuallyWithin is Eventually with a deadline d from now, bound to the
// test's own context so it also stops when the test ends.
func EventuallyWithin(t testing.TB, d time.Duration, cond func() (bool, error), msgAndArgs ...any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), d)
	defer cancel()
	Eventually(ctx, t, cond, msgAndArgs...)
}

func failureText(ctx context.Context, attempts int, lastErr error, msgAndArgs []any) string {
	text := fmt.Sprintf("condition not met after %d attempts (%v)", attempts, context.Cause(ctx))
	if msg := formatMsg(msgAndArgs); msg != "" {
		text = msg + ": " + text
	}
	if lastErr != nil {
		text += fmt.Sprintf("; last error: %v", lastErr)
	}
	return text
}

func formatMsg(msgAndArgs []any) string {
	switch {
	case len(msgAndArgs) == 0:
		return ""
	case len(msgAndArgs) == 1:
		return strings.TrimSuffix(fmt.Sprintln(msgAndArgs...), "\n")
	}
	if format, ok := msgAndArgs[0].(string); ok {
		return fmt.Sprintf(format, msgAndArgs[1:]...)
	}
	return strings.TrimSuffix(fmt.Sprintln(msgAndArgs...), "\n")
}
