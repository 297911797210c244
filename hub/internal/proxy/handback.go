package proxy

import (
	"bufio"
	"context"
	"crypto/tls"
	"io"
	"net"
	"sync"
	"sync/atomic"

	"github.com/droverhq/drover/internal/corkconn"
)

// handback is the listener through which taken connections go back to
// the hub's HTTP server (takeover.go), their unread bytes first. The
// server serves it beside its own listener (Run; tests call
// HandbackListener). Until something does, no connection is taken.
type handback struct {
	addr    net.Addr
	conns   chan net.Conn
	done    chan struct{}
	once    sync.Once
	serving atomic.Bool
}

func newHandback() *handback {
	return &handback{addr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)}, conns: make(chan net.Conn), done: make(chan struct{})}
}

// HandbackListener returns the listener the hub's HTTP server must also
// serve (http.Server.Serve) for the hub to take over connections; the
// server's Shutdown closes it. Run serves it itself.
func (s *Relay) HandbackListener() net.Listener {
	s.handback.serving.Store(true)
	return s.handback
}

func (h *handback) Accept() (net.Conn, error) {
	select {
	case c := <-h.conns:
		return c, nil
	case <-h.done:
		return nil, net.ErrClosed
	}
}

func (h *handback) Close() error {
	h.once.Do(func() { h.serving.Store(false); close(h.done) })
	return nil
}

func (h *handback) Addr() net.Addr { return h.addr }

// give hands conn back with the request head already read from br and
// what br holds beyond it, to be read again first.
func (h *handback) give(conn net.Conn, br *bufio.Reader, head []byte) {
	buffered, _ := br.Peek(br.Buffered())
	unread := append(head, buffered...)
	hc := &handedConn{Conn: conn, r: io.MultiReader(&byteReader{b: unread}, conn)}
	if prev, ok := conn.(*handedConn); ok { // flatten: one layer however often it goes back
		hc.Conn, hc.r = prev.Conn, io.MultiReader(&byteReader{b: unread}, prev.r)
	}
	select {
	case h.conns <- hc:
	case <-h.done:
		conn.Close()
	}
}

// byteReader reads b once; unlike bytes.Reader it lets go of b at its end.
type byteReader struct{ b []byte }

func (r *byteReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.b)
	r.b = r.b[n:]
	if len(r.b) == 0 {
		r.b = nil
	}
	return n, nil
}

// handedConn is a connection handed back: its unread bytes, then the
// connection itself.
type handedConn struct {
	net.Conn
	r io.Reader
}

func (c *handedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// NetConn returns the connection under TLS, for corkconn.ConnContext.
func (c *handedConn) NetConn() net.Conn {
	if tc, ok := c.Conn.(*tls.Conn); ok {
		return tc.NetConn()
	}
	return c.Conn
}

type tlsStateKey struct{}

// ConnContext is the hub server's ConnContext: the corkable connection
// (corkconn), and the TLS state of a handed-back connection, which
// net/http sees as a plain one (ServeHTTP restores Request.TLS).
func ConnContext(ctx context.Context, c net.Conn) context.Context {
	ctx = corkconn.ConnContext(ctx, c)
	if hc, ok := c.(*handedConn); ok {
		if tc, ok := hc.Conn.(*tls.Conn); ok {
			st := tc.ConnectionState()
			ctx = context.WithValue(ctx, tlsStateKey{}, &st)
		}
	}
	return ctx
}
