package proxy

import (
	"github.com/droverhq/drover/hub/internal/authn"

	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/http/httpguts"

	"github.com/droverhq/drover/internal/corkconn"
)

// A client that polls a model (a dashboard, a script, `status` in a loop)
// sends remembered reads one after the other on one keep-alive
// connection. After serving one (ServeHTTP), the hub takes the HTTP/1.1
// connection from net/http (Hijack) and serves the next remembered reads
// on it itself, without net/http's per-request machinery: a request
// context, a background reader goroutine started and stopped around every
// request, and three layers of response writers: about a quarter of what
// the hub added to a proxied read at p50 (bench/README.md).
//
// Anything else goes back to net/http with the connection: a request that
// is not a remembered read for its credential (a write, a websocket, a
// route the memo no longer holds, a revoked one), or one that is not as
// plain as a read must be (a body, Expect, a Host net/http would refuse,
// a head over maxTakenHead). Its bytes are handed over unread, through a
// listener the hub's HTTP server also serves (handback), so it is parsed,
// authenticated, authorized, audited and answered (errors included) like
// any request.

// maxTakenHead bounds a request head read on a taken connection; a larger
// one goes back to net/http, which applies its own limit.
const maxTakenHead = 16 << 10

// takenHeaderTimeout is how long a request head may take to arrive once
// its first byte has (the hub server's ReadHeaderTimeout).
const takenHeaderTimeout = 10 * time.Second

// takeOver hands the connection of r, a remembered read just answered
// whole (by length) on an HTTP/1.1 keep-alive connection, to serveTaken.
// It returns at once when the connection cannot be taken.
func (s *Relay) takeOver(w http.ResponseWriter, r *http.Request) {
	if !s.handback.serving.Load() || r.ProtoMajor != 1 || r.ProtoMinor != 1 || r.Close ||
		w.Header().Get("Content-Length") == "" {
		return
	}
	cc := corkconn.FromContext(r.Context(), 1)
	rc := http.NewResponseController(w)
	if rc.Flush() != nil {
		return
	}
	conn, brw, err := rc.Hijack()
	if err != nil {
		return
	}
	s.takeovers.Add(1)
	s.serveTaken(conn, brw.Reader, cc)
}

// serveTaken serves remembered reads on conn until the connection ends,
// shutdown closes it, or a request goes back to net/http.
func (s *Relay) serveTaken(conn net.Conn, br *bufio.Reader, cc *corkconn.Conn) {
	t, ok := s.taken.add(conn)
	if !ok { // shutting down
		conn.Close()
		return
	}
	defer s.taken.remove(t)
	// Nothing cancels a request here (net/http's would be on a read
	// error of its background reader, which is not running): the
	// controller's answer is waited for, as on any keep-alive connection.
	ctx := context.Background()
	if cc != nil {
		ctx = corkconn.NewContext(ctx, cc)
	}
	bw := bufio.NewWriterSize(conn, 4<<10)
	last := parsedHead{ctx: ctx}
	for {
		// Idle until the next request, as long as net/http would wait.
		conn.SetReadDeadline(time.Now().Add(s.cfg.IdleTimeout))
		if _, err := br.Peek(1); err != nil || !s.taken.busy(t) {
			conn.Close() // the caller left or was idle too long, or the hub shuts down
			return
		}
		head, req := last.again(br)
		ok := req != nil
		if !ok {
			head, ok = bufferedHead(br)
		}
		var err error
		if !ok {
			conn.SetReadDeadline(time.Now().Add(takenHeaderTimeout))
			head, err = readHead(br)
			conn.SetReadDeadline(time.Time{})
			if err != nil && !errors.Is(err, errHeadTooLong) {
				conn.Close()
				return
			}
		}
		if req == nil && err == nil {
			req = last.parse(head)
		}
		pr, ok := s.takenRoute(req)
		if !ok {
			s.handbacks.Add(1)
			s.handback.give(conn, br, head)
			return
		}
		tw := &takenWriter{h: http.Header{}, bw: bw, head: req.Method == http.MethodHead}
		if !s.serveTakenRead(tw, req, pr) || tw.finish() != nil || req.Close {
			conn.Close()
			return
		}
		s.cfg.Count(modelCallRoute, tw.status)
		s.taken.idle(t)
	}
}

// plainHead reports whether a request head passes what net/http's server
// checks beyond its parser (which drops the Host lines): exactly one valid
// Host, and valid header names and values.
func plainHead(head []byte) bool {
	hosts := 0
	lines := strings.Split(string(head), "\n")
	for _, l := range lines[1:] {
		l = strings.TrimSuffix(l, "\r")
		if l == "" {
			continue
		}
		k, v, ok := strings.Cut(l, ":")
		v = strings.Trim(v, " \t")
		if !ok || !httpguts.ValidHeaderFieldName(k) || !httpguts.ValidHeaderFieldValue(v) {
			return false
		}
		if strings.EqualFold(k, "Host") {
			if hosts++; !httpguts.ValidHostHeader(v) {
				return false
			}
		}
	}
	return hosts == 1
}

