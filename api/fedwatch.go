package api

import (
	"context"
	"strconv"

	"github.com/gorilla/websocket"
)

// FederationWatcher follows the hub's federation stream (GET /v1/watch):
// the controllers and models the caller may read. It remembers the index
// of the last frame and, when the connection drops, reconnects with
// since=<that index>; the hub answers with what changed after it or with
// a reset, so the caller sees one unbroken stream. Next is for one
// goroutine at a time; Close may be called from any.
type FederationWatcher struct {
	s     *wsStream[FederationFrame]
	index int64 // of the last frame received; owned by Next
}

// federationPath is the hub's federation stream route.
const federationPath = "/v1/watch"

// WatchFederation opens the hub's federation stream from index since (0:
// start with a reset frame). ctx bounds the whole watch: when it ends the
// watcher closes.
func (c *Client) WatchFederation(ctx context.Context, since int64) (*FederationWatcher, error) {
	w := &FederationWatcher{index: since}
	s, err := openStream[FederationFrame](ctx, c, "watch the federation", func(ctx context.Context) (*websocket.Conn, error) {
		return c.dialFederation(ctx, w.index)
	})
	if err != nil {
		return nil, err
	}
	w.s = s
	return w, nil
}

func (c *Client) dialFederation(ctx context.Context, since int64) (*websocket.Conn, error) {
	return c.dialWebsocket(ctx, federationPath+"?since="+strconv.FormatInt(since, 10), "watch the federation")
}

// Index is the index of the last frame Next received.
func (w *FederationWatcher) Index() int64 { return w.index }

// Next returns the next reset or delta frame; keepalives only advance the
// index. It reconnects and resumes as needed, until ctx or the watch
// ends, or the hub refuses the stream.
func (w *FederationWatcher) Next(ctx context.Context) (*FederationFrame, error) {
	for {
		f, err := w.s.next(ctx)
		if err != nil {
			return nil, err
		}
		if f.Type == FederationFrameReset || f.Index >= w.index {
			w.index = f.Index
		}
		// The hub's index orders its own index, not a controller's
		// writes: the client's read-your-writes index is not raised.
		if f.Type == FederationFrameKeepalive {
			continue
		}
		return &f, nil
	}
}

// Close ends the watch and waits for its reader to stop.
func (w *FederationWatcher) Close() error {
	w.s.close()
	return nil
}
