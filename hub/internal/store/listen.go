package store

import (
	"context"
	"errors"
	"sync/atomic"
	"time"
)

// authzChannel is the PostgreSQL notification channel on which deliveries
// to OpenFGA, changes of identities, ended sessions and changes of the
// signing keys are announced (a Change each).
const authzChannel = "drover_authz_delivered"

// ListenAuthzChanges calls changed with each Change any replica announces
// (permission changes delivered to OpenFGA, an identity disabled, a
// session ended, the signing keys changed), until ctx ends or the
// connection fails (then the caller listens again, and treats the gap as
// a change of everything).
func (s *Store) ListenAuthzChanges(ctx context.Context, listening func(), changed func(Change)) error {
	return s.listen(ctx, authzChannel, listening, func(payload string) { changed(ParseChange(payload)) })
}

// listen calls notified with the payload of each notification on channel,
// on a connection of its own, until ctx ends or the connection fails.
func (s *Store) listen(ctx context.Context, channel string, listening func(), notified func(payload string)) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return pgErr("listen", err)
	}
	// The connection leaves the pool: LISTEN is a session's state.
	pc := conn.Hijack()
	defer pc.Close(context.WithoutCancel(ctx))
	if _, err := pc.Exec(ctx, "LISTEN "+channel); err != nil {
		return pgErr("listen", err)
	}
	listening()
	for {
		wctx, cancel := context.WithTimeout(ctx, listenPing)
		n, err := pc.WaitForNotification(wctx)
		cancel()
		switch {
		case err == nil:
			notified(n.Payload)
		case ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded):
			// Quiet for a while: make sure the connection still leads
			// to the server. One that died without a word (a network
			// cut, a server gone with its host) would otherwise be
			// waited on for good, every change missed.
			pctx, cancel := context.WithTimeout(ctx, listenPing)
			_, err = pc.Exec(pctx, "SELECT 1")
			cancel()
			if err != nil {
				return pgErr("listen: the connection no longer answers", err)
			}
			listenPings.Add(1)
		default:
			return pgErr("listen", err)
		}
	}
}

// listenPing is how long the permission-change listener waits quietly
// before it checks that its connection still answers, and how long it
// gives that check.
var listenPing = 30 * time.Second

// listenPings counts the checks that found the connection answering.
var listenPings atomic.Int64
