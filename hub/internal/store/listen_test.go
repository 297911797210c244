package store_test

import (
	"errors"
	"net"
	"net/url"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/droverhq/drover/hub/internal/store"
	"github.com/droverhq/drover/tests/testkit"
)

// cutProxy relays TCP connections to a PostgreSQL server's unix socket
// until cut: from then on the connections it relays carry nothing either
// way and stay open, as a connection does whose network path died without
// a word; new connections are relayed as before.
type cutProxy struct {
	ln   net.Listener
	mu   sync.Mutex
	cuts chan struct{}
	done chan struct{} // the test's end: the silenced connections close
}

func newCutProxy(t *testing.T, socket string) *cutProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln, cuts: make(chan struct{}), done: make(chan struct{})}
	t.Cleanup(func() { ln.Close(); close(p.done) })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.mu.Lock()
			cut := p.cuts
			p.mu.Unlock()
			go p.relay(c, socket, cut)
		}
	}()
	return p
}

// cut silences every connection relayed so far.
func (p *cutProxy) cut() {
	p.mu.Lock()
	close(p.cuts)
	p.cuts = make(chan struct{})
	p.mu.Unlock()
}

func (p *cutProxy) relay(c net.Conn, socket string, cut chan struct{}) {
	defer c.Close()
	up, err := net.Dial("unix", socket)
	if err != nil {
		return
	}
	defer up.Close()
	pipe := func(dst, src net.Conn) {
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			select {
			case <-cut:
				<-p.done // silent until the test ends
				dst.Close()
				return
			default:
			}
			if n > 0 {
				if _, err := dst.Write(buf[:n]); err != nil {
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

// TestListenerNoticesADeadConnection: the permission-change listener,
// quiet for a while, checks that its connection still answers (and goes
// on listening when it does); when its connection died without a word it
// returns, so that the hub listens again, where it used to wait on it for
// good and miss every change.
func TestListenerNoticesADeadConnection(t *testing.T) {
	store.SetListenPing(t, 300*time.Millisecond)
	_, dsn := newStore(t)
	u, _ := url.Parse(dsn)
	p := newCutProxy(t, filepath.Join(u.Query().Get("host"), ".s.PGSQL.5432"))
	q := u.Query()
	_, port, _ := net.SplitHostPort(p.ln.Addr().String())
	q.Set("host", "127.0.0.1")
	q.Set("port", port)
	u.RawQuery = q.Encode()
	s, err := store.Open(t.Context(), u.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)

	listening, changes, ended := make(chan struct{}), make(chan struct{}, 16), make(chan error, 1)
	go func() {
		ended <- s.ListenAuthzChanges(t.Context(), func() { close(listening) }, func() { changes <- struct{}{} })
	}()
	<-listening
	pings := store.ListenPings()
	testkit.EventuallyWithin(t, 10*time.Second, func() (bool, error) { return store.ListenPings() >= pings+2, nil },
		"the quiet listener checked its connection twice")
	if err := s.MarkDelivered(t.Context(), nil, time.Now()); err != nil { // announces a change
		t.Fatal(err)
	}
	select {
	case <-changes:
	case err := <-ended:
		t.Fatalf("the listener ended after its checks: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("no change heard after the checks")
	}

	p.cut()
	select {
	case err := <-ended:
		if err == nil || errors.Is(err, t.Context().Err()) {
			t.Fatalf("the listener ended with %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the listener still waits on a dead connection")
	}
}
