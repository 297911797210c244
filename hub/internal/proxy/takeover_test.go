package proxy

import (
	"github.com/droverhq/drover/hub/internal/reply"

	"bufio"
	"bytes"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// answerOf writes an answer with fn on a takenWriter and parses what went
// out with net/http's client parser.
func answerOf(t *testing.T, method string, fn func(w http.ResponseWriter)) (*http.Response, string) {
	t.Helper()
	var out bytes.Buffer
	bw := bufio.NewWriter(&out)
	tw := &takenWriter{h: http.Header{}, bw: bw, head: method == http.MethodHead}
	fn(tw)
	if err := tw.finish(); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(&out)
	resp, err := http.ReadResponse(br, &http.Request{Method: method})
	if err != nil {
		t.Fatalf("%q: %v", out.String(), err)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if br.Buffered() != 0 {
		t.Fatalf("%d bytes after the answer", br.Buffered())
	}
	return resp, string(b)
}

func TestTakenWriterFrames(t *testing.T) {
	resp, body := answerOf(t, http.MethodGet, func(w http.ResponseWriter) {
		w.Header().Set("Content-Length", "5")
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, "hello")
	})
	if resp.StatusCode != 200 || body != "hello" || len(resp.TransferEncoding) != 0 || resp.Header.Get("Date") == "" {
		t.Fatalf("by length: %d %q %v %v", resp.StatusCode, body, resp.TransferEncoding, resp.Header)
	}

	// A hub error (unavailable) has no length: chunked.
	resp, body = answerOf(t, http.MethodGet, func(w http.ResponseWriter) {
		reply.JSON(w, http.StatusBadGateway, map[string]string{"code": "unavailable"})
	})
	var e map[string]string
	if resp.StatusCode != http.StatusBadGateway || resp.TransferEncoding[0] != "chunked" ||
		json.Unmarshal([]byte(body), &e) != nil || e["code"] != "unavailable" {
		t.Fatalf("without a length: %d %v %q", resp.StatusCode, resp.TransferEncoding, body)
	}

	for _, c := range []struct {
		method string
		code   int
	}{{http.MethodHead, http.StatusOK}, {http.MethodGet, http.StatusNoContent}, {http.MethodGet, http.StatusNotModified}} {
		resp, body = answerOf(t, c.method, func(w http.ResponseWriter) { w.WriteHeader(c.code) })
		if resp.StatusCode != c.code || body != "" || len(resp.TransferEncoding) != 0 {
			t.Fatalf("%s %d: %q %v", c.method, c.code, body, resp.TransferEncoding)
		}
	}
}

func TestReadHead(t *testing.T) {
	long := strings.Repeat("a", 6000) // over the reader's 4 KiB buffer
	for _, c := range []struct {
		name, in, head string
		err            error
	}{
		{"plain", "GET / HTTP/1.1\r\nHost: a\r\n\r\nNEXT", "GET / HTTP/1.1\r\nHost: a\r\n\r\n", nil},
		{"bare LF", "GET / HTTP/1.1\nHost: a\n\nNEXT", "GET / HTTP/1.1\nHost: a\n\n", nil},
		{"a long line", "GET /" + long + " HTTP/1.1\r\n\r\n", "GET /" + long + " HTTP/1.1\r\n\r\n", nil},
		{"cut short", "GET / HTTP/1.1\r\nHost: a\r\n", "GET / HTTP/1.1\r\nHost: a\r\n", io.EOF},
		{"too long", "GET / HTTP/1.1\r\nX: " + strings.Repeat(long, 3) + "\r\n\r\n", "", errHeadTooLong},
	} {
		head, err := readHead(bufio.NewReaderSize(strings.NewReader(c.in), 4<<10))
		if !errors.Is(err, c.err) {
			t.Errorf("%s: error %v, want %v", c.name, err, c.err)
		}
		if c.err == errHeadTooLong {
			if len(head) <= maxTakenHead || !strings.HasPrefix(c.in, string(head)) {
				t.Errorf("%s: returned %d bytes, not what it read", c.name, len(head))
			}
			continue
		}
		if string(head) != c.head {
			t.Errorf("%s: head %q, want %q", c.name, head, c.head)
		}
	}
}

func TestPlainHead(t *testing.T) {
	for _, c := range []struct {
		head  string
		plain bool
	}{
		{"GET / HTTP/1.1\r\nHost: a.test\r\nAccept: */*\r\n\r\n", true},
		{"GET / HTTP/1.1\r\nhOsT: a.test:443\r\n\r\n", true},
		{"GET / HTTP/1.1\r\nAccept: */*\r\n\r\n", false},                // no Host
		{"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", false},         // two
		{"GET / HTTP/1.1\r\nHost: a b\r\n\r\n", false},                  // invalid Host
		{"GET / HTTP/1.1\r\nHost: a\r\nX y: 1\r\n\r\n", false},          // invalid name
		{"GET / HTTP/1.1\r\nHost: a\r\nX: 1\r\n folded\r\n\r\n", false}, // obs-fold
		{"GET / HTTP/1.1\r\nHost: a\r\nX: a\x00b\r\n\r\n", false},       // invalid value
		{"GET / HTTP/1.1\r\nHost: a\r\nno colon\r\n\r\n", false},        // not a field
	} {
		if got := plainHead([]byte(c.head)); got != c.plain {
			t.Errorf("%q: plain %v, want %v", c.head, got, c.plain)
		}
	}
}

// FuzzTakenHead: whatever arrives, reading and vetting a head neither
// panics nor disagrees with net/http's parser: a head judged plain is one
// net/http parses, with the Host it was vetted for.
func FuzzTakenHead(f *testing.F) {
	for _, s := range []string{
		"GET /v1/models/x/status HTTP/1.1\r\nHost: hub\r\nAuthorization: Bearer t\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a\r\nX: 1\r\n folded\r\n\r\n",
		"GET http://other/ HTTP/1.1\r\nHost: a\r\n\r\n",
		"\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n",
		"GET / HTTP/1.1\nHost:a\n\n",
		"GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabc",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		head, err := readHead(bufio.NewReaderSize(bytes.NewReader(in), 4<<10))
		if err != nil || !plainHead(head) {
			return
		}
		req, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(head)))
		if err != nil {
			return // the taken loop hands it back
		}
		var host string
		for _, l := range strings.Split(string(head), "\n")[1:] {
			if k, v, _ := strings.Cut(strings.TrimSuffix(l, "\r"), ":"); strings.EqualFold(k, "Host") {
				host = strings.Trim(v, " \t")
			}
		}
		if req.URL.Host == "" && req.Host != host {
			t.Fatalf("vetted Host %q, net/http parsed %q", host, req.Host)
		}
	})
}

