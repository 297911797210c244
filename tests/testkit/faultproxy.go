package testkit

import (
	"net"
	"net/url"
	"sync"
	"testing"
)

// FaultProxy relays TCP connections to a server (a PostgreSQL socket, an
// HTTP service) and makes the faults a network makes: Stall holds every
// byte either way, on open connections and new ones, until it is lifted
// (a hung server: connections open, nothing answered); Cut silences the
// connections open so far for good, without closing them, while new ones
// are relayed normally (a path that died without a word); Drop closes the
// connections open so far (a server or load balancer that drops them).
type FaultProxy struct {
	ln      net.Listener
	network string // of the target: "unix" or "tcp"
	target  string
	done    chan struct{} // the test's end: silenced connections close

	mu      sync.Mutex
	stalled bool
	resumed *sync.Cond
	cuts    chan struct{} // closed by Cut, for the connections open then
	drops   chan struct{} // closed by Drop, for the connections open then
}

// NewFaultProxy relays to target (network "unix" or "tcp") until the test
// ends.
func NewFaultProxy(t testing.TB, network, target string) *FaultProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &FaultProxy{ln: ln, network: network, target: target, done: make(chan struct{}), cuts: make(chan struct{}),
		drops: make(chan struct{})}
	p.resumed = sync.NewCond(&p.mu)
	t.Cleanup(func() { ln.Close(); p.Stall(false); close(p.done) })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.mu.Lock()
			cut, drop := p.cuts, p.drops
			p.mu.Unlock()
			go p.relay(c, cut, drop)
		}
	}()
	return p
}

// Addr is the proxy's address (host:port).
func (p *FaultProxy) Addr() string { return p.ln.Addr().String() }

// Stall holds (on) or releases every byte.
func (p *FaultProxy) Stall(on bool) {
	p.mu.Lock()
	p.stalled = on
	p.mu.Unlock()
	p.resumed.Broadcast()
}

// Cut silences every connection relayed so far.
func (p *FaultProxy) Cut() {
	p.mu.Lock()
	close(p.cuts)
	p.cuts = make(chan struct{})
	p.mu.Unlock()
}

// Drop closes every connection relayed so far, both ways.
func (p *FaultProxy) Drop() {
	p.mu.Lock()
	close(p.drops)
	p.drops = make(chan struct{})
	p.mu.Unlock()
}

func (p *FaultProxy) wait() {
	p.mu.Lock()
	for p.stalled {
		p.resumed.Wait()
	}
	p.mu.Unlock()
}

func (p *FaultProxy) relay(c net.Conn, cut, drop chan struct{}) {
	defer c.Close()
	p.wait()
	up, err := net.Dial(p.network, p.target)
	if err != nil {
		return
	}
	defer up.Close()
	relayed := make(chan struct{})
	defer close(relayed)
	go func() {
		select {
		case <-drop:
			c.Close()
			up.Close()
		case <-relayed:
		}
	}()
	pipe := func(dst, src net.Conn) {
		defer dst.Close()
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			p.wait()
			select {
			case <-cut:
				<-p.done // silent until the test ends
				return
			default:
			}
			if n > 0 {
				if _, werr := dst.Write(buf[:n]); werr != nil {
					return
				}
			}
			if err != nil {
				return
			}
		}
	}
	go pipe(up, c)
	pipe(c, up)
}

// DSNThrough is a PostgreSQL dsn (a URL, as the test servers give) sent
// through p.
func (p *FaultProxy) DSNThrough(t testing.TB, dsn string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	_, port, _ := net.SplitHostPort(p.Addr())
	q.Set("host", "127.0.0.1")
	q.Set("port", port)
	u.RawQuery = q.Encode()
	return u.String()
}
