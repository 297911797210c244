package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// Watch reconnect backoff and frame size limit.
const (
	watchBackoffMin  = 50 * time.Millisecond
	watchBackoffMax  = 5 * time.Second
	watchReadLimit   = 256 << 20
	handshakeTimeout = 30 * time.Second
)

// Watcher follows a model's changes over a websocket. It remembers the
// index of the last frame and, when the connection drops, reconnects to any
// controller address with since=<that index>; the server answers with the
// missing deltas or a reset frame, so the caller sees one unbroken stream.
// Next is for one goroutine at a time; Close may be called from any.
type Watcher struct {
	c     *Client
	model string
	path  string // of the watch route, whose index its frames raise
	idle  time.Duration
	// ctx is the watch's life: it ends on Close or when Watch's ctx ends.
	ctx    context.Context
	cancel context.CancelFunc

	index  uint64 // of the last frame received; owned by Next
	mark   string // the controller's mark of index ("": none); owned by Next
	outage outage // owned by Next

	// mu guards the connection and its frames; wg counts its reader.
	mu     sync.Mutex
	conn   *websocket.Conn
	frames chan readResult
	wg     sync.WaitGroup
}

type readResult struct {
	frame WatchFrame
	err   error
}

// Watch opens a watch on the model from index since (0: start with a
// reset frame). ctx bounds the whole watch, not only the connect: when it
// ends the watcher closes.
func (m ModelClient) Watch(ctx context.Context, since uint64) (*Watcher, error) {
	c := m.c
	conn, err := c.dialWatch(ctx, m.uuid, since, "")
	if err != nil {
		return nil, err
	}
	wctx, cancel := context.WithCancel(ctx)
	w := &Watcher{c: c, model: m.uuid, path: modelPath(m.uuid, "watch"), idle: c.watchIdle, ctx: wctx, cancel: cancel, index: since}
	if _, err := w.install(conn); err != nil {
		cancel()
		return nil, err
	}
	// A reader blocked in a read only wakes when its connection closes.
	context.AfterFunc(wctx, w.dropConn)
	return w, nil
}

// OnOutage has fn called, from Next, with the error when the watch
// cannot be resumed for want of an available controller (it goes on
// trying), and with nil once it has resumed. Set it before calling Next.
func (w *Watcher) OnOutage(fn func(err error)) { w.outage.notify = fn }

// Index is the index of the last frame Next received.
func (w *Watcher) Index() uint64 { return w.index }

