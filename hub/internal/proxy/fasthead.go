package proxy

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/net/http/httpguts"
)

// The proxy's reads of heads that arrived whole. A poller's request and a
// controller's answer each come in one piece, in the same plain shape
// every time; these read that shape without net/http's general parsers
// (about a third of the hub's CPU on a proxied read, bench/README.md), and
// leave anything else to them, unread.

var crlfcrlf = []byte("\r\n\r\n")

// headEnd returns the length of the head at the start of b, through its
// first blank line, when all of it is in b with every line ended by CRLF;
// otherwise 0. It ends where readHead would.
func headEnd(b []byte) int {
	i := bytes.Index(b, crlfcrlf)
	if i <= 0 || bytes.Count(b[:i], []byte("\n")) != bytes.Count(b[:i], []byte("\r\n")) {
		return 0
	}
	return i + 4
}

// bufferedHead returns the request head at the start of what br holds,
// consumed, when all of it has arrived (headEnd); otherwise readHead reads
// it.
func bufferedHead(br *bufio.Reader) ([]byte, bool) {
	b, _ := br.Peek(min(br.Buffered(), maxTakenHead))
	n := headEnd(b)
	if n == 0 {
		return nil, false
	}
	head := bytes.Clone(b[:n])
	br.Discard(n)
	return head, true
}

// readAnswer reads the head of a controller's answer to req from br: the
// plain shape (plainAnswer) when it has arrived whole, else through
// http.ReadResponse.
func readAnswer(br *bufio.Reader, req *http.Request) (*http.Response, error) {
	if _, err := br.Peek(1); err == nil {
		b, _ := br.Peek(min(br.Buffered(), maxTakenHead))
		if n := headEnd(b); n > 0 {
			if resp, head := plainAnswer(b[:n], req); resp != nil {
				br.Discard(n)
				resp.Body = &fixedBody{r: br, n: resp.ContentLength, head: head}
				return resp, nil
			}
		}
	}
	return http.ReadResponse(br, req)
}

// plainAnswer parses head, an answer's head through its blank line, when
// it has the plain shape: HTTP/1.1, a final status with a body, canonical
// valid header names with valid values, one Content-Length, no
// connection-level header, and only headers the hub relays as they are
// (answersafe.go: one safe Content-Type, nosniff). Otherwise it returns nil. The Body is left to
// the caller. It also returns the head as a string (names and values are
// parts of it), fit to be sent on as it is.
func plainAnswer(head []byte, req *http.Request) (*http.Response, string) {
	if req.Method == http.MethodHead {
		return nil, ""
	}
	raw := string(head) // one copy: names and values share it
	s := raw[:len(raw)-4]
	line, rest, _ := strings.Cut(s, "\r\n")
	code, ok := strings.CutPrefix(line, "HTTP/1.1 ")
	if !ok || len(code) < 4 || code[3] != ' ' {
		return nil, ""
	}
	status, err := strconv.Atoi(code[:3])
	if err != nil || status < 200 || status > 599 || !bodyAllowed(status) || !validReason(code[4:]) {
		return nil, ""
	}
	n := strings.Count(rest, "\r\n") + 1
	h := make(http.Header, n)
	values := make([]string, 0, n)
	length := int64(-1)
	sniffless := false
	for l := range strings.SplitSeq(rest, "\r\n") {
		k, v, ok := strings.Cut(l, ":")
		v = strings.Trim(v, " \t")
		if !ok || !httpguts.ValidHeaderFieldName(k) || http.CanonicalHeaderKey(k) != k ||
			!httpguts.ValidHeaderFieldValue(v) || slices.Contains(hopHeaders, k) {
			return nil, ""
		}
		// Sent on as it is only when nothing in it could act in a browser
		// (answersafe.go): else it is copied, and made safe on the way.
		switch {
		case !answerHeaders[k], k == "Content-Type" && !safeContentType(v):
			return nil, ""
		case k == "X-Content-Type-Options":
			sniffless = v == "nosniff"
		}
		if k == "Content-Length" {
			if length >= 0 {
				return nil, ""
			}
			if length, err = strconv.ParseInt(v, 10, 64); err != nil || length < 0 || v[0] == '+' {
				return nil, ""
			}
		}
		if prev, dup := h[k]; dup {
			h[k] = append(prev, v)
		} else { // a slice of values, capped so that appending copies
			values = append(values, v)
			h[k] = values[len(values)-1 : len(values) : len(values)]
		}
	}
	if length < 0 || !sniffless || len(h["Content-Type"]) > 1 {
		return nil, ""
	}
	return &http.Response{Status: code, StatusCode: status, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: h, ContentLength: length, Request: req}, raw
}

// validReason reports whether s is a valid reason phrase (RFC 9112, 4:
// tabs, spaces, visible characters and obs-text).
func validReason(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c != '\t' && (c < ' ' || c == 0x7f) {
			return false
		}
	}
	return true
}

// fixedBody reads an answer's body of known length from its connection.
// head is the answer's head, when it is plain (plainAnswer).
type fixedBody struct {
	r    io.Reader
	n    int64
	head string
}

func (b *fixedBody) Read(p []byte) (int, error) {
	if b.n <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > b.n {
		p = p[:b.n]
	}
	k, err := b.r.Read(p)
	b.n -= int64(k)
	switch {
	case b.n == 0:
		return k, io.EOF
	case err == io.EOF:
		return k, io.ErrUnexpectedEOF
	}
	return k, err
}

func (b *fixedBody) Close() error { return nil }

var newlineToSpace = strings.NewReplacer("\n", " ", "\r", " ")

// writeHeader writes h as header lines, in no particular order (net/http
// sorts them: allocations no client needs), values trimmed and any line
// break in one made a space, as net/http does.
func writeHeader(bw *bufio.Writer, h http.Header) {
	for k, vs := range h {
		for _, v := range vs {
			if strings.ContainsAny(v, "\r\n") {
				v = newlineToSpace.Replace(v)
			}
			bw.WriteString(k)
			bw.WriteString(": ")
			bw.WriteString(strings.Trim(v, " \t\r\n"))
			bw.WriteString("\r\n")
		}
	}
}