// takenRoute returns the remembered route of req, a request read on a
// taken connection, when it is a remembered read as plain as a read must
// be: HTTP/1.1, no body and no Expect.
func (s *Relay) takenRoute(req *http.Request) (Route, bool) {
	if req == nil || req.ProtoMajor != 1 || req.ProtoMinor != 1 || req.ContentLength != 0 ||
		len(req.TransferEncoding) > 0 || len(req.Header["Expect"]) > 0 {
		return Route{}, false
	}
	id, ok := Memoizable(req)
	if !ok {
		return Route{}, false
	}
	raw, cookie := authn.Credential(req)
	if raw == "" {
		return Route{}, false
	}
	pr, ok := s.proxyRoutes.Get(proxyRouteKey{raw: raw, cookie: cookie, model: id})
	return pr.Route, ok
}

// serveTakenRead forwards req and reports whether its answer went out
// whole: false when the controller's answer broke off (copyAnswer aborts),
// and the connection must end. A plain answer that fits a proxy buffer is
// relayed as it came (relayAnswer); any other is copied as it comes.
func (s *Relay) serveTakenRead(tw *takenWriter, req *http.Request, pr Route) (whole bool) {
	defer func() {
		if v := recover(); v != nil && v != http.ErrAbortHandler {
			panic(v)
		}
	}()
	if key, ok := s.statusCacheKey(req, pr.Controller); ok {
		if err := s.forwardStatus(tw, req, key, pr.Client, pr.Token); err != nil {
			s.unavailable(tw, req, pr.Controller, err)
		}
		return true
	}
	resp, c, stop, err := pr.Client.roundTripDirect(req, pr.Token, "")
	if err != nil {
		s.unavailable(tw, req, pr.Controller, err)
		return true
	}
	if resp.StatusCode == http.StatusUnauthorized {
		s.controllerRefused(tw, pr.Controller, resp, c, stop)
		return true
	}
	// A proxy must add a Date the answer lacks (RFC 9110, 6.6.1): such an
	// answer is copied (takenWriter.WriteHeader adds it).
	if fb, ok := resp.Body.(*fixedBody); ok && fb.head != "" && len(resp.Header["Date"]) > 0 &&
		int64(len(fb.head))+resp.ContentLength <= proxyBufferSize {
		return relayAnswer(tw, req, resp, fb, c, stop, pr.Client)
	}
	copyAnswer(tw, req, resp, c, stop, pr.Client)
	return true
}

// relayAnswer sends a plain answer (plainAnswer checked its head: nothing
// in it is the connection's, nothing in it is invalid) to the caller as
// the controller sent it, head and body in one write, once all of it has
// arrived. It reports false, having sent nothing, when the answer broke
// off: the caller's connection must end, as copyAnswer's abort ends it.
func relayAnswer(tw *takenWriter, req *http.Request, resp *http.Response, fb *fixedBody, c *spokeConn, stop func() bool, sc *Client) bool {
	buf := proxyBuffers.Get()
	defer proxyBuffers.Put(buf)
	b := append(buf[:0], fb.head...)
	n := len(b)
	b = b[:n+int(resp.ContentLength)]
	_, err := io.ReadFull(fb, b[n:])
	if !stop() || err != nil {
		c.conn.Close()
		return false
	}
	sc.pool.put(c)
	tw.status = resp.StatusCode
	defer corkconn.Hold(corkconn.FromContext(req.Context(), 1), tw, int64(len(b)))()
	_, err = tw.bw.Write(b)
	return err == nil
}

var errHeadTooLong = errors.New("request head too long")

// parsedHead remembers the last request head parsed on a taken
// connection: a poller sends the same bytes again and again, and the same
// bytes parse the same.
type parsedHead struct {
	ctx  context.Context // the connection's, which its requests carry
	head []byte
	req  *http.Request
	rd   *bufio.Reader
}

// again consumes and returns the last head and its request when br starts
// with the same bytes (a head ends at its first blank line, so what
// follows does not change where it ends); otherwise nil and nothing read.
func (p *parsedHead) again(br *bufio.Reader) ([]byte, *http.Request) {
	if p.req == nil || br.Buffered() < len(p.head) {
		return nil, nil
	}
	if b, _ := br.Peek(len(p.head)); !bytes.Equal(b, p.head) {
		return nil, nil
	}
	br.Discard(len(p.head))
	return p.head, p.req
}

// parse returns the request head parses to, nil when net/http's server
// would not take it.
func (p *parsedHead) parse(head []byte) *http.Request {
	if p.req != nil && bytes.Equal(head, p.head) {
		return p.req
	}
	p.head, p.req = nil, nil
	if !plainHead(head) {
		return nil
	}
	if p.rd == nil {
		p.rd = bufio.NewReaderSize(nil, 4<<10)
	}
	p.rd.Reset(bytes.NewReader(head))
	req, err := http.ReadRequest(p.rd)
	if err != nil {
		return nil
	}
	req = req.WithContext(p.ctx)
	p.head, p.req = head, req
	return req
}

