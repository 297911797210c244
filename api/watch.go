package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
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
	s     *wsStream[WatchFrame]
	model string
	path  string // of the watch route, whose index its frames raise

	index uint64 // of the last frame received; owned by Next
	mark  string // the controller's mark of index ("": none); owned by Next
}

// Watch opens a watch on the model from index since (0: start with a
// reset frame). ctx bounds the whole watch, not only the connect: when it
// ends the watcher closes.
func (m ModelClient) Watch(ctx context.Context, since uint64) (*Watcher, error) {
	w := &Watcher{model: m.uuid, path: modelPath(m.uuid, "watch"), index: since}
	s, err := openStream[WatchFrame](ctx, m.c, "watch model "+m.uuid, func(ctx context.Context) (*websocket.Conn, error) {
		return m.c.dialWatch(ctx, w.model, w.index, w.mark)
	})
	if err != nil {
		return nil, err
	}
	w.s = s
	return w, nil
}

// OnOutage has fn called, from Next, with the error when the watch
// cannot be resumed for want of an available controller (it goes on
// trying), and with nil once it has resumed. Set it before calling Next.
func (w *Watcher) OnOutage(fn func(err error)) { w.s.outage.notify = fn }

// Index is the index of the last frame Next received.
func (w *Watcher) Index() uint64 { return w.index }

// Next returns the next reset or delta frame; keepalives only advance the
// index. It reconnects and resumes as needed, until ctx or the watch ends,
// or the server refuses the watch (for example the model is gone).
func (w *Watcher) Next(ctx context.Context) (*WatchFrame, error) {
	for {
		f, err := w.s.next(ctx)
		if err != nil {
			return nil, err
		}
		if f.Type == FrameReset || f.Index >= w.index {
			w.index, w.mark = f.Index, f.Mark
		}
		w.s.c.observe(http.MethodGet, w.path, f.Index)
		if f.Type == FrameKeepalive {
			continue
		}
		return &f, nil
	}
}

// Close ends the watch and waits for its reader to stop.
func (w *Watcher) Close() error {
	w.s.close()
	return nil
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