// Next returns the next reset or delta frame; keepalives only advance the
// index. It reconnects and resumes as needed, until ctx or the watch ends,
// or the server refuses the watch (for example the model is gone).
func (w *Watcher) Next(ctx context.Context) (*WatchFrame, error) {
	for {
		frames, err := w.connection(ctx)
		if err != nil {
			return nil, err
		}
		select {
		case r := <-frames:
			if r.err != nil {
				w.c.logger.Debug("api: watch connection lost, resuming", "model", w.model, "index", w.index, "error", r.err)
				w.dropConn()
				w.wg.Wait()
				continue
			}
			f := r.frame
			if f.Type == FrameReset || f.Index >= w.index {
				w.index, w.mark = f.Index, f.Mark
			}
			w.c.observe(http.MethodGet, w.path, f.Index)
			if f.Type == FrameKeepalive {
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
func (w *Watcher) Close() error {
	w.cancel()
	w.dropConn()
	w.wg.Wait()
	return nil
}

// install makes conn current and starts its one reader, unless the watch
// has ended: the check is under mu so that dropConn, which runs after the
// end, cannot miss a connection installed concurrently.
func (w *Watcher) install(conn *websocket.Conn) (<-chan readResult, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ctx.Err() != nil {
		_ = conn.Close() // never used
		return nil, ErrWatcherClosed
	}
	frames := make(chan readResult)
	w.conn, w.frames = conn, frames
	w.wg.Add(1)
	go w.read(conn, frames)
	return frames, nil
}

// dropConn closes the current connection, which ends its reader.
func (w *Watcher) dropConn() {
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
func (w *Watcher) read(conn *websocket.Conn, out chan<- readResult) {
	defer w.wg.Done()
	conn.SetReadLimit(watchReadLimit)
	for {
		if w.idle > 0 {
			if err := conn.SetReadDeadline(time.Now().Add(w.idle)); err != nil {
				w.deliver(out, readResult{err: err})
				return
			}
		}
		var r readResult
		r.err = conn.ReadJSON(&r.frame)
		if !w.deliver(out, r) || r.err != nil {
			return
		}
	}
}

func (w *Watcher) deliver(out chan<- readResult, r readResult) bool {
	select {
	case out <- r:
		return true
	case <-w.ctx.Done():
		return false
	}
}

// connection returns the frames of the current connection, reconnecting
// with backoff while the controller is unreachable.
func (w *Watcher) connection(ctx context.Context) (<-chan readResult, error) {
	w.mu.Lock()
	frames := w.frames
	w.mu.Unlock()
	if frames != nil {
		return frames, nil
	}
	// Dial under both the caller's ctx and the watch's life.
	dctx, stop := context.WithCancel(ctx)
	defer stop()
	defer context.AfterFunc(w.ctx, stop)()
	backoff := watchBackoffMin
	for {
		conn, err := w.c.dialWatch(dctx, w.model, w.index, w.mark)
		if err == nil {
			frames, err := w.install(conn)
			if err == nil {
				w.outage.ended()
			}
			return frames, err
		}
		switch {
		case w.ctx.Err() != nil:
			return nil, ErrWatcherClosed
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case CodeOf(err) != CodeUnavailable:
			return nil, err
		}
		w.outage.failed(err)
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-dctx.Done():
			t.Stop()
		}
		backoff = min(2*backoff, watchBackoffMax)
	}
}

// dialWatch opens the watch websocket on the first address that accepts
// it, resuming after since; mark, when known, names the entry at since in
// the controller's history (a controller restored from an older copy holds
// another one there, and answers with a reset).
func (c *Client) dialWatch(ctx context.Context, model string, since uint64, mark string) (*websocket.Conn, error) {
	p := modelPath(model, "watch") + "?since=" + strconv.FormatUint(since, 10)
	if mark != "" {
		p += "&mark=" + url.QueryEscape(mark)
	}
	return c.dialWebsocket(ctx, p, "watch model "+model)
}

// dialWebsocket opens the websocket at path p on the first address that
// accepts it, renewing the session token once should it be refused;
// what names the call in errors.
func (c *Client) dialWebsocket(ctx context.Context, p, what string) (*websocket.Conn, error) {
	d := websocket.Dialer{TLSClientConfig: c.tls.Clone(), HandshakeTimeout: handshakeTimeout}
	if c.timeout > 0 {
		d.HandshakeTimeout = c.timeout
	}
	h := http.Header{}
	c.setAuth(h)
	used, refreshed := *c.token.Load(), false
	addrs := c.rotation()
	var lastErr error
	for i := 0; i < len(addrs); i++ {
		addr := addrs[i]
		conn, resp, err := d.DialContext(ctx, "wss://"+addr+p, h)
		if err == nil {
			c.prefer(addr)
			return conn, nil
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%s: %w", what, ctx.Err())
		}
		if resp != nil && errors.Is(err, websocket.ErrBadHandshake) {
			apiErr := decodeError(resp)
			if apiErr.Code == CodeUnauthorized && !refreshed {
				ok, rerr := c.refreshToken(ctx, used)
				if ok {
					used, refreshed = *c.token.Load(), true
					c.setAuth(h)
					i-- // the same address again, with the new token
					continue
				}
				var re *Error
				if errors.As(rerr, &re) {
					apiErr = re
				}
			}
			if apiErr.Code != CodeUnavailable {
				return nil, apiErr
			}
			err = apiErr
		}
		lastErr = err
	}
	return nil, unavailablef(lastErr, "cannot %s at %s", what, strings.Join(addrs, ", "))
}
