package proxy

import (
	"bufio"
	"bytes"
	"encoding/pem"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/droverhq/drover/internal/corkconn"
	"github.com/droverhq/drover/tests/testkit"
)

// TestRoundTripDirectReusesAndRecovers: the proxy's own connections are
// kept alive between requests, and a GET whose idle connection the
// controller closed meanwhile is sent again on a fresh one.
func TestRoundTripDirectReusesAndRecovers(t *testing.T) {
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer tok" {
			http.Error(w, "no token", http.StatusUnauthorized)
			return
		}
		if r.Header.Get("Expect") != "" {
			http.Error(w, "the hub forwarded Expect", http.StatusBadRequest)
			return
		}
		if r.URL.Path == "/hints" {
			w.Header().Set("Link", "</style.css>; rel=preload")
			w.WriteHeader(http.StatusEarlyHints)
		}
		body, _ := io.ReadAll(r.Body)
		io.WriteString(w, "answer to "+r.URL.Path+string(body))
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.StartTLS()
	defer srv.Close()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	addr := strings.TrimPrefix(srv.URL, "https://")
	sc, err := newClient(string(ca), []string{addr}, DefaultTimeouts)
	if err != nil {
		t.Fatal(err)
	}
	defer sc.pool.closeAll()
	get := func(path string) string {
		t.Helper()
		in := httptest.NewRequestWithContext(t.Context(), http.MethodGet, path, nil)
		in.Header.Set("Authorization", "Bearer the caller's")
		resp, c, stop, err := sc.roundTripDirect(in, "tok", "")
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		stop()
		sc.pool.put(c)
		return string(b)
	}
	if got := get("/a"); got != "answer to /a" {
		t.Fatalf("first answer %q", got)
	}
	if got := get("/b"); got != "answer to /b" || conns.Load() != 1 {
		t.Fatalf("second answer %q over %d connections, want one kept alive", got, conns.Load())
	}
	srv.CloseClientConnections() // the controller drops the idle connection
	if got := get("/c"); got != "answer to /c" || conns.Load() != 2 {
		t.Fatalf("after the connection was dropped: %q over %d connections, want a fresh second one", got, conns.Load())
	}

	// An informational answer (103 Early Hints) is skipped, not forwarded
	// as the answer; the caller's Expect stays at the hub (whose server
	// answered it), and the body follows.
	in := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/hints", strings.NewReader(" with a body"))
	in.Header.Set("Expect", "100-continue")
	resp, c, stop, err := sc.roundTripDirect(in, "tok", "")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	stop()
	c.conn.Close()
	if resp.StatusCode != http.StatusOK || string(b) != "answer to /hints with a body" {
		t.Fatalf("POST with Expect after early hints: %d %q", resp.StatusCode, b)
	}
}

