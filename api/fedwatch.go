package api

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// FederationWatcher follows the hub's federation stream (GET /v1/watch):
// the controllers and models the caller may read. It remembers the index
// of the last frame and, when the connection drops, reconnects with
// since=<that index>; the hub answers with what changed after it or with
// a reset, so the caller sees one unbroken stream. Next is for one
// goroutine at a time; Close may be called from any.
type FederationWatcher struct {
	c    *Client
	idle time.Duration
	// ctx is the watch's life: it ends on Close or when
	// WatchFederation's ctx ends.
	ctx    context.Context
	cancel context.CancelFunc

	index int64 // of the last frame received; owned by Next

	// mu guards the connection and its frames; wg counts its reader.
	mu     sync.Mutex
	conn   *websocket.Conn
	frames chan fedResult
	wg     sync.WaitGroup
}

type fedResult struct {
	frame FederationFrame
	err   error
}

// federationPath is the hub's federation stream route.
const federationPath = "/v1/watch"

// WatchFederation opens the hub's federation stream from index since (0:
// start with a reset frame). ctx bounds the whole watch: when it ends the
// watcher closes.
func (c *Client) WatchFederation(ctx context.Context, since int64) (*FederationWatcher, error) {
	conn, err := c.dialFederation(ctx, since)
	if err != nil {
		return nil, err
	}
	wctx, cancel := context.WithCancel(ctx)
	w := &FederationWatcher{c: c, idle: c.watchIdle, ctx: wctx, cancel: cancel, index: since}
	if _, err := w.install(conn); err != nil {
		cancel()
		return nil, err
	}
	// A reader blocked in a read only wakes when its connection closes.
	context.AfterFunc(wctx, w.dropConn)
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
		frames, err := w.connection(ctx)
		if err != nil {
			return nil, err
		}
		select {
		case r := <-frames:
			if r.err != nil {
				w.c.logger.Debug("api: federation stream lost, resuming", "index", w.index, "error", r.err)
				w.dropConn()
				w.wg.Wait()
				continue
			}
			f := r.frame
			if f.Type == FederationFrameReset || f.Index >= w.index {
				w.index = f.Index
			}
			// The hub's index orders its own index, not a controller's
			// writes: the client's read-your-writes index is not raised.
			if f.Type == FederationFrameKeepalive {
				continue
			}
			return &f, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-w.ctx.Done():
			return nil, ErrWatcherClosed
		}
	}
}

// Close ends the watch and waits for its reader to stop.
func (w *FederationWatcher) Close() error {
	w.cancel()
	w.dropConn()
	w.wg.Wait()
	return nil
}

// install makes conn current and starts its one reader, unless the watch
// has ended (checked under mu: dropConn, which runs after the end, cannot
// miss a connection installed concurrently).
func (w *FederationWatcher) install(conn *websocket.Conn) (<-chan fedResult, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ctx.Err() != nil {
		_ = conn.Close() // never used
		return nil, ErrWatcherClosed
	}
	frames := make(chan fedResult)
	w.conn, w.frames = conn, frames
	w.wg.Add(1)
	go w.read(conn, frames)
	return frames, nil
}

func (w *FederationWatcher) dropConn() {
	w.mu.Lock()
	conn := w.conn
	w.conn, w.frames = nil, nil
	w.mu.Unlock()
	if conn != nil {
		_ = conn.Close() // the reader reports what broke; closing is best effort
	}
}

// read is the per-connection pump: it hands frames to Next until the
// connection fails, reporting that failure last.
func (w *FederationWatcher) read(conn *websocket.Conn, out chan<- fedResult) {
	defer w.wg.Done()
	conn.SetReadLimit(watchReadLimit)
	for {
		if w.idle > 0 {
			if err := conn.SetReadDeadline(time.Now().Add(w.idle)); err != nil {
				w.deliver(out, fedResult{err: err})
				return
			}
		}
		var r fedResult
		r.err = conn.ReadJSON(&r.frame)
		if !w.deliver(out, r) || r.err != nil {
			return
		}
	}
}

func (w *FederationWatcher) deliver(out chan<- fedResult, r fedResult) bool {
	select {
	case out <- r:
		return true
	case <-w.ctx.Done():
		return false
	}
}

// connection returns the frames of the current connection, reconnecting
// with backoff while the hub is unreachable.
func (w *FederationWatcher) connection(ctx context.Context) (<-chan fedResult, error) {
	w.mu.Lock()
	frames := w.frames
	w.mu.Unlock()
	if frames != nil {
		return frames, nil
	}
	dctx, stop := context.WithCancel(ctx)
	defer stop()
	defer context.AfterFunc(w.ctx, stop)()
	backoff := watchBackoffMin
	for {
		conn, err := w.c.dialFederation(dctx, w.index)
		if err == nil {
			return w.install(conn)
		}
		switch {
		case w.ctx.Err() != nil:
			return nil, ErrWatcherClosed
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case CodeOf(err) != CodeUnavailable:
			return nil, err
		}
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-dctx.Done():
			t.Stop()
		}
		backoff = min(2*backoff, watchBackoffMax)
	}
}
