package proxy

import (
	"context"
	"encoding/pem"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/droverhq/drover/tests/testkit"
)

// controllerNodes are addresses of one controller's nodes in three states:
// down (nothing listening), hangup (reads a request and closes the
// connection without an answer: the request may have been applied) and up
// (answers with the Host it was sent to). httptest's servers share one
// certificate, so one CA serves them all.
type controllerNodes struct {
	ca               string
	down, hangup, up string
	upSrv            *httptest.Server
	served, upConns  atomic.Int32 // requests up answered, connections it accepted
	hungUp           atomic.Int32 // requests hangup read
}

func newControllerNodes(t *testing.T) *controllerNodes {
	t.Helper()
	n := &controllerNodes{down: testkit.FreeAddr(t)}
	up := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.served.Add(1)
		io.WriteString(w, r.Host)
	}))
	up.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			n.upConns.Add(1)
		}
	}
	up.StartTLS()
	t.Cleanup(up.Close)
	hangup := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.hungUp.Add(1)
		if c, _, err := http.NewResponseController(w).Hijack(); err == nil {
			c.Close()
		}
	}))
	t.Cleanup(hangup.Close)
	n.ca = string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: up.Certificate().Raw}))
	n.upSrv = up
	n.up, n.hangup = strings.TrimPrefix(up.URL, "https://"), strings.TrimPrefix(hangup.URL, "https://")
	return n
}

func (n *controllerNodes) client(t *testing.T, addrs ...string) *Client {
	t.Helper()
	sc, err := newClient(n.ca, addrs, DefaultTimeouts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		sc.transport.CloseIdleConnections()
		sc.pool.closeAll()
	})
	return sc
}

// A sendFunc sends one request through sc and returns the answer's body.
type sendFunc func(t *testing.T, ctx context.Context, sc *Client, method string) (string, error)

