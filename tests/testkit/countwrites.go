package testkit

import (
	"net"
	"sync/atomic"
)

// CountWrites wraps ln so that every write on the connections it accepts
// is counted in n: tests of how many sends an answer takes.
func CountWrites(ln net.Listener) (wrapped net.Listener, n *atomic.Int64) {
	n = new(atomic.Int64)
	return countingListener{Listener: ln, writes: n}, n
}

type countingListener struct {
	net.Listener
	writes *atomic.Int64
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return countingConn{Conn: c, writes: l.writes}, nil
}

type countingConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c countingConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}