// readHead reads a request head, through its blank line, from br. It
// returns errHeadTooLong, with what it read, past maxTakenHead.
func readHead(br *bufio.Reader) ([]byte, error) {
	var head []byte
	for {
		line, err := br.ReadSlice('\n')
		head = append(head, line...)
		switch {
		case len(head) > maxTakenHead:
			return head, errHeadTooLong
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err != nil:
			return head, err
		}
		if (string(line) == "\r\n" || string(line) == "\n") && len(head) > len(line) {
			return head, nil
		}
	}
}

// takenWriter is the http.ResponseWriter of a request served on a taken
// connection: an HTTP/1.1 answer, framed by its Content-Length or else
// chunked.
type takenWriter struct {
	h       http.Header
	bw      *bufio.Writer
	head    bool // the request was HEAD: no body
	status  int
	chunked bool
}

func (t *takenWriter) Header() http.Header { return t.h }

func (t *takenWriter) WriteHeader(code int) {
	if t.status != 0 {
		return
	}
	t.status = code
	if t.h.Get("Date") == "" {
		t.h.Set("Date", time.Now().UTC().Format(http.TimeFormat))
	}
	if t.h.Get("Content-Length") == "" && !t.head && bodyAllowed(code) {
		t.chunked = true
		t.h.Set("Transfer-Encoding", "chunked")
	}
	t.bw.WriteString("HTTP/1.1 ")
	t.bw.WriteString(strconv.Itoa(code))
	t.bw.WriteByte(' ')
	t.bw.WriteString(http.StatusText(code))
	t.bw.WriteString("\r\n")
	writeHeader(t.bw, t.h)
	t.bw.WriteString("\r\n")
}

func (t *takenWriter) Write(p []byte) (int, error) {
	if t.status == 0 {
		t.WriteHeader(http.StatusOK)
	}
	if t.head || len(p) == 0 {
		return len(p), nil
	}
	if t.chunked {
		return httputil.NewChunkedWriter(t.bw).Write(p)
	}
	return t.bw.Write(p)
}

// FlushError sends what was written: http.ResponseController's Flush,
// with which the proxy sends a streamed answer as it comes and
// corkconn.Hold ends a held one.
func (t *takenWriter) FlushError() error {
	if t.status == 0 {
		t.WriteHeader(http.StatusOK)
	}
	return t.bw.Flush()
}

// finish ends the answer and sends it.
func (t *takenWriter) finish() error {
	if t.status == 0 {
		t.WriteHeader(http.StatusOK)
	}
	if t.chunked {
		t.bw.WriteString("0\r\n\r\n")
	}
	return t.bw.Flush()
}

// bodyAllowed reports whether an answer with status code may carry a body.
func bodyAllowed(code int) bool {
	return code >= 200 && code != http.StatusNoContent && code != http.StatusNotModified
}

// takenConns tracks the taken connections, for shutdown: net/http no
// longer does once they are hijacked.
type takenConns struct {
	mu      sync.Mutex
	conns   map[*takenConn]struct{}
	closing bool
	drained chan struct{} // closed when closing and no request is served
}

type takenConn struct {
	conn net.Conn
	busy bool // serving a request
}

func (tc *takenConns) add(c net.Conn) (*takenConn, bool) {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	if tc.closing {
		return nil, false
	}
	if tc.conns == nil {
		tc.conns = map[*takenConn]struct{}{}
	}
	t := &takenConn{conn: c}
	tc.conns[t] = struct{}{}
	return t, true
}

func (tc *takenConns) remove(t *takenConn) {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	delete(tc.conns, t)
	tc.drainedLocked()
}

// busy marks t serving a request, unless the hub shuts down.
func (tc *takenConns) busy(t *takenConn) bool {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	t.busy = !tc.closing
	return t.busy
}

// idle marks t waiting for its next request; shutdown closes it then.
func (tc *takenConns) idle(t *takenConn) {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	t.busy = false
	if tc.closing {
		t.conn.Close()
		tc.drainedLocked()
	}
}

func (tc *takenConns) drainedLocked() {
	if !tc.closing {
		return
	}
	for t := range tc.conns {
		if t.busy {
			return
		}
	}
	select {
	case <-tc.drained:
	default:
		close(tc.drained)
	}
}

// shutdown closes the idle taken connections and waits, until ctx ends,
// for the busy ones to answer; then it closes them all.
func (tc *takenConns) shutdown(ctx context.Context) {
	tc.mu.Lock()
	tc.closing = true
	tc.drained = make(chan struct{})
	for t := range tc.conns {
		if !t.busy {
			t.conn.Close()
		}
	}
	tc.drainedLocked()
	drained := tc.drained
	tc.mu.Unlock()
	select {
	case <-drained:
	case <-ctx.Done():
	}
	tc.mu.Lock()
	defer tc.mu.Unlock()
	for t := range tc.conns {
		t.conn.Close()
	}
}