// viaTransport sends as the websocket proxy does: to sc.address(), through
// sc as the http.RoundTripper. The request it built must come back
// unchanged whichever address answered.
func viaTransport(t *testing.T, ctx context.Context, sc *Client, method string) (string, error) {
	t.Helper()
	addr := sc.address()
	req, err := http.NewRequestWithContext(ctx, method, "https://"+addr+"/x", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := sc.RoundTrip(req)
	if req.URL.Host != addr || req.Host != addr {
		t.Errorf("RoundTrip changed the caller's request for %s: %s, Host %s", addr, req.URL, req.Host)
	}
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// direct sends as the plain proxy does, and puts the connection back.
func direct(t *testing.T, ctx context.Context, sc *Client, method string) (string, error) {
	t.Helper()
	resp, c, stop, err := sc.roundTripDirect(httptest.NewRequestWithContext(ctx, method, "/x", nil), "tok", "")
	if err != nil {
		return "", err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	stop()
	sc.pool.put(c)
	return string(b), err
}

// TestSpokeClientFailover: both ways to a controller (RoundTrip for the
// websocket proxy, roundTripDirect for the rest) start at the address that
// answered last, move on only when the request certainly was not sent and
// the caller still waits, and remember the address that answered.
func TestSpokeClientFailover(t *testing.T) {
	n := newControllerNodes(t)
	for name, send := range map[string]sendFunc{"RoundTrip": viaTransport, "roundTripDirect": direct} {
		t.Run(name, func(t *testing.T) {
			// A node that is down is passed over, and the one that answered
			// is where the next request goes.
			sc := n.client(t, n.down, n.up)
			for i := range 2 {
				if body, err := send(t, t.Context(), sc, http.MethodGet); err != nil || body != n.up {
					t.Fatalf("request %d with the first node down: %q, %v", i, body, err)
				}
				if sc.preferred.Load() != 1 {
					t.Fatalf("request %d: preferred %d, want the node that answered", i, sc.preferred.Load())
				}
			}

			// A request that may have reached a node is not sent again
			// elsewhere, not even a GET.
			sc = n.client(t, n.hangup, n.up)
			served, hungUp := n.served.Load(), n.hungUp.Load()
			if _, err := send(t, t.Context(), sc, http.MethodGet); err == nil {
				t.Fatal("a node that hung up on the request answered")
			}
			if n.hungUp.Load() != hungUp+1 || n.served.Load() != served || sc.preferred.Load() != 0 {
				t.Fatalf("after a hang-up: hangup read %d, up served %d, preferred %d; want 1, 0, 0",
					n.hungUp.Load()-hungUp, n.served.Load()-served, sc.preferred.Load())
			}
			// It starts at the preferred address: here the one that answers.
			sc.preferred.Store(1)
			if body, err := send(t, t.Context(), sc, http.MethodGet); err != nil || body != n.up || n.hungUp.Load() != hungUp+1 {
				t.Fatalf("starting at the preferred node: %q, %v; hangup read %d", body, err, n.hungUp.Load()-hungUp)
			}

			// A caller that went away is not failed over for.
			sc = n.client(t, n.down, n.up)
			ctx, cancel := context.WithCancel(t.Context())
			cancel()
			served = n.served.Load()
			if _, err := send(t, ctx, sc, http.MethodGet); err == nil || n.served.Load() != served || sc.preferred.Load() != 0 {
				t.Fatalf("with the caller gone: %v, up served %d, preferred %d", err, n.served.Load()-served, sc.preferred.Load())
			}

			// No address: the controller is unavailable.
			if _, err := send(t, t.Context(), n.client(t), http.MethodGet); !errors.Is(err, ErrUnavailable) {
				t.Fatalf("no address: %v, want ErrUnavailable", err)
			}
		})
	}
}

// TestRoundTripDirectSendsOnlyGETsAgain: a write whose connection breaks
// after it was sent fails; it is not sent again on a fresh connection, as
// a GET is (TestRoundTripDirectReusesAndRecovers), nor to another node.
// But a pooled connection the controller closed while it was idle (it
// restarted, or its idle timeout passed) is found closed before anything
// is written to it, and the write goes on a fresh one.
func TestRoundTripDirectSendsOnlyGETsAgain(t *testing.T) {
	n := newControllerNodes(t)
	sc := n.client(t, n.up, n.down)
	if _, err := direct(t, t.Context(), sc, http.MethodGet); err != nil { // leaves a connection in the pool
		t.Fatal(err)
	}
	conns, served := n.upConns.Load(), n.served.Load()
	n.upSrv.CloseClientConnections() // the controller drops the idle connection
	idle := sc.pool.idle[0]
	idle.idleSince = idle.idleSince.Add(-checkIdleAfter) // idle long enough to be checked
	for !closedWhileIdle(idle) {                         // until the close reaches this end
		runtime.Gosched()
	}
	if body, err := direct(t, t.Context(), sc, http.MethodPost); err != nil || body != n.up {
		t.Fatalf("a POST after the controller closed the idle connection: %q, %v", body, err)
	}
	if n.upConns.Load() != conns+1 || n.served.Load() != served+1 {
		t.Fatalf("%d new connections, %d served; want 1, 1", n.upConns.Load()-conns, n.served.Load()-served)
	}

	// One that breaks after the request was written is not sent again.
	sc = n.client(t, n.hangup, n.up)
	hungUp := n.hungUp.Load()
	served = n.served.Load()
	if _, err := direct(t, t.Context(), sc, http.MethodPost); err == nil {
		t.Fatal("a POST on a connection closed after the request succeeded")
	}
	if n.hungUp.Load() != hungUp+1 || n.served.Load() != served || sc.preferred.Load() != 0 {
		t.Fatalf("the POST was sent again: hangup read %d, up served %d, preferred %d; want 1, 0, 0",
			n.hungUp.Load()-hungUp, n.served.Load()-served, sc.preferred.Load())
	}

	// An open connection is not taken for a closed one, and one idle
	// longer than the hub keeps them is not used.
	sc = n.client(t, n.up)
	if _, err := direct(t, t.Context(), sc, http.MethodGet); err != nil {
		t.Fatal(err)
	}
	idle = sc.pool.idle[0]
	idle.idleSince = idle.idleSince.Add(-checkIdleAfter)
	if closedWhileIdle(idle) {
		t.Fatal("an open idle connection was taken for closed")
	}
	if c := sc.pool.get(n.up); c != idle {
		t.Fatalf("the open idle connection was not reused: %p, want %p", c, idle)
	}
	sc.pool.put(idle)
	idle.idleSince = idle.idleSince.Add(-maxSpokeConnIdle)
	if c := sc.pool.get(n.up); c != nil {
		t.Fatal("a connection idle past maxSpokeConnIdle was reused")
	}

	// The janitor's sweep closes those idle too long, and keeps the rest.
	var dialed []*spokeConn
	for range 2 {
		c, err := sc.dial(t.Context(), n.up)
		if err != nil {
			t.Fatal(err)
		}
		sc.pool.put(c)
		dialed = append(dialed, c)
	}
	old, fresh := dialed[0], dialed[1]
	old.idleSince = old.idleSince.Add(-2 * maxSpokeConnIdle)
	sc.pool.closeIdle(time.Now())
	if len(sc.pool.idle) != 1 || sc.pool.idle[0] != fresh {
		t.Fatalf("after the sweep: %d idle connections, want the fresh one", len(sc.pool.idle))
	}
	if _, err := old.conn.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("the swept connection: %v, want closed", err)
	}
}

// TestFailoverOrder drives the loop itself: the order it tries addresses
// in, what it remembers, and when it stops.
func TestFailoverOrder(t *testing.T) {
	notSent := &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}
	maySent := errors.New("connection reset after the request")
	sc := &Client{addrs: []string{"a", "b", "c"}}
	run := func(ctx context.Context, results map[string]error, done map[string]bool) ([]string, error) {
		var tried []string
		err := sc.failover(ctx, func(addr string) (bool, error) {
			tried = append(tried, addr)
			return done[addr], results[addr]
		})
		return tried, err
	}
	check := func(what string, tried []string, err error, wantTried string, wantErr error, wantPreferred int32) {
		t.Helper()
		if strings.Join(tried, ",") != wantTried || err != wantErr || sc.preferred.Load() != wantPreferred {
			t.Errorf("%s: tried %v, %v, preferred %d; want %s, %v, %d", what, tried, err, sc.preferred.Load(), wantTried, wantErr, wantPreferred)
		}
	}

	sc.preferred.Store(1)
	tried, err := run(t.Context(), map[string]error{"a": notSent, "b": notSent, "c": notSent}, nil)
	check("all down", tried, err, "b,c,a", notSent, 1)
	tried, err = run(t.Context(), map[string]error{"b": notSent}, map[string]bool{"c": true})
	check("c answers", tried, err, "b,c", nil, 2)
	tried, err = run(t.Context(), map[string]error{"c": maySent}, nil)
	check("may have been sent", tried, err, "c", maySent, 2)
	tried, err = run(t.Context(), map[string]error{"c": notSent}, map[string]bool{"c": true})
	check("final though not sent", tried, err, "c", notSent, 2)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	tried, err = run(ctx, map[string]error{"a": notSent, "b": notSent, "c": notSent}, nil)
	check("caller gone", tried, err, "c", notSent, 2)
}

// TestUncancelableReadsAreBounded: a request nothing can cancel (a taken
// connection's read) waits for a controller that never answers only so
// long; and the bound does not outlive the request on a pooled connection.
func TestUncancelableReadsAreBounded(t *testing.T) {
	n := newControllerNodes(t)
	silent := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done() // until the hub gives up and closes the connection
	}))
	t.Cleanup(silent.Close)
	sc := n.client(t, strings.TrimPrefix(silent.URL, "https://"))
	sc.t.Uncancelable = 300 * time.Millisecond
	start := time.Now()
	if _, err := direct(t, context.Background(), sc, http.MethodGet); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a controller that never answers: %v, want a deadline error", err)
	}
	if waited := time.Since(start); waited < sc.t.Uncancelable {
		t.Fatalf("gave up after %v, before the bound", waited)
	}

	// Back in the pool, a connection carries no deadline: here one long
	// past is not taken for a closed connection.
	sc = n.client(t, n.up)
	c, err := sc.dial(t.Context(), n.up)
	if err != nil {
		t.Fatal(err)
	}
	c.conn.SetReadDeadline(time.Now().Add(-time.Second))
	sc.pool.put(c)
	if closedWhileIdle(c) {
		t.Fatal("a pooled connection kept its read deadline")
	}
}
