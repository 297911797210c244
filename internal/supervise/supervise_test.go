package supervise

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/droverhq/drover/tests/testkit"
)

func TestMain(m *testing.M) { testkit.VerifyTestMain(m) }

// fakeClock hands every pause Run asks for to the test, which fires it.
type fakeClock struct {
	mu    sync.Mutex
	now   time.Time
	waits chan pauseReq
}

type pauseReq struct {
	d    time.Duration
	fire chan time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Unix(1000, 0), waits: make(chan pauseReq, 64)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	ch := make(chan time.Time, 1)
	c.waits <- pauseReq{d, ch}
	return ch
}

// nextPause waits for Run to ask for a pause, fires it and returns its length.
func (c *fakeClock) nextPause(t *testing.T) time.Duration {
	t.Helper()
	select {
	case w := <-c.waits:
		w.fire <- c.Now().Add(w.d)
		return w.d
	case <-t.Context().Done():
		t.Fatal("no pause asked for")
		return 0
	}
}

func config(clock Clock) Config {
	return Config{Name: "w", Logger: slog.New(slog.DiscardHandler), Min: 100 * time.Millisecond, Max: time.Second, Clock: clock}
}

// start runs Run in the background; the returned channel has its result.
func start(ctx context.Context, cfg Config, fn func(context.Context) error) <-chan error {
	done := make(chan error, 1)
	go func() { done <- Run(ctx, cfg, fn) }()
	return done
}

func TestRunBacksOffDoublingUpToMax(t *testing.T) {
	clock := newFakeClock()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	calls := make(chan struct{}, 64)
	done := start(ctx, config(clock), func(context.Context) error {
		calls <- struct{}{}
		return errors.New("boom")
	})
	want := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond,
		800 * time.Millisecond, time.Second, time.Second}
	for i, w := range want {
		if got := clock.nextPause(t); got != w {
			t.Fatalf("pause %d = %v, want %v", i, got, w)
		}
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Run after cancel = %v, want context.Canceled", err)
	}
	if n := len(calls); n < len(want) {
		t.Errorf("%d calls, want at least %d", n, len(want))
	}
}

func TestRunResetsAfterAHealthyRun(t *testing.T) {
	clock := newFakeClock()
	cfg := config(clock)
	cfg.HealthyAfter = 10 * time.Second
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	call := 0
	done := start(ctx, cfg, func(context.Context) error {
		call++
		if call == 4 { // the fourth run lasts long enough to count as healthy
			clock.advance(cfg.HealthyAfter)
		}
		return errors.New("boom")
	})
	want := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond,
		100 * time.Millisecond, 200 * time.Millisecond}
	for i, w := range want {
		if got := clock.nextPause(t); got != w {
			t.Fatalf("pause %d = %v, want %v", i, got, w)
		}
	}
	cancel()
	<-done
}

func TestRunNeverResetsWithoutHealthyAfter(t *testing.T) {
	clock := newFakeClock()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := start(ctx, config(clock), func(context.Context) error {
		clock.advance(time.Hour)
		return errors.New("boom")
	})
	for i, w := range []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond} {
		if got := clock.nextPause(t); got != w {
			t.Fatalf("pause %d = %v, want %v", i, got, w)
		}
	}
	cancel()
	<-done
}

func TestRunEndsWhenTheWorkerSucceeds(t *testing.T) {
	clock := newFakeClock()
	calls := 0
	done := start(t.Context(), config(clock), func(context.Context) error {
		calls++
		if calls < 3 {
			return errors.New("not yet")
		}
		return nil
	})
	clock.nextPause(t)
	clock.nextPause(t)
	if err := <-done; err != nil || calls != 3 {
		t.Fatalf("Run = %v after %d calls, want nil after 3", err, calls)
	}
}

func TestRunRestartsOnSuccessWhenAsked(t *testing.T) {
	clock := newFakeClock()
	cfg := config(clock)
	cfg.RestartOnSuccess = true
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	calls := 0
	done := start(ctx, cfg, func(context.Context) error {
		calls++
		return nil
	})
	for range 3 {
		if got := clock.nextPause(t); got != cfg.Min && got != 2*cfg.Min && got != 4*cfg.Min {
			t.Fatalf("pause %v", got)
		}
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v, want context.Canceled", err)
	}
	if calls < 3 {
		t.Errorf("%d calls, want at least 3", calls)
	}
}

func TestRunStopsWhenTheContextEndsDuringARun(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	calls := 0
	err := Run(ctx, config(newFakeClock()), func(ctx context.Context) error {
		calls++
		cancel()
		<-ctx.Done()
		return ctx.Err()
	})
	if !errors.Is(err, context.Canceled) || calls != 1 {
		t.Fatalf("Run = %v after %d calls, want context.Canceled after 1", err, calls)
	}
}

func TestRunRejectsABadConfig(t *testing.T) {
	for _, cfg := range []Config{
		{Logger: slog.New(slog.DiscardHandler), Min: 1, Max: 1},
		{Name: "w", Min: 1, Max: 1},
		{Name: "w", Logger: slog.New(slog.DiscardHandler), Min: 0, Max: 1},
		{Name: "w", Logger: slog.New(slog.DiscardHandler), Min: 2, Max: 1},
	} {
		if err := Run(t.Context(), cfg, func(context.Context) error { return nil }); err == nil {
			t.Errorf("Run(%+v) accepted", cfg)
		}
	}
}
