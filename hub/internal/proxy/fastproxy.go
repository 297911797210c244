package proxy

import (
	"github.com/droverhq/drover/hub/internal/authn"
	"github.com/droverhq/drover/hub/internal/reply"

	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/internal/corkconn"
)

// The proxy's plain requests (every one but websocket upgrades) go over
// connections the forwarding goroutine drives itself: it writes the
// request and reads the answer on the controller connection directly,
// where net/http's Transport hands each request to a writer goroutine and
// each answer back from a reader goroutine. On a loaded host every such
// hand-off is a scheduling delay, and they were most of what the hub added
// to a proxied call.

// spokeConn is one idle keep-alive connection to a controller node.
type spokeConn struct {
	addr string
	conn *tls.Conn
	br   *bufio.Reader
	bw   *bufio.Writer
	sent sentRequest // the last request written, to write again as it is
	// idleSince is when the connection went back to the pool.
	idleSince time.Time
}

// sentRequest is a request as written to a controller: a taken
// connection's poller sends the same request (the same *http.Request,
// parsedHead) with the same token again and again.
type sentRequest struct {
	r               *http.Request
	host, tok, cond string
	wire            []byte
}

// maxIdleSpokeConns bounds the idle connections kept per controller.
const maxIdleSpokeConns = 64

const (
	// maxSpokeConnIdle is how long an idle connection is kept: less than a
	// controller keeps one (spoke.Config.IdleTimeout, 5 minutes), so the hub
	// closes first.
	maxSpokeConnIdle = 90 * time.Second
	// checkIdleAfter is how long a connection must have been idle before
	// it is checked for a close by the controller when taken from the
	// pool. Back-to-back calls skip the check (a system call).
	checkIdleAfter = 100 * time.Millisecond
)

// Timeouts bound the proxy's waits for a controller's answers.
type Timeouts struct {
	// Head bounds the wait for the head of a controller's answer once the
	// request is sent: a controller that accepts connections but answers
	// nothing (hung, stopped, overloaded) is then reported as such in
	// time for the caller to read it (drover gives up after 30 s), instead
	// of holding the call until the caller goes away. A request that asks
	// the controller to wait (a task's ?wait=D) is given D more.
	Head time.Duration
	// Uncancelable bounds the wait for a controller's whole answer to a
	// request nothing can cancel (a read on a taken connection, whose
	// caller's own client gave up long before: drover waits 30 s).
	Uncancelable time.Duration
}

// DefaultTimeouts are the hub's.
var DefaultTimeouts = Timeouts{Head: 20 * time.Second, Uncancelable: 2 * time.Minute}

// head is how long r's answer head may take.
func (t Timeouts) head(r *http.Request) time.Duration {
	if r.Method == http.MethodGet {
		if d, err := time.ParseDuration(r.URL.Query().Get("wait")); err == nil && d > 0 {
			return t.Head + min(d, 10*time.Minute)
		}
	}
	return t.Head
}

// errNoAnswer is the error of a call whose answer's head did not come in
// time (headTimeout).
type errNoAnswer struct {
	after time.Duration
	err   error
}

func (e *errNoAnswer) Error() string { return fmt.Sprintf("no answer within %v: %v", e.after, e.err) }
func (e *errNoAnswer) Unwrap() error { return e.err }

// connPool holds a controller client's idle connections.
type connPool struct {
	mu   sync.Mutex
	idle []*spokeConn
}

// get takes the most recently used idle connection to addr that is still
// open. One the controller closed while it was idle (it restarted, or its
// idle timeout passed) is dropped here, before a request is written to it:
// afterwards, a request other than a GET could not be sent again, as it
// might have reached the controller.
func (p *connPool) get(addr string) *spokeConn {
	for {
		c := p.take(addr)
		if c == nil {
			return nil
		}
		idle := time.Since(c.idleSince)
		if idle < checkIdleAfter || (idle < maxSpokeConnIdle && !closedWhileIdle(c)) {
			return c
		}
		c.conn.Close()
	}
}

func (p *connPool) take(addr string) *spokeConn {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := len(p.idle) - 1; i >= 0; i-- {
		if c := p.idle[i]; c.addr == addr {
			p.idle = append(p.idle[:i], p.idle[i+1:]...)
			return c
		}
	}
	return nil
}

func (p *connPool) put(c *spokeConn) {
	c.idleSince = time.Now()
	c.conn.SetReadDeadline(time.Time{})
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.idle) >= maxIdleSpokeConns {
		c.conn.Close()
		return
	}
	p.idle = append(p.idle, c)
}