// TestWriteRequestForwardsTheCallersMessage: the proxy writes the caller's
// method, target, end-to-end headers and body, with the hub's token in
// place of the caller's credential, and keeps hop-by-hop headers (and
// those the caller's Connection names), cookies, Origin and Expect.
func TestWriteRequestForwardsTheCallersMessage(t *testing.T) {
	send := func(in *http.Request) (*http.Request, []byte) {
		t.Helper()
		var buf bytes.Buffer
		bw := bufio.NewWriter(&buf)
		if err := writeRequest(bw, in, "spoke.test:17070", "tok", ""); err != nil {
			t.Fatal(err)
		}
		out, err := http.ReadRequest(bufio.NewReader(&buf))
		if err != nil {
			t.Fatalf("the controller cannot read what the proxy wrote: %v\n%s", err, buf.String())
		}
		body, err := io.ReadAll(out.Body)
		if err != nil {
			t.Fatal(err)
		}
		return out, body
	}

	in := httptest.NewRequest(http.MethodGet, "/v1/models/m/status?since=3", nil)
	for k, v := range map[string]string{"Accept": "application/json", "X-Request-Id": "r1", "Authorization": "Bearer caller",
		"Cookie": "drover_access=secret", "Origin": "https://evil.test", "Expect": "100-continue", "Keep-Alive": "timeout=5",
		"Connection": "X-Hop", "X-Hop": "per-connection", "Proxy-Authorization": "Basic x"} {
		in.Header.Set(k, v)
	}
	out, body := send(in)
	if out.Method != http.MethodGet || out.RequestURI != "/v1/models/m/status?since=3" || out.Host != "spoke.test:17070" {
		t.Errorf("request line: %s %s, Host %s", out.Method, out.RequestURI, out.Host)
	}
	if got := out.Header.Get("Authorization"); got != "Bearer tok" {
		t.Errorf("Authorization %q, want the hub's token", got)
	}
	for _, k := range []string{"Accept", "X-Request-Id"} {
		if out.Header.Get(k) != in.Header.Get(k) {
			t.Errorf("%s not forwarded: %q", k, out.Header.Get(k))
		}
	}
	for _, k := range []string{"Cookie", "Origin", "Expect", "Keep-Alive", "Connection", "X-Hop", "Proxy-Authorization"} {
		if v, ok := out.Header[k]; ok {
			t.Errorf("%s forwarded: %q", k, v)
		}
	}
	if len(body) != 0 || out.ContentLength != 0 {
		t.Errorf("a GET without a body arrived with %d bytes (Content-Length %d)", len(body), out.ContentLength)
	}

	payload := strings.Repeat("charm archive bytes ", 1000)
	in = httptest.NewRequest(http.MethodPost, "/v1/models/m/charms", strings.NewReader(payload))
	if out, body = send(in); string(body) != payload || out.ContentLength != int64(len(payload)) {
		t.Errorf("a body of known length: %d bytes arrived, Content-Length %d", len(body), out.ContentLength)
	}
	in = httptest.NewRequest(http.MethodPost, "/v1/models/m/charms", io.MultiReader(strings.NewReader(payload)))
	in.ContentLength = -1 // the caller sent it chunked
	if out, body = send(in); string(body) != payload || len(out.TransferEncoding) != 1 || out.TransferEncoding[0] != "chunked" {
		t.Errorf("a body of unknown length: %d bytes arrived, Transfer-Encoding %v", len(body), out.TransferEncoding)
	}
	in = httptest.NewRequest(http.MethodPost, "/v1/models/m/applications/kv/expose", nil)
	if out, _ = send(in); out.Header.Get("Content-Length") != "0" {
		t.Errorf("an empty POST says Content-Length %q, want 0", out.Header.Get("Content-Length"))
	}

	// A body shorter than the caller announced is an error, not a request
	// the controller waits on.
	in = httptest.NewRequest(http.MethodPost, "/v1/models/m/charms", strings.NewReader("short"))
	in.ContentLength = 100
	if err := writeRequest(bufio.NewWriter(io.Discard), in, "spoke.test:17070", "tok", ""); err == nil {
		t.Error("a short body was written without an error")
	}
}

// TestProxiedAnswerGoesOutInOneWrite: an answer of known length the proxy
// relays leaves the hub in one write however many TLS records it takes,
// where net/http's 4 KiB buffer made it two or three.
func TestProxiedAnswerGoesOutInOneWrite(t *testing.T) {
	answer := strings.Repeat("x", 13<<10) // a typical status answer
	spoke := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(len(answer)))
		io.WriteString(w, answer)
	}))
	defer spoke.Close()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: spoke.Certificate().Raw})
	sc, err := newClient(string(ca), []string{strings.TrimPrefix(spoke.URL, "https://")}, DefaultTimeouts)
	if err != nil {
		t.Fatal(err)
	}
	defer sc.pool.closeAll()

	hub := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := (&Relay{}).forwardDirect(w, r, "east", sc, "tok"); err != nil {
			t.Error(err)
		}
	}))
	counted, writes := testkit.CountWrites(hub.Listener)
	hub.Listener = corkconn.Listener{Listener: counted}
	hub.Config.ConnContext = corkconn.ConnContext
	hub.StartTLS()
	defer hub.Close()
	get := func() {
		t.Helper()
		resp, err := hub.Client().Get(hub.URL + "/status")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(b) != answer {
			t.Fatalf("relayed %d bytes, want %d", len(b), len(answer))
		}
	}
	get() // the TLS handshake's writes
	before := writes.Load()
	get()
	if n := writes.Load() - before; n != 1 {
		t.Errorf("the answer left in %d writes, want 1", n)
	}
}

