package proxy

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

const plainAnswerText = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Type: application/json\r\nX-Content-Type-Options: nosniff\r\nDate: Sun, 22 Nov 2026 06:00:00 GMT\r\n\r\nhello"

func TestBufferedHead(t *testing.T) {
	for _, c := range []struct {
		name, in, head string
	}{
		{"whole", "GET / HTTP/1.1\r\nHost: a\r\n\r\nNEXT", "GET / HTTP/1.1\r\nHost: a\r\n\r\n"},
		{"not all here", "GET / HTTP/1.1\r\nHost: a\r\n", ""},
		// A bare-LF blank line ends the head earlier for readHead (and
		// net/http): the rest is another request, never part of this head.
		{"bare LF", "GET / HTTP/1.1\nHost: a\n\nGET /b HTTP/1.1\r\nHost: a\r\n\r\n", ""},
		{"LF then CRLF", "GET / HTTP/1.1\r\nHost: a\n\r\nX: y\r\n\r\n", ""},
		{"leading blank line", "\r\n\r\nGET / HTTP/1.1\r\n\r\n", ""},
	} {
		br := bufio.NewReader(strings.NewReader(c.in))
		br.Peek(1)
		head, ok := bufferedHead(br)
		if string(head) != c.head || ok != (c.head != "") {
			t.Errorf("%s: %q %v, want %q", c.name, head, ok, c.head)
		}
		if rest, _ := io.ReadAll(br); string(rest) != strings.TrimPrefix(c.in, c.head) {
			t.Errorf("%s: left %q", c.name, rest)
		}
	}
}

// FuzzBufferedHead: a head taken whole from the buffer is the one readHead
// reads from the same bytes.
func FuzzBufferedHead(f *testing.F) {
	for _, s := range []string{"GET / HTTP/1.1\r\nHost: a\r\n\r\nX", "GET / HTTP/1.1\nHost: a\n\nGET / HTTP/1.1\r\n\r\n",
		"\r\n\r\n", "A\r\n\r\n", "A\r\nB\n\r\n\r\n", "A\r\r\n\r\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		br := bufio.NewReaderSize(bytes.NewReader(in), maxTakenHead+1)
		br.Peek(1)
		head, ok := bufferedHead(br)
		if !ok {
			return
		}
		want, err := readHead(bufio.NewReaderSize(bytes.NewReader(in), 4<<10))
		if err != nil || !bytes.Equal(head, want) {
			t.Fatalf("buffered %q, readHead %q (%v)", head, want, err)
		}
	})
}

func TestParsedHeadRemembers(t *testing.T) {
	p := parsedHead{ctx: context.Background()}
	a := []byte("GET /v1/models/m/status HTTP/1.1\r\nHost: hub\r\nAuthorization: Bearer t\r\n\r\n")
	r1 := p.parse(bytes.Clone(a))
	if r1 == nil || r1.URL.Path != "/v1/models/m/status" || r1.Header.Get("Authorization") != "Bearer t" {
		t.Fatalf("parsed %+v", r1)
	}
	if r2 := p.parse(bytes.Clone(a)); r2 != r1 {
		t.Fatal("the same bytes were parsed again")
	}
	if r := p.parse([]byte("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n")); r != nil {
		t.Fatal("a head net/http's server refuses was parsed")
	}
	if r := p.parse(bytes.Clone(a)); r == nil || r == r1 {
		t.Fatalf("after another head: %v (the first request again: %v)", r, r == r1)
	}
	if r := p.parse([]byte("GET /other HTTP/1.1\r\nHost: hub\r\n\r\n")); r == nil || r.URL.Path != "/other" {
		t.Fatalf("another head: %+v", r)
	}
}