// closedWhileIdle reports whether an idle connection can no longer carry a
// request: the controller closed it, or sent something (a TLS alert; an
// idle HTTP/1.1 connection has nothing to read). It peeks at the socket
// without blocking and without consuming anything.
func closedWhileIdle(c *spokeConn) bool {
	if c.br.Buffered() > 0 {
		return true
	}
	sys, ok := c.conn.NetConn().(syscall.Conn)
	if !ok {
		return false
	}
	raw, err := sys.SyscallConn()
	if err != nil {
		return true
	}
	closed := false
	err = raw.Read(func(fd uintptr) bool {
		var b [1]byte
		// EAGAIN: open, with nothing to read. Anything else is data, the
		// end of the stream (0 bytes) or a reset.
		_, _, err := unix.Recvfrom(int(fd), b[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
		closed = err != unix.EAGAIN
		return true
	})
	return closed || err != nil
}

// closeIdle closes the connections idle for longer than maxSpokeConnIdle
// (the janitor's sweep: get drops them too, but only when traffic comes).
func (p *connPool) closeIdle(now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	kept := p.idle[:0]
	for _, c := range p.idle {
		if now.Sub(c.idleSince) > maxSpokeConnIdle {
			c.conn.Close()
			continue
		}
		kept = append(kept, c)
	}
	clear(p.idle[len(kept):])
	p.idle = kept
}

func (p *connPool) closeAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.idle {
		c.conn.Close()
	}
	p.idle = nil
}

// dial opens a connection to addr, TLS pinned to the controller's CA.
func (sc *Client) dial(ctx context.Context, addr string) (*spokeConn, error) {
	d := tls.Dialer{NetDialer: &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second},
		Config: sc.transport.TLSClientConfig.Clone()}
	if h, _, err := net.SplitHostPort(addr); err == nil {
		d.Config.ServerName = h
	}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	return &spokeConn{addr: addr, conn: c.(*tls.Conn), br: bufio.NewReaderSize(c, 16<<10), bw: bufio.NewWriterSize(c, 4<<10)}, nil
}

// hopHeaders are connection-level headers a proxy must not forward.
var hopHeaders = []string{"Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization",
	"Proxy-Connection", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

// hopByHop reports whether header k is connection-level: one of
// hopHeaders, or named by the message's Connection header.
func hopByHop(k string, connection []string) bool {
	if slices.Contains(hopHeaders, k) {
		return true
	}
	for _, v := range connection {
		for f := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(f), k) {
				return true
			}
		}
	}
	return false
}

// notForwarded reports whether the caller's header k stays at the hub:
// hop-by-hop headers (and those its Connection header names), its
// credentials and cookies (the controller gets the hub's token), its
// Origin (the hub checked it) and Expect (the hub's server answered it),
// and the framing the hub writes itself.
func notForwarded(k string, connection []string) bool {
	switch k {
	case "Authorization", "Cookie", "Origin", "Expect", "Content-Length", "Host":
		return true
	}
	return hopByHop(k, connection)
}

// writeRequest writes the caller's request r to a controller at host, with
// tok as its credential, and flushes it. It writes the HTTP/1.1 message
// itself: building an http.Request copied the caller's headers on every
// call. A cond, when set, is sent as If-None-Match: the hub revalidating
// its copy of the answer (statuscache.go).
func writeRequest(bw *bufio.Writer, r *http.Request, host, tok, cond string) error {
	bw.WriteString(r.Method)
	bw.WriteByte(' ')
	bw.WriteString(r.URL.RequestURI())
	bw.WriteString(" HTTP/1.1\r\nHost: ")
	bw.WriteString(host)
	bw.WriteString("\r\nAuthorization: Bearer ")
	bw.WriteString(tok)
	bw.WriteString("\r\n")
	if cond != "" {
		bw.WriteString("If-None-Match: ")
		bw.WriteString(cond)
		bw.WriteString("\r\n")
	}
	connection := r.Header["Connection"]
	for k, vs := range r.Header {
		if notForwarded(k, connection) {
			continue
		}
		for _, v := range vs { // the hub's server checked them: no CR or LF
			bw.WriteString(k)
			bw.WriteString(": ")
			bw.WriteString(v)
			bw.WriteString("\r\n")
		}
	}
	switch {
	case r.ContentLength > 0:
		bw.WriteString("Content-Length: ")
		bw.WriteString(strconv.FormatInt(r.ContentLength, 10))
		bw.WriteString("\r\n\r\n")
		if n, err := io.CopyN(bw, r.Body, r.ContentLength); err != nil {
			return fmt.Errorf("request body: %d of %d bytes: %w", n, r.ContentLength, err)
		}
	case r.ContentLength < 0: // length unknown: the caller sent it chunked
		bw.WriteString("Transfer-Encoding: chunked\r\n\r\n")
		cw := httputil.NewChunkedWriter(bw)
		if _, err := io.Copy(cw, r.Body); err != nil {
			return fmt.Errorf("request body: %w", err)
		}
		if err := cw.Close(); err != nil {
			return err
		}
		bw.WriteString("\r\n")
	case authn.SafeMethod(r.Method) || r.Method == http.MethodDelete:
		bw.WriteString("\r\n")
	default: // an empty body, said so for a method that usually has one
		bw.WriteString("Content-Length: 0\r\n\r\n")
	}
	return bw.Flush()
}

