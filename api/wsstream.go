package api

import (
	"context"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// wsStream is the connection half of a resuming websocket watch (a
// model's Watcher, the hub's FederationWatcher): one connection at a
// time, its one reader, and reconnection with backoff while the server is
// unavailable. Its owner keeps the index to resume from; dial opens a
// connection resuming from it.
type wsStream[F any] struct {
	c    *Client
	what string // names the stream in logs
	idle time.Duration
	dial func(ctx context.Context) (*websocket.Conn, error)
	// ctx is the watch's life: it ends on close or when the ctx it was
	// opened with ends.
	ctx    context.Context
	cancel context.CancelFunc
	outage outage // owned by next

	// mu guards the connection and its frames; wg counts its reader.
	mu     sync.Mutex
	conn   *websocket.Conn
	frames chan wsResult[F]
	wg     sync.WaitGroup
}

type wsResult[F any] struct {
	frame F
	err   error
}

// openStream dials the first connection; ctx bounds the whole watch, not
// only the connect.
func openStream[F any](ctx context.Context, c *Client, what string, dial func(ctx context.Context) (*websocket.Conn, error)) (*wsStream[F], error) {
	conn, err := dial(ctx)
	if err != nil {
		return nil, err
	}
	wctx, cancel := context.WithCancel(ctx)
	s := &wsStream[F]{c: c, what: what, idle: c.watchIdle, dial: dial, ctx: wctx, cancel: cancel}
	if _, err := s.install(conn); err != nil {
		cancel()
		return nil, err
	}
	// A reader blocked in a read only wakes when its connection closes.
	context.AfterFunc(wctx, s.dropConn)
	return s, nil
}

// next returns the next frame, reconnecting (with the owner's resume
// point, through dial) whenever the connection is lost, until ctx or the
// watch ends, or the server refuses the watch.
func (s *wsStream[F]) next(ctx context.Context) (F, error) {
	var zero F
	for {
		frames, err := s.connection(ctx)
		if err != nil {
			return zero, err
		}
		select {
		case r := <-frames:
			if r.err != nil {
				s.c.logger.Debug("api: stream lost, resuming", "stream", s.what, "error", r.err)
				s.dropConn()
				s.wg.Wait()
				continue
			}
			return r.frame, nil
		case <-ctx.Done():
			return zero, ctx.Err()
		case <-s.ctx.Done():
			return zero, ErrWatcherClosed
		}
	}
}

// close ends the watch and waits for its reader to stop.
func (s *wsStream[F]) close() {
	s.cancel()
	s.dropConn()
	s.wg.Wait()
}

// install makes conn current and starts its one reader, unless the watch
// has ended: the check is under mu so that dropConn, which runs after the
// end, cannot miss a connection installed concurrently.
func (s *wsStream[F]) install(conn *websocket.Conn) (<-chan wsResult[F], error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ctx.Err() != nil {
		_ = conn.Close() // never used
		return nil, ErrWatcherClosed
	}
	frames := make(chan wsResult[F])
	s.conn, s.frames = conn, frames
	s.wg.Add(1)
	go s.read(conn, frames)
	return frames, nil
}

// dropConn closes the current connection, which ends its reader.
func (s *wsStream[F]) dropConn() {
	s.mu.Lock()
	conn := s.conn
	s.conn, s.frames = nil, nil
	s.mu.Unlock()
	if conn != nil {
		_ = conn.Close() // the reader reports what broke; closing is best effort
	}
}

// read is the per-connection pump: it hands frames to next until the
// connection fails, reporting that failure last.
func (s *wsStream[F]) read(conn *websocket.Conn, out chan<- wsResult[F]) {
	defer s.wg.Done()
	conn.SetReadLimit(watchReadLimit)
	for {
		if s.idle > 0 {
			if err := conn.SetReadDeadline(time.Now().Add(s.idle)); err != nil {
				s.deliver(out, wsResult[F]{err: err})
				return
			}
		}
		var r wsResult[F]
		r.err = conn.ReadJSON(&r.frame)
		if !s.deliver(out, r) || r.err != nil {
			return
		}
	}
}

func (s *wsStream[F]) deliver(out chan<- wsResult[F], r wsResult[F]) bool {
	select {
	case out <- r:
		return true
	case <-s.ctx.Done():
		return false
	}
}

// connection returns the frames of the current connection, reconnecting
// with backoff while the server is unavailable.
func (s *wsStream[F]) connection(ctx context.Context) (<-chan wsResult[F], error) {
	s.mu.Lock()
	frames := s.frames
	s.mu.Unlock()
	if frames != nil {
		return frames, nil
	}
	// Dial under both the caller's ctx and the watch's life.
	dctx, stop := context.WithCancel(ctx)
	defer stop()
	defer context.AfterFunc(s.ctx, stop)()
	backoff := watchBackoffMin
	for {
		conn, err := s.dial(dctx)
		if err == nil {
			frames, err := s.install(conn)
			if err == nil {
				s.outage.ended()
			}
			return frames, err
		}
		switch {
		case s.ctx.Err() != nil:
			return nil, ErrWatcherClosed
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case CodeOf(err) != CodeUnavailable:
			return nil, err
		}
		s.outage.failed(err)
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-dctx.Done():
			t.Stop()
		}
		backoff = min(2*backoff, watchBackoffMax)
	}
}