func TestReadAnswer(t *testing.T) {
	get := &http.Request{Method: http.MethodGet}
	for _, c := range []struct {
		name, in string
		req      *http.Request
		plain    bool
	}{
		{"plain", plainAnswerText, get, true},
		{"HEAD", plainAnswerText, &http.Request{Method: http.MethodHead}, false},
		{"no content", "HTTP/1.1 204 No Content\r\nDate: x\r\n\r\n", get, false},
		{"informational", "HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n" + plainAnswerText, get, false},
		{"HTTP/1.0", strings.Replace(plainAnswerText, "HTTP/1.1", "HTTP/1.0", 1), get, false},
		{"chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", get, false},
		{"closing", strings.Replace(plainAnswerText, "Date:", "Connection: close\r\nDate:", 1), get, false},
		{"two lengths", strings.Replace(plainAnswerText, "Date:", "Content-Length: 5\r\nDate:", 1), get, false},
		{"no length", "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nhello", get, false},
		{"lower-case name", strings.Replace(plainAnswerText, "Content-Type", "content-type", 1), get, false},
		{"folded", strings.Replace(plainAnswerText, "Date:", "X-A: 1\r\n 2\r\nDate:", 1), get, false},
		{"repeated", strings.Replace(plainAnswerText, "Date:", "X-Drover-Index: 1\r\nX-Drover-Index: 2\r\nDate:", 1), get, true},
		{"a header not relayed", strings.Replace(plainAnswerText, "Date:", "Set-Cookie: a=b\r\nDate:", 1), get, false},
		{"a page", strings.Replace(plainAnswerText, "application/json", "text/html", 1), get, false},
		{"sniffable", strings.Replace(plainAnswerText, "X-Content-Type-Options: nosniff\r\n", "", 1), get, false},
		{"two types", strings.Replace(plainAnswerText, "Date:", "Content-Type: text/plain\r\nDate:", 1), get, false},
		{"control in the reason", strings.Replace(plainAnswerText, "200 OK", "200 O\x01K", 1), get, false},
	} {
		var plain *http.Response
		if n := headEnd([]byte(c.in)); n > 0 {
			plain, _ = plainAnswer([]byte(c.in[:n]), c.req)
		}
		if (plain != nil) != c.plain {
			t.Errorf("%s: read as plain %v, want %v", c.name, plain != nil, c.plain)
		}
		br := bufio.NewReader(strings.NewReader(c.in + "NEXT"))
		resp, err := readAnswer(br, c.req)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		want, err := http.ReadResponse(bufio.NewReader(strings.NewReader(c.in+"NEXT")), c.req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != want.StatusCode || resp.ContentLength != want.ContentLength || !reflect.DeepEqual(resp.Header, want.Header) {
			t.Errorf("%s: %d %d %v, net/http %d %d %v", c.name, resp.StatusCode, resp.ContentLength, resp.Header,
				want.StatusCode, want.ContentLength, want.Header)
		}
		if c.plain {
			body, err := io.ReadAll(resp.Body)
			rest, _ := io.ReadAll(br)
			if err != nil || string(body) != "hello" || string(rest) != "NEXT" {
				t.Errorf("%s: body %q (%v), then %q", c.name, body, err, rest)
			}
		}
	}
}

// FuzzPlainAnswer: an answer read as plain is read as net/http's client
// reads it: the same status, header, length and body.
func FuzzPlainAnswer(f *testing.F) {
	for _, s := range []string{plainAnswerText, "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort", "HTTP/1.1 200 OK\r\nContent-Length: +5\r\n\r\nhello",
		"HTTP/1.1 200 OK\r\nContent-Length: 05\r\nX: \t a b \t\r\n\r\nhello", "HTTP/1.1 999 X\r\nContent-Length: 0\r\n\r\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		n := headEnd(in)
		if n == 0 || n > maxTakenHead {
			return
		}
		get := &http.Request{Method: http.MethodGet}
		resp, head := plainAnswer(in[:n], get)
		if resp == nil {
			return
		}
		if head != string(in[:n]) {
			t.Fatalf("head %q, read %q", head, in[:n])
		}
		want, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(in)), get)
		if err != nil {
			t.Fatalf("plain, but net/http refuses it: %v", err)
		}
		if resp.StatusCode != want.StatusCode || resp.ContentLength != want.ContentLength || !reflect.DeepEqual(resp.Header, want.Header) {
			t.Fatalf("%d %d %v, net/http %d %d %v", resp.StatusCode, resp.ContentLength, resp.Header,
				want.StatusCode, want.ContentLength, want.Header)
		}
		body, err := io.ReadAll(&fixedBody{r: bytes.NewReader(in[n:]), n: resp.ContentLength})
		wantBody, wantErr := io.ReadAll(want.Body)
		if !bytes.Equal(body, wantBody) || (err == nil) != (wantErr == nil) {
			t.Fatalf("body %q (%v), net/http %q (%v)", body, err, wantBody, wantErr)
		}
	})
}

