// Package corkconn lets an HTTP server send a whole answer in one write
// (one TCP send, one wake-up of the reader) however many TLS records it
// takes. net/http's server writes through a 4 KiB buffer, so a 13 KB
// answer took two or three sends, each a system call and, on the reader's
// side, a read that may find only part of the answer and wait again.
//
// A server's connections are made corkable by its Listener (under TLS)
// and ConnContext. Between Cork and Uncork, what TLS writes to the
// connection is held in memory and then sent at once, the way TCP_CORK
// holds segments. Only an HTTP/1 handler, which owns its connection while
// it runs, corks, and only around an answer it writes whole.
package corkconn

import (
	"context"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
)

// Listener hands out corkable connections.
type Listener struct{ net.Listener }

func (l Listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &Conn{Conn: c}, nil
}

// MaxHeld bounds what a corked connection holds; beyond it, writes go
// through (a large answer gains nothing from one send).
const MaxHeld = 256 << 10

// MinHeld is the smallest answer Hold corks for: a smaller one and its
// head fit net/http's 4 KiB buffer and leave in one write anyway.
const MinHeld = 3 << 10

// Conn is a connection whose writes can be held and sent together.
type Conn struct {
	net.Conn
	mu     sync.Mutex
	corked bool
	held   []byte
	closed atomic.Bool
}

func (c *Conn) Write(p []byte) (int, error) {
	if c.closed.Load() {
		return 0, net.ErrClosed
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.corked && len(c.held)+len(p) <= MaxHeld {
		c.held = append(c.held, p...)
		return len(p), nil
	}
	if err := c.flushLocked(); err != nil {
		return 0, err
	}
	return c.Conn.Write(p)
}

func (c *Conn) flushLocked() error {
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

// Cork holds the connection's writes until Uncork.
func (c *Conn) Cork() {
	c.mu.Lock()
	c.corked = true
	c.mu.Unlock()
}

// Uncork sends what was held, in one write.
func (c *Conn) Uncork() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.corked = false
	return c.flushLocked()
}

// Close closes the connection at once; what is held is dropped (a handler
// uncorks before it returns, so only an aborted answer is). It takes no
// lock: closing is what unblocks a write stuck on a caller that stopped
// reading.
func (c *Conn) Close() error {
	c.closed.Store(true)
	return c.Conn.Close()
}

type key struct{}

// ConnContext is an http.Server's ConnContext: it records the connection's
// corkable layer (under TLS, or any wrapper with a NetConn method) for
// FromContext.
func ConnContext(ctx context.Context, c net.Conn) context.Context {
	if nc, ok := c.(interface{ NetConn() net.Conn }); ok {
		c = nc.NetConn()
	}
	if cc, ok := c.(*Conn); ok {
		return context.WithValue(ctx, key{}, cc)
	}
	return ctx
}

// FromContext returns the corkable connection an HTTP/1 request (ProtoMajor
// proto) came on, or nil.
func FromContext(ctx context.Context, proto int) *Conn {
	if proto != 1 {
		return nil // HTTP/2 multiplexes streams over the connection
	}
	cc, _ := ctx.Value(key{}).(*Conn)
	return cc
}

// Hold corks c, when there is one, for an answer of length bytes (between
// MinHeld and MaxHeld) that the caller writes whole to w. The returned function, deferred by the caller,
// flushes w and sends the answer in one write.
func Hold(c *Conn, w http.ResponseWriter, length int64) (release func()) {
	if c == nil || length < MinHeld || length > MaxHeld {
		return func() {}
	}
	c.Cork()
	return func() {
		_ = http.NewResponseController(w).Flush()
		_ = c.Uncork()
	}
}

// NewContext returns ctx carrying c, for a server that reads requests off
// a connection itself (FromContext).
func NewContext(ctx context.Context, c *Conn) context.Context {
	return context.WithValue(ctx, key{}, c)
}