// roundTripDirect sends the caller's request r with tok on an idle
// connection to the preferred address, or a new one, failing over between
// the addresses when a dial fails (sc.failover). A GET whose reused connection turns out
// closed is sent once more on a fresh one. It returns the answer and the
// connection it is being read from, and a stop function for the watch that
// closes that connection if r's context ends; the caller stops the watch
// and releases the connection (pool.put) once the body is read to its end.
func (sc *Client) roundTripDirect(r *http.Request, tok, cond string) (*http.Response, *spokeConn, func() bool, error) {
	ctx := r.Context()
	var (
		resp *http.Response
		conn *spokeConn
		stop func() bool
	)
	err := sc.failover(ctx, func(addr string) (bool, error) {
		reused := true
		c := sc.pool.get(addr)
		for {
			if c == nil {
				var err error
				if c, err = sc.dial(ctx, addr); err != nil {
					return false, err // nothing sent: the next address may answer
				}
				reused = false
			}
			watch := neverStopped
			var whole time.Time    // no deadline on the answer's body
			if ctx.Done() != nil { // a request that can be canceled
				cc := c // c is set to nil below, perhaps while the watch runs
				watch = context.AfterFunc(ctx, func() { cc.conn.Close() })
			} else {
				// Nothing cancels it (a taken connection's read): a controller
				// that never answers must not hold it, and this goroutine,
				// forever. The pool clears the deadline.
				whole = time.Now().Add(sc.t.Uncancelable)
			}
			rsp, err := exchange(c, r, addr, tok, cond, whole, sc.t.head(r))
			if err == nil {
				resp, conn, stop = rsp, c, watch
				return true, nil
			}
			watch()
			c.conn.Close()
			c = nil
			var late *errNoAnswer
			if errors.As(err, &late) {
				return true, err // sent, and not answered: not again
			}
			// Only a GET on a reused connection is sent again, once, on a
			// fresh one: anything else may have reached the controller.
			if !reused || r.Method != http.MethodGet || ctx.Err() != nil {
				return true, err
			}
		}
	})
	if err != nil {
		return nil, nil, nil, err
	}
	return resp, conn, stop, nil
}

// write writes r to c as writeRequest does. A request without a body sent
// again with the same host and token (a taken connection's, whose request
// is the same *http.Request while its head is) is built once, the second
// time, and its bytes are written as they are from then on.
func (c *spokeConn) write(r *http.Request, host, tok, cond string) error {
	if r.ContentLength != 0 || r.Body != nil && r.Body != http.NoBody {
		c.sent = sentRequest{}
		return writeRequest(c.bw, r, host, tok, cond)
	}
	if c.sent.r != r || c.sent.host != host || c.sent.tok != tok || c.sent.cond != cond {
		c.sent = sentRequest{r: r, host: host, tok: tok, cond: cond} // a request seen once is written directly
		return writeRequest(c.bw, r, host, tok, cond)
	}
	if c.sent.wire == nil {
		var b bytes.Buffer
		bw := bufio.NewWriter(&b)
		if err := writeRequest(bw, r, host, tok, cond); err != nil {
			return err
		}
		c.sent.wire = b.Bytes()
	}
	if _, err := c.bw.Write(c.sent.wire); err != nil {
		return err
	}
	return c.bw.Flush()
}

// neverStopped is the watch of a request that cannot be canceled.
func neverStopped() bool { return true }