func TestFixedBody(t *testing.T) {
	r := strings.NewReader("helloNEXT")
	b, err := io.ReadAll(&fixedBody{r: r, n: 5})
	if err != nil || string(b) != "hello" || r.Len() != 4 {
		t.Fatalf("%q %v, %d left", b, err, r.Len())
	}
	if b, err := io.ReadAll(&fixedBody{r: strings.NewReader("hel"), n: 5}); !errors.Is(err, io.ErrUnexpectedEOF) || string(b) != "hel" {
		t.Fatalf("cut short: %q %v", b, err)
	}
}

// A streamed answer on a taken connection goes out as it is flushed, and a
// held one in one piece (corkconn.Hold flushes through the same call).
func TestTakenWriterFlushes(t *testing.T) {
	var out bytes.Buffer
	tw := &takenWriter{h: http.Header{}, bw: bufio.NewWriter(&out)}
	io.WriteString(tw, "first")
	if err := http.NewResponseController(tw).Flush(); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(out.String(), "5\r\nfirst\r\n") {
		t.Fatalf("after a flush: %q", out.String())
	}
}

// Header lines go out as net/http writes them, in any order.
func TestWriteHeader(t *testing.T) {
	for _, v := range [][]string{{"plain"}, {" a\r\nb ", "c"}, {"\ta\n"}, {""}} {
		h := http.Header{"X-Multi": v}
		var got, want bytes.Buffer
		bw := bufio.NewWriter(&got)
		writeHeader(bw, h)
		bw.Flush()
		h.Write(&want)
		if got.String() != want.String() {
			t.Errorf("%q: wrote %q, net/http %q", v, got.String(), want.String())
		}
	}
}

func TestParsedHeadAgain(t *testing.T) {
	p := parsedHead{ctx: context.Background()}
	a := "GET /v1/models/m/status HTTP/1.1\r\nHost: hub\r\n\r\n"
	br := bufio.NewReader(strings.NewReader(a + a + "GET /other HTTP/1.1\r\nHost: hub\r\n\r\n"))
	br.Peek(1)
	if h, r := p.again(br); h != nil || r != nil {
		t.Fatal("nothing parsed yet, but a head came again")
	}
	head, _ := bufferedHead(br)
	first := p.parse(head)
	if h, r := p.again(br); string(h) != a || r != first {
		t.Fatalf("the same head again: %q %v", h, r == first)
	}
	if h, r := p.again(br); h != nil || r != nil {
		t.Fatalf("another head taken for the last: %q", h)
	}
	if rest, _ := io.ReadAll(br); !strings.HasPrefix(string(rest), "GET /other ") {
		t.Fatalf("left %q", rest)
	}
}

// A poller's request is written to the controller as writeRequest writes
// it, built once while the request, the controller and the token stay the
// same.
func TestSpokeConnWritesAgain(t *testing.T) {
	var out bytes.Buffer
	c := &spokeConn{bw: bufio.NewWriter(&out)}
	p := parsedHead{ctx: context.Background()}
	r := p.parse([]byte("GET /v1/models/m/status HTTP/1.1\r\nHost: hub\r\nAuthorization: Bearer caller\r\nAccept: */*\r\n\r\n"))
	var want bytes.Buffer
	bw := bufio.NewWriter(&want)
	if err := writeRequest(bw, r, "ctrl:1", "t1", ""); err != nil {
		t.Fatal(err)
	}
	for range 3 { // directly, then built, then as built
		out.Reset()
		if err := c.write(r, "ctrl:1", "t1", ""); err != nil || out.String() != want.String() {
			t.Fatalf("wrote %q (%v), want %q", out.String(), err, want.String())
		}
	}
	if c.sent.wire == nil {
		t.Fatal("the request sent three times was never kept")
	}
	out.Reset()
	if err := c.write(r, "ctrl:1", "t2", ""); err != nil || !strings.Contains(out.String(), "Bearer t2\r\n") || c.sent.wire != nil {
		t.Fatalf("another token: %q (%v), kept %q", out.String(), err, c.sent.wire)
	}
}
