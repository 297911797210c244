package api_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/tests/testkit"
	"github.com/gorilla/websocket"
)

// watchNode serves the watch route: each connection is handed to script
// with the since it asked for. When down, handshakes get 503 unavailable.
type watchNode struct {
	t       *testing.T
	down    atomic.Bool
	refused atomic.Int32 // handshakes answered unavailable
	sinces  chan uint64
	// marks, if set, gets the mark each connection resumed with.
	marks  chan string
	script func(conn *websocket.Conn, since uint64)
}

func (n *watchNode) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/models/"+model+"/watch" {
		http.Error(w, `{"code":"not-found","message":"no such model"}`, http.StatusNotFound)
		return
	}
	if n.down.Load() {
		n.refused.Add(1)
		http.Error(w, `{"code":"unavailable","message":"shutting down"}`, http.StatusServiceUnavailable)
		return
	}
	since, err := strconv.ParseUint(r.URL.Query().Get("since"), 10, 64)
	if err != nil {
		http.Error(w, `{"code":"bad-request","message":"since"}`, http.StatusBadRequest)
		return
	}
	up := websocket.Upgrader{}
	conn, err := up.Upgrade(w, r, nil)
	if err != nil {
		n.t.Errorf("upgrade: %v", err)
		return
	}
	n.sinces <- since
	if n.marks != nil {
		n.marks <- r.URL.Query().Get("mark")
	}
	n.script(conn, since)
}

func send(t *testing.T, conn *websocket.Conn, f api.WatchFrame) {
	t.Helper()
	if err := conn.WriteJSON(f); err != nil {
		t.Errorf("write frame: %v", err)
	}
}

// drain reads until the client goes away, so the handler ends with it.
func drain(conn *websocket.Conn) {
	for {
		if _, _, err := conn.ReadMessage(); err != nil {
			_ = conn.Close()
			return
		}
	}
}

