package gate

import (
	"context"
	"time"

	"github.com/droverhq/drover/hub/internal/store"
)

// authzSyncTimeout bounds how long a request that changed tuples waits for
// OpenFGA to hold them (AwaitAuthz).
const authzSyncTimeout = 5 * time.Second

// AwaitAuthz makes a change of tuples visible to the caller's next request
// (read your writes through the outbox): it wakes the outbox worker and
// waits, at most authzSyncTimeout, until every entry committed so far has
// reached OpenFGA on this or another replica. Without it `drover add-model
// m && drover status -m m` could be refused for a few milliseconds. The
// change is committed either way; a timeout (OpenFGA down) is only logged,
// and the worker keeps delivering.
func (g *Gate) AwaitAuthz(ctx context.Context) {
	g.cfg.Kick()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), authzSyncTimeout)
	defer cancel()
	head, err := g.store.Outbox.Head(ctx)
	delay := time.Millisecond
	for err == nil {
		var done bool
		if done, err = g.store.Outbox.DeliveredThrough(ctx, head); done || err != nil {
			break
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			err = ctx.Err()
		case <-t.C:
		}
		t.Stop()
		delay = min(2*delay, 50*time.Millisecond)
	}
	if err != nil {
		g.cfg.Logger.Warn("permission changes not yet in OpenFGA; they will be delivered", "err", err)
		return
	}
	// Whichever replica delivered them, this one's next request must see
	// them (its own notification may still be on its way).
	g.cfg.Changed()
}

// Follow has this replica drop its cached decisions (Config.Changed)
// whenever any replica has delivered permission changes to OpenFGA
// (announced through PostgreSQL), so a grant or a revoke made through one
// replica holds on every other one from its next request, not when the
// 2 s cache expires. It listens again after a failure, dropping the caches
// for what it may have missed. The same channel announces a change of the
// signing keys (rotate-signing-key), which it reloads, and the end of a
// session, of which it drops only what rests on that session
// (Config.SessionEnded): one user's logout leaves every other cache warm.
func (g *Gate) Follow(ctx context.Context) error {
	for relisten := false; ; relisten = true {
		err := g.store.ListenAuthzChanges(ctx, func() {
			if relisten {
				g.cfg.KeysChanged(ctx) // for a change of keys it may have missed
			}
			g.cfg.Changed()
		}, func(c store.Change) {
			switch c.Kind {
			case store.ChangeSigningKeys:
				g.cfg.KeysChanged(ctx)
			case store.ChangeSessionEnded:
				g.cfg.SessionEnded(c.Session)
			default:
				g.cfg.Changed()
			}
		})
		if ctx.Err() != nil {
			return ctx.Err()
		}
		g.cfg.Logger.Warn("permission change notifications interrupted; listening again", "err", err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}
