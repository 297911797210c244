// Package supervise restarts a long-lived worker with backoff.
//
// Invariants:
//   - Run calls the worker again only after it returned; at most one call is
//     running at a time, so the worker needs no guard of its own.
//   - The pause before a restart starts at Config.Min and doubles up to
//     Config.Max; a run that lasted Config.HealthyAfter or longer resets it
//     to Config.Min.
//   - Run returns once ctx ends (with ctx's error), or when the worker
//     returns nil unless Config.RestartOnSuccess: a worker that finished
//     its job is not started again.
package supervise

import (
	"context"
	"errors"
	"log/slog"
	"time"
)

// Clock is the time source Run waits on; tests inject a fake one.
type Clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
}

type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// Config says how to restart one worker.
type Config struct {
	// Name identifies the worker in the log.
	Name   string
	Logger *slog.Logger
	// Min and Max bound the pause before a restart.
	Min, Max time.Duration
	// HealthyAfter is how long a run must last for the next pause to start
	// again from Min; zero never resets the pause.
	HealthyAfter time.Duration
	// RestartOnSuccess restarts the worker when it returns nil too (a
	// connection that ended cleanly is dialled again).
	RestartOnSuccess bool
	// Message is logged at Level on each restart, with the worker's name,
	// its error and the pause; without a Message, "worker failed;
	// restarting" is logged at warn.
	Message string
	Level   slog.Level
	// Clock defaults to the real clock.
	Clock Clock
}

func (c *Config) validate() error {
	if c.Name == "" || c.Logger == nil {
		return errors.New("supervise: Name and Logger are required")
	}
	if c.Min <= 0 || c.Max < c.Min {
		return errors.New("supervise: want 0 < Min <= Max")
	}
	if c.Message == "" {
		c.Message, c.Level = "worker failed; restarting", slog.LevelWarn
	}
	if c.Clock == nil {
		c.Clock = realClock{}
	}
	return nil
}

// Run calls fn until it returns nil (see Config.RestartOnSuccess) or ctx
// ends, pausing between calls as Config says.
func Run(ctx context.Context, cfg Config, fn func(context.Context) error) error {
	if err := cfg.validate(); err != nil {
		return err
	}
	pause := cfg.Min
	for {
		start := cfg.Clock.Now()
		err := fn(ctx)
		if err == nil && !cfg.RestartOnSuccess {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if cfg.HealthyAfter > 0 && cfg.Clock.Now().Sub(start) >= cfg.HealthyAfter {
			pause = cfg.Min
		}
		cfg.Logger.Log(ctx, cfg.Level, cfg.Message, "worker", cfg.Name, "err", err, "backoff", pause)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-cfg.Clock.After(pause):
		}
		pause = min(2*pause, cfg.Max)
	}
}