// TestMemoizableCall: only reads of a path under a model, as the router
// sees it, may be served from a remembered route.
func TestMemoizableCall(t *testing.T) {
	for _, c := range []struct {
		method, target string
		upgrade        bool
		want           string
	}{
		{"GET", "/v1/models/m1/status", false, "m1"},
		{"HEAD", "/v1/models/m1/units/web/0", false, "m1"},
		{"GET", "/v1/models/m1/", false, "m1"},
		{"GET", "/v1/models/m1", false, ""},         // the hub's own model route
		{"GET", "/v1/models", false, ""},            // the listing
		{"POST", "/v1/models/m1/status", false, ""}, // writes are decided each time
		{"DELETE", "/v1/models/m1/", false, ""},
		{"GET", "/v1/models/m1/watch", true, ""},      // websockets go through the router
		{"GET", "/v1/models/m%2F1/status", false, ""}, // escaped: the router decides
		{"GET", "/v1/models//status", false, ""},
		{"GET", "/v1/controllers/c1/x", false, ""},
	} {
		r := httptest.NewRequest(c.method, c.target, nil)
		if c.upgrade {
			r.Header.Set("Upgrade", "websocket")
		}
		got, ok := Memoizable(r)
		if ok != (c.want != "") || got != c.want {
			t.Errorf("%s %s (upgrade %v): %q, %v; want %q", c.method, c.target, c.upgrade, got, ok, c.want)
		}
	}
}

// TestCopyAnswerHeaders: of a controller's answer the hub relays only
// the headers a caller needs, never a cookie, a redirect or a
// connection-level header, with a content type no browser runs, and
// nosniff.
func TestCopyAnswerHeaders(t *testing.T) {
	for _, c := range []struct {
		in   http.Header
		want http.Header
	}{
		{http.Header{"Connection": {"X-Conn, keep-alive"}, "X-Conn": {"1"}, "Keep-Alive": {"timeout=5"},
			"Transfer-Encoding": {"chunked"}, "Content-Type": {"application/json"}, "X-Drover-Index": {"7"},
			"Set-Cookie": {"__Host-drover_session=x"}, "Location": {"https://evil.example"}, "Refresh": {"0;url=https://evil.example"}},
			http.Header{"Content-Type": {"application/json"}, "X-Drover-Index": {"7"}, "X-Content-Type-Options": {"nosniff"}}},
		{http.Header{"Content-Type": {"application/zip"}, "Content-Disposition": {`attachment; filename="x.charm"`}, "Content-Length": {"3"}},
			http.Header{"Content-Type": {"application/zip"}, "Content-Disposition": {`attachment; filename="x.charm"`}, "Content-Length": {"3"},
				"X-Content-Type-Options": {"nosniff"}}},
		{http.Header{"Content-Type": {"Text/Plain; charset=utf-8"}, "X-Content-Type-Options": {"sniff-please"}},
			http.Header{"Content-Type": {"Text/Plain; charset=utf-8"}, "X-Content-Type-Options": {"nosniff"}}},
		{http.Header{"Content-Type": {"text/html"}}, http.Header{"Content-Type": {"application/octet-stream"}, "X-Content-Type-Options": {"nosniff"}}},
		{http.Header{"Content-Type": {"image/svg+xml"}}, http.Header{"Content-Type": {"application/octet-stream"}, "X-Content-Type-Options": {"nosniff"}}},
		{http.Header{"Content-Type": {"application/json", "text/html"}}, http.Header{"Content-Type": {"application/octet-stream"}, "X-Content-Type-Options": {"nosniff"}}},
	} {
		got := http.Header{}
		copyAnswerHeaders(got, c.in)
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("from %v: %v, want %v", c.in, got, c.want)
		}
	}
}