// TestServeTakenReadRelays: on a taken connection a plain answer goes to
// the caller as the controller sent it, byte for byte; one that could act
// in a browser is made safe; one without a Date gets the hub's; one that
// breaks off sends nothing and ends the connection.
func TestServeTakenReadRelays(t *testing.T) {
	var raw atomic.Value // what the controller sent last
	ctrl := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer c.Close()
		answer := map[string]string{
			"/plain":   "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Content-Type-Options: nosniff\r\nDate: Sun, 22 Nov 2026 07:00:00 GMT\r\nContent-Length: 8\r\n\r\n{\"a\":1}\n",
			"/page":    "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nSet-Cookie: __Host-drover_session=x; Path=/\r\nDate: Sun, 22 Nov 2026 07:00:00 GMT\r\nContent-Length: 8\r\n\r\n<script>",
			"/no-date": "HTTP/1.1 404 Not Found\r\nContent-Length: 2\r\n\r\n{}",
			"/cut":     "HTTP/1.1 200 OK\r\nDate: Sun, 22 Nov 2026 07:00:00 GMT\r\nContent-Length: 100\r\n\r\nshort",
		}[r.URL.Path]
		raw.Store(answer)
		io.WriteString(c, answer)
	}))
	defer ctrl.Close()
	sc, err := newClient(string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ctrl.Certificate().Raw})),
		[]string{strings.TrimPrefix(ctrl.URL, "https://")}, DefaultTimeouts)
	if err != nil {
		t.Fatal(err)
	}
	defer sc.pool.closeAll()
	read := func(path string) (string, bool) {
		var out bytes.Buffer
		tw := &takenWriter{h: http.Header{}, bw: bufio.NewWriter(&out)}
		req, _ := http.NewRequest(http.MethodGet, path, nil)
		whole := (&Relay{}).serveTakenRead(tw, req, Route{Client: sc, Token: "t"})
		if whole {
			tw.finish()
		}
		return out.String(), whole
	}
	if got, whole := read("/plain"); !whole || got != raw.Load().(string) {
		t.Fatalf("plain answer: sent %q (whole %v), the controller sent %q", got, whole, raw.Load())
	}
	// An answer that could act in a browser on the hub's origin is not
	// relayed as it is: copied, without its cookie, as bytes nobody runs.
	got, whole := read("/page")
	resp, err := http.ReadResponse(bufio.NewReader(strings.NewReader(got)), nil)
	if !whole || err != nil || resp.Header.Get("Content-Type") != "application/octet-stream" ||
		resp.Header.Get("X-Content-Type-Options") != "nosniff" || len(resp.Cookies()) != 0 {
		t.Fatalf("an HTML answer with a cookie: %q (whole %v)", got, whole)
	}
	got, whole = read("/no-date")
	resp, err = http.ReadResponse(bufio.NewReader(strings.NewReader(got)), nil)
	if !whole || err != nil || resp.StatusCode != http.StatusNotFound || resp.Header.Get("Date") == "" {
		t.Fatalf("answer without a Date: %q (whole %v)", got, whole)
	}
	if got, whole := read("/cut"); whole || got != "" {
		t.Fatalf("answer cut short: sent %q, whole %v", got, whole)
	}
}
