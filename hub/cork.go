package hub

import (
	"context"
	"crypto/tls"
	"net"
	"sync"
)

// A proxied answer the hub relays to its caller goes out in one write
// (one TCP send, one wake-up of the caller) however many TLS records it
// takes. net/http's server writes through a 4 KiB buffer, so a 13 KB
// status answer took two or three sends, each a system call and, on the
// caller's side, a read. The hub's connections are corkable: between cork
// and uncork, what TLS writes to the connection is held in memory and
// then sent at once, the way TCP_CORK holds segments. Only an HTTP/1
// handler, which owns its connection while it runs, corks.

// corkListener hands out corkable connections.
type corkListener struct{ net.Listener }

func (l corkListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &corkConn{Conn: c}, nil
}

// maxCorked bounds what a corked connection holds; beyond it, writes go
// through (a large answer gains nothing from one send).
const maxCorked = 256 << 10

// corkConn is a connection whose writes can be held and sent together.
type corkConn struct {
	net.Conn
	mu     sync.Mutex
	corked bool
	held   []byte
}

func (c *corkConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.corked && len(c.held)+len(p) <= maxCorked {
		c.held = append(c.held, p...)
		return len(p), nil
	}
	if err := c.flushLocked(); err != nil {
		return 0, err
	}
	return c.Conn.Write(p)
}

func (c *corkConn) flushLocked() error {
	if len(c.held) == 0 {
		return nil
	}
	_, err := c.Conn.Write(c.held)
	c.held = c.held[:0]
	if cap(c.held) > 64<<10 {
		c.held = nil // do not keep a large answer's buffer per connection
	}
	return err
}

func (c *corkConn) cork() {
	c.mu.Lock()
	c.corked = true
	c.mu.Unlock()
}

// uncork sends what was held.
func (c *corkConn) uncork() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.corked = false
	return c.flushLocked()
}

// Close closes the connection at once; what is held is dropped (a handler
// uncorks before it returns, so only an aborted answer is). It takes no
// lock: closing is what unblocks a write stuck on a caller that stopped
// reading.
func (c *corkConn) Close() error { return c.Conn.Close() }

type corkKey struct{}

// withCorkConn is the server's ConnContext: it records the connection's
// corkable layer (under TLS) for the handlers.
func withCorkConn(ctx context.Context, c net.Conn) context.Context {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	if cc, ok := c.(*corkConn); ok {
		return context.WithValue(ctx, corkKey{}, cc)
	}
	return ctx
}

// corkOf returns the corkable connection an HTTP/1 request came on, or nil.
func corkOf(ctx context.Context, proto int) *corkConn {
	if proto != 1 {
		return nil // HTTP/2 multiplexes streams over the connection
	}
	cc, _ := ctx.Value(corkKey{}).(*corkConn)
	return cc
}
