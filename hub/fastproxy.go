package hub

import (
	"bufio"
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/droverhq/drover/api"
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
}

// maxIdleSpokeConns bounds the idle connections kept per controller.
const maxIdleSpokeConns = 64

// connPool holds a controller client's idle connections.
type connPool struct {
	mu   sync.Mutex
	idle []*spokeConn
}

func (p *connPool) get(addr string) *spokeConn {
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
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.idle) >= maxIdleSpokeConns {
		c.conn.Close()
		return
	}
	p.idle = append(p.idle, c)
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
func (sc *spokeClient) dial(ctx context.Context, addr string) (*spokeConn, error) {
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

func dropHopHeaders(h http.Header) {
	for _, f := range strings.Split(h.Get("Connection"), ",") {
		if f = strings.TrimSpace(f); f != "" {
			h.Del(f)
		}
	}
	for _, k := range hopHeaders {
		h.Del(k)
	}
}

// roundTripDirect sends out (its URL's host is ignored) on an idle
// connection to the preferred address, or a new one, failing over between
// the addresses when a dial fails. A GET whose reused connection turns out
// closed is sent once more on a fresh one. It returns the answer and the
// connection it is being read from; the caller releases the connection
// (release) once the body is read to its end.
func (sc *spokeClient) roundTripDirect(out *http.Request) (*http.Response, *spokeConn, error) {
	ctx := out.Context()
	var err error
	start := int(sc.preferred.Load())
	for i := range sc.addrs {
		j := (start + i) % len(sc.addrs)
		addr := sc.addrs[j]
		reused := true
		c := sc.pool.get(addr)
		for attempt := 0; attempt < 2; attempt++ {
			if c == nil {
				if c, err = sc.dial(ctx, addr); err != nil {
					break
				}
				reused = false
			}
			var resp *http.Response
			resp, err = exchange(c, out)
			if err == nil {
				sc.preferred.Store(int32(j))
				return resp, c, nil
			}
			c.conn.Close()
			c = nil
			if !reused || out.Method != http.MethodGet || ctx.Err() != nil {
				return nil, nil, err
			}
		}
		if !api.NotSent(err) || ctx.Err() != nil {
			break
		}
	}
	return nil, nil, err
}

// exchange writes out on c and reads the answer's head; the context ends
// the exchange by closing the connection.
func exchange(c *spokeConn, out *http.Request) (*http.Response, error) {
	stop := context.AfterFunc(out.Context(), func() { c.conn.Close() })
	defer stop()
	if err := out.Write(c.bw); err != nil {
		return nil, err
	}
	if err := c.bw.Flush(); err != nil {
		return nil, err
	}
	for {
		resp, err := http.ReadResponse(c.br, out)
		// Skip informational answers (100 Continue, 103 Early Hints): the
		// hub already answered the caller's Expect itself.
		if err != nil || resp.StatusCode >= 200 || resp.StatusCode == http.StatusSwitchingProtocols {
			return resp, err
		}
	}
}

// forwardDirect proxies a plain (non-upgrade) request r to sc with tok,
// copying the answer as it comes. An error means nothing was written: no
// node answered.
func (s *Server) forwardDirect(w http.ResponseWriter, r *http.Request, sc *spokeClient, tok string) error {
	out := r.Clone(r.Context())
	out.RequestURI = ""
	out.URL.Scheme, out.URL.Host, out.Host = "https", sc.address(), sc.address()
	out.Close = false
	dropHopHeaders(out.Header)
	out.Header.Del("Cookie")
	out.Header.Del("Origin") // the hub checked the caller; the controller sees the hub
	out.Header.Del("Expect") // the hub's server answered it; the body follows at once
	out.Header.Set("Authorization", "Bearer "+tok)
	if r.ContentLength == 0 {
		out.Body = nil
	}
	resp, c, err := sc.roundTripDirect(out)
	if err != nil {
		return err
	}
	stop := context.AfterFunc(r.Context(), func() { c.conn.Close() })
	h := w.Header()
	for k, v := range resp.Header {
		h[k] = v
	}
	dropHopHeaders(h)
	if resp.ContentLength >= 0 {
		h.Set("Content-Length", strconv.FormatInt(resp.ContentLength, 10))
	}
	w.WriteHeader(resp.StatusCode)
	buf := proxyBuffers.Get()
	defer proxyBuffers.Put(buf)
	stream := resp.ContentLength < 0
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
	return nil
}