// exchange writes r on c and reads the answer's head, which must come
// within after (Timeouts.head: errNoAnswer); the answer's body may be read
// until whole (none when zero), as may the request be written.
func exchange(c *spokeConn, r *http.Request, host, tok, cond string, whole time.Time, after time.Duration) (*http.Response, error) {
	c.conn.SetReadDeadline(whole)
	if err := c.write(r, host, tok, cond); err != nil {
		return nil, err
	}
	head, ours := time.Now().Add(after), true
	if !whole.IsZero() && whole.Before(head) {
		head, ours = whole, false
	}
	c.conn.SetReadDeadline(head)
	for {
		resp, err := readAnswer(c.br, r)
		if ours && errors.Is(err, os.ErrDeadlineExceeded) {
			return nil, &errNoAnswer{after: after, err: err}
		}
		// Skip informational answers (103 Early Hints; no 100 Continue:
		// the caller's Expect stays at the hub).
		if err != nil || resp.StatusCode >= 200 || resp.StatusCode == http.StatusSwitchingProtocols {
			if err == nil {
				c.conn.SetReadDeadline(whole)
			}
			return resp, err
		}
	}
}

// forwardDirect proxies a plain (non-upgrade) request r to the controller
// named controller through sc with tok, copying the answer as it comes. An
// error means nothing was written: no node answered.
func (s *Relay) forwardDirect(w http.ResponseWriter, r *http.Request, controller string, sc *Client, tok string) error {
	if key, ok := s.statusCacheKey(r, controller); ok {
		return s.forwardStatus(w, r, key, sc, tok)
	}
	resp, c, stop, err := sc.roundTripDirect(r, tok, "")
	if err != nil {
		return err
	}
	if resp.StatusCode == http.StatusUnauthorized {
		s.controllerRefused(w, controller, resp, c, stop)
		return nil
	}
	copyAnswer(w, r, resp, c, stop, sc)
	return nil
}

// controllerRefused answers for a controller that refused the hub's own
// token (401: the caller was authenticated by the hub, so it is the hub
// that was refused, most often because the controller's superuser ran
// remove-hub-trust). Relayed as it came, it read as the caller's session
// having ended, and drover renewed it and asked again on every call.
func (s *Relay) controllerRefused(w http.ResponseWriter, controller string, resp *http.Response, c *spokeConn, stop func() bool) {
	err := RefusedBy(controller, resp)
	resp.Body.Close()
	stop()
	c.conn.Close()
	s.writeControllerRefused(w, err)
}

func (s *Relay) writeControllerRefused(w http.ResponseWriter, err *RefusedError) {
	s.cfg.Logger.Warn("controller refused the hub's token", "controller", err.controller, "answer", err.why)
	reply.JSON(w, http.StatusBadGateway, &api.Error{Code: api.CodeUnavailable, Message: err.Error()})
}

// copyAnswer copies the controller's answer resp, read from c (watched by
// stop), to w as it comes, and releases c to sc's pool once it is read to
// its end. An answer that breaks off aborts w's (http.ErrAbortHandler).
func copyAnswer(w http.ResponseWriter, r *http.Request, resp *http.Response, c *spokeConn, stop func() bool, sc *Client) {
	h := w.Header()
	copyAnswerHeaders(h, resp.Header)
	if resp.ContentLength >= 0 {
		h.Set("Content-Length", strconv.FormatInt(resp.ContentLength, 10))
		// The whole answer in one send.
		defer corkconn.Hold(corkconn.FromContext(r.Context(), r.ProtoMajor), w, resp.ContentLength)()
	}
	w.WriteHeader(resp.StatusCode)
	stream := resp.ContentLength < 0
	if stream { // the head now, as the controller sent it: a stream may wait long for its first data
		_ = http.NewResponseController(w).Flush()
	}
	buf := proxyBuffers.Get()
	defer proxyBuffers.Put(buf)
	var werr, rerr error
	for {
		var n int
		n, rerr = resp.Body.Read(buf)
		if n > 0 {
			if _, werr = w.Write(buf[:n]); werr != nil {
				break
			}
			if stream {
				_ = http.NewResponseController(w).Flush()
			}
		}
		if rerr != nil {
			break
		}
	}
	resp.Body.Close()
	if stop() && rerr == io.EOF && werr == nil && !resp.Close {
		sc.pool.put(c)
	} else {
		c.conn.Close()
	}
	if werr == nil && rerr != io.EOF {
		// The controller's answer broke off after its head: abort ours too,
		// so the client sees a failure, not a short answer.
		panic(http.ErrAbortHandler)
	}
}