func TestWatchResumesOnAnotherNode(t *testing.T) {
	testkit.CheckLeaks(t)
	ca := newTestCA(t)
	sinces, marks := make(chan uint64, 4), make(chan string, 4)
	a := &watchNode{t: t, sinces: sinces, marks: marks}
	a.script = func(conn *websocket.Conn, since uint64) {
		send(t, conn, api.WatchFrame{Type: api.FrameReset, Index: 5, Status: &api.FullStatus{Index: 5}, Mark: "2.5"})
		send(t, conn, api.WatchFrame{Type: api.FrameDelta, Index: 6,
			Deltas: []api.WatchDelta{{Kind: "unit", Key: "kv/0", Op: "upsert"}}, Mark: "2.6"})
		send(t, conn, api.WatchFrame{Type: api.FrameKeepalive, Index: 7, Mark: "2.7"})
		// The node goes away: handshakes are refused and the connection
		// drops without a close frame.
		a.down.Store(true)
		_ = conn.Close()
	}
	b := &watchNode{t: t, sinces: sinces, marks: marks}
	b.script = func(conn *websocket.Conn, since uint64) {
		send(t, conn, api.WatchFrame{Type: api.FrameDelta, Index: since + 1,
			Deltas: []api.WatchDelta{{Kind: "unit", Key: "kv/1", Op: "upsert"}}})
		drain(conn)
	}
	srvA, srvB := ca.serve(t, a), ca.serve(t, b)
	c := newClient(t, api.ClientConfig{Addresses: []string{addr(srvA), addr(srvB)}, CACert: ca.pem})

	w, err := c.Model(model).Watch(t.Context(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var got []uint64
	for range 3 {
		f, err := w.Next(t.Context())
		if err != nil {
			t.Fatalf("next after %v: %v", got, err)
		}
		if f.Type == api.FrameKeepalive {
			t.Fatal("keepalive frame handed to the caller")
		}
		got = append(got, f.Index)
	}
	if want := []uint64{5, 6, 8}; !slices.Equal(got, want) {
		t.Fatalf("frame indexes %v, want %v", got, want)
	}
	if s1, s2 := <-sinces, <-sinces; s1 != 0 || s2 != 7 {
		t.Fatalf("connections asked since=%d then since=%d, want 0 then 7", s1, s2)
	}
	// The position names its entry (a controller restored from an older
	// copy holds another one there, and answers with a reset).
	if m1, m2 := <-marks, <-marks; m1 != "" || m2 != "2.7" {
		t.Fatalf("connections resumed with mark %q then %q, want none then 2.7", m1, m2)
	}
	if w.Index() != 8 || c.Index() != 8 {
		t.Fatalf("watcher index %d, client index %d; want 8", w.Index(), c.Index())
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Next(t.Context()); !errors.Is(err, api.ErrWatcherClosed) {
		t.Fatalf("next after close: %v", err)
	}
}

func TestWatchEndsWithItsContext(t *testing.T) {
	testkit.CheckLeaks(t)
	ca := newTestCA(t)
	n := &watchNode{t: t, sinces: make(chan uint64, 1)}
	n.script = func(conn *websocket.Conn, since uint64) { drain(conn) }
	srv := ca.serve(t, n)
	c := newClient(t, api.ClientConfig{Addresses: []string{addr(srv)}, CACert: ca.pem})

	ctx, cancel := context.WithCancel(t.Context())
	w, err := c.Model(model).Watch(ctx, 3)
	if err != nil {
		t.Fatal(err)
	}
	if since := <-n.sinces; since != 3 {
		t.Fatalf("since %d, want 3", since)
	}
	cancel()
	if _, err := w.Next(t.Context()); !errors.Is(err, api.ErrWatcherClosed) {
		t.Fatalf("next after the watch context ended: %v", err)
	}
	// Close after the context ended still waits for the reader.
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestWatchRefusedIsFinal(t *testing.T) {
	testkit.CheckLeaks(t)
	ca := newTestCA(t)
	srv := ca.serve(t, &watchNode{t: t})
	c := newClient(t, api.ClientConfig{Addresses: []string{addr(srv)}, CACert: ca.pem})
	_, err := c.Model("other-model").Watch(t.Context(), 0)
	var e *api.Error
	if !errors.Is(err, api.ErrNotFound) || !errors.As(err, &e) || e.Status != http.StatusNotFound {
		t.Fatalf("got %v, want not-found", err)
	}
}

// TestWatchResumesWithARenewedToken: a hub ends a watch when the token it
// was opened with expires (and refuses that token from then on); the
// watcher renews the token and resumes where it was.
func TestWatchResumesWithARenewedToken(t *testing.T) {
	testkit.CheckLeaks(t)
	var refreshes atomic.Int32
	if f := watchAcrossExpiry(t, func(context.Context) (string, error) { refreshes.Add(1); return "t2", nil }); f.Index != 8 {
		t.Errorf("resumed at index %d, want 8 (after 7)", f.Index)
	}
	if n := refreshes.Load(); n != 1 {
		t.Errorf("token renewed %d times, want once", n)
	}
}

// TestWatchSaysOutage: a watch that cannot be resumed because no
// controller is available tells its owner once, and again when it has
// resumed; one resumed at once (as after the hub ends a call whose token
// expired) tells nothing.
func TestWatchSaysOutage(t *testing.T) {
	testkit.CheckLeaks(t)
	ca := newTestCA(t)
	n := &watchNode{t: t, sinces: make(chan uint64, 4)}
	conns := 0
	n.script = func(conn *websocket.Conn, since uint64) {
		conns++
		switch conns {
		case 1:
			send(t, conn, api.WatchFrame{Type: api.FrameReset, Index: 5, Status: &api.FullStatus{Index: 5}})
			_ = conn.Close() // ended, and taken back at once
		case 2:
			send(t, conn, api.WatchFrame{Type: api.FrameDelta, Index: 6, Deltas: []api.WatchDelta{{Kind: "unit", Key: "kv/0", Op: "upsert"}}})
			n.down.Store(true) // then the controller goes away for a while
			_ = conn.Close()
		default:
			send(t, conn, api.WatchFrame{Type: api.FrameDelta, Index: since + 1, Deltas: []api.WatchDelta{{Kind: "unit", Key: "kv/1", Op: "upsert"}}})
			drain(conn)
		}
	}
	srv := ca.serve(t, n)
	c := newClient(t, api.ClientConfig{Addresses: []string{addr(srv)}, CACert: ca.pem})
	w, err := c.Model(model).Watch(t.Context(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var told []string
	w.OnOutage(func(err error) { told = append(told, fmt.Sprint(err)) })
	go func() { // the controller comes back once the watch has been refused twice
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for n.refused.Load() < 2 && t.Context().Err() == nil {
			<-tick.C
		}
		n.down.Store(false)
	}()
	for _, want := range []uint64{5, 6, 7} {
		f, err := w.Next(t.Context())
		if err != nil || f.Index != want {
			t.Fatalf("frame %+v %v, want index %d", f, err, want)
		}
		if want == 6 && len(told) != 0 {
			t.Errorf("a watch resumed at once told of an outage: %q", told)
		}
	}
	if len(told) != 2 || !strings.Contains(told[0], "shutting down") || told[1] != "<nil>" {
		t.Errorf("outage told %q, want the refusal once, then nil", told)
	}
}

// expiringTokenNode serves a watch that sends a reset at index 7 to the
// holder of token t1, then takes t1 for expired (401) and ends the stream;
// the holder of t2 gets a delta after whatever index it resumes from.
func expiringTokenNode(t *testing.T) (*testCA, *httptest.Server) {
	ca := newTestCA(t)
	var current atomic.Value // the token the server accepts
	current.Store("t1")
	node := &watchNode{t: t, sinces: make(chan uint64, 4)}
	node.script = func(conn *websocket.Conn, since uint64) {
		if since == 0 {
			send(t, conn, api.WatchFrame{Type: api.FrameReset, Index: 7, Status: &api.FullStatus{}})
			current.Store("t2") // t1 expires: the stream ends, t1 is refused
			_ = conn.Close()
			return
		}
		send(t, conn, api.WatchFrame{Type: api.FrameDelta, Index: since + 1})
		drain(conn)
	}
	auth := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+current.Load().(string) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"code":"unauthorized","message":"token expired"}`))
			return
		}
		node.ServeHTTP(w, r)
	})
	return ca, ca.serve(t, auth)
}

// watchAcrossExpiry watches expiringTokenNode's model with token t1,
// renewed by refresh, and returns the delta that follows the reset once
// the token was renewed; the test ends unless both come.
func watchAcrossExpiry(t *testing.T, refresh func(context.Context) (string, error)) *api.WatchFrame {
	t.Helper()
	ca, srv := expiringTokenNode(t)
	c := newClient(t, api.ClientConfig{Addresses: []string{addr(srv)}, CACert: ca.pem, Token: "t1", RefreshToken: refresh})
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	w, err := c.Model(model).Watch(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var f *api.WatchFrame
	for _, want := range []string{api.FrameReset, api.FrameDelta} {
		if f, err = w.Next(ctx); err != nil || f.Type != want {
			t.Fatalf("frame: %+v %v, want %s", f, err, want)
		}
	}
	return f
}

// TestWatchWaitsOutAnUnavailableRenewal: a watch whose token must be
// renewed while the server that renews it is unavailable retries, as for
// any outage, instead of ending unauthorized.
func TestWatchWaitsOutAnUnavailableRenewal(t *testing.T) {
	testkit.CheckLeaks(t)
	var refreshes atomic.Int32
	watchAcrossExpiry(t, func(context.Context) (string, error) {
		if refreshes.Add(1) == 1 {
			return "", &api.Error{Code: api.CodeUnavailable, Message: "the hub's database is unavailable"}
		}
		return "t2", nil
	})
	if n := refreshes.Load(); n != 2 {
		t.Errorf("token renewals tried: %d, want 2 (one refused as unavailable)", n)
	}
}
