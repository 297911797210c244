package corkconn

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/droverhq/drover/tests/testkit"
)

// serve runs handler over TLS on corkable, counted connections and returns
// a function that GETs path and reports the answer and the writes it took
// (after a first request has done the TLS handshake's).
func serve(t *testing.T, handler http.HandlerFunc) func(path string) (string, int64) {
	t.Helper()
	srv := httptest.NewUnstartedServer(handler)
	counted, writes := testkit.CountWrites(srv.Listener)
	srv.Listener = Listener{Listener: counted}
	srv.Config.ConnContext = ConnContext
	srv.StartTLS()
	t.Cleanup(srv.Close)
	get := func(path string) (string, int64) {
		t.Helper()
		before := writes.Load()
		resp, err := srv.Client().Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		return string(b), writes.Load() - before
	}
	get("/handshake")
	return get
}

// TestHoldSendsTheAnswerInOneWrite: a held answer of known length leaves
// in one write however many TLS records it takes; without Hold, and for an
// answer over MaxHeld, net/http's buffering makes it several, and nothing
// is lost either way.
func TestHoldSendsTheAnswerInOneWrite(t *testing.T) {
	small, large := strings.Repeat("s", 13<<10), strings.Repeat("L", MaxHeld+1)
	get := serve(t, func(w http.ResponseWriter, r *http.Request) {
		answer := small
		if r.URL.Path == "/large" {
			answer = large
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(answer)))
		if r.URL.Query().Get("hold") != "" {
			defer Hold(FromContext(r.Context(), r.ProtoMajor), w, int64(len(answer)))()
		}
		io.WriteString(w, answer)
	})
	if b, n := get("/small?hold=1"); b != small || n != 1 {
		t.Errorf("held: %d bytes in %d writes, want %d in 1", len(b), n, len(small))
	}
	if b, n := get("/small"); b != small || n < 2 {
		t.Errorf("not held: %d bytes in %d writes, want %d in several (else this test shows nothing)", len(b), n, len(small))
	}
	if b, n := get("/large?hold=1"); b != large || n < 2 {
		t.Errorf("over MaxHeld: %d bytes in %d writes, want %d passed through", len(b), n, len(large))
	}
	if b, n := get("/small?hold=1"); b != small || n != 1 {
		t.Errorf("held again on the same connection: %d bytes in %d writes", len(b), n)
	}
}

// TestFromContext: only an HTTP/1 request on a corkable connection can be
// held; Hold without one does nothing.
func TestFromContext(t *testing.T) {
	c := &Conn{}
	ctx := ConnContext(t.Context(), c)
	if FromContext(ctx, 1) != c {
		t.Error("HTTP/1 on a corkable connection: not found")
	}
	if FromContext(ctx, 2) != nil {
		t.Error("HTTP/2 streams share the connection: must not cork")
	}
	if FromContext(ConnContext(t.Context(), &net.TCPConn{}), 1) != nil {
		t.Error("a plain connection is not corkable")
	}
	if FromContext(ConnContext(t.Context(), wrapped{c}), 1) != c {
		t.Error("a wrapper's NetConn (tls.Conn, a hub's handed-back connection): not found")
	}
	if FromContext(NewContext(t.Context(), c), 1) != c {
		t.Error("NewContext: not found")
	}
	Hold(nil, httptest.NewRecorder(), 10<<10)() // no connection: a no-op
	release := Hold(c, httptest.NewRecorder(), 100)
	if c.corked {
		t.Error("an answer under MinHeld was corked")
	}
	release()
	release = Hold(c, httptest.NewRecorder(), 13<<10)
	if !c.corked {
		t.Error("a 13 KiB answer was not corked")
	}
	release()
}

// TestCloseWhileCorked: closing a corked connection closes it at once
// (what was held is dropped) rather than waiting on a lock or a peer.
func TestCloseWhileCorked(t *testing.T) {
	a, b := net.Pipe() // unbuffered: a write would block until b reads
	defer b.Close()
	c := &Conn{Conn: a}
	c.Cork()
	if _, err := c.Write([]byte("held")); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write([]byte("x")); err == nil {
		t.Error("write after close succeeded")
	}
}

// wrapped is a connection over another, as tls.Conn is.
type wrapped struct{ net.Conn }

func (w wrapped) NetConn() net.Conn { return w.Conn }
