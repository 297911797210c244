package apiserver

import (
	"context"
	"errors"

	"github.com/droverhq/drover/spoke/internal/state"
)

// follower drives one index-addressed stream (rule 5): a reset when the
// client has no usable index, then every batch of events after it,
// keepalives when idle, and a new reset whenever the subscription falls
// behind the broker's ring (a slow consumer never blocks the producer).
type follower struct {
	model     string // "" follows every model
	reset     func() (uint64, error)
	events    func(index uint64, evs []state.Event) error
	keepalive func(index uint64) error
}

func (s *Server) follow(ctx context.Context, since uint64, f follower) error {
	var err error
	if since == 0 {
		if since, err = f.reset(); err != nil {
			return err
		}
	}
	for {
		sub, err := s.b.Events().Subscribe(ctx, state.SubscribeRequest{ModelUUID: f.model, Since: since})
		if err != nil {
			return err
		}
		for {
			nctx, ncancel := context.WithTimeout(ctx, KeepaliveInterval)
			evs, err := sub.Next(nctx)
			ncancel()
			if err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				if errors.Is(err, context.DeadlineExceeded) {
					if err := f.keepalive(since); err != nil {
						return err
					}
					continue
				}
				if errors.Is(err, state.ErrSubscriptionReset) {
					break // resubscribe after a reset
				}
				return err
			}
			idx := since
			for _, ev := range evs {
				idx = max(idx, ev.Index)
			}
			since = idx
			if err := f.events(idx, evs); err != nil {
				return err
			}
		}
		if since, err = f.reset(); err != nil {
			return err
		}
	}
}
