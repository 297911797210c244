package proxy

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httputil"
	"sync"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/hub/internal/reply"
)

// Route is where a model's calls go: the controller (its name, for
// errors), the client that reaches it, and the token that carries the
// caller's access there.
type Route struct {
	Controller string
	Client     *Client
	Token      string
}

// Forward relays r to rt's controller through its client, with its
// token: a plain request through the proxy's own HTTP/1.1 client
// (fastproxy.go), its answer copied as it comes (a model's status
// revalidated against a kept copy, statuscache.go); a websocket upgrade
// spliced by the standard reverse proxy. The caller has authorized r.
func (s *Relay) Forward(w http.ResponseWriter, r *http.Request, rt Route) {
	controller, sc, tok := rt.Controller, rt.Client, rt.Token
	if r.Header.Get("Upgrade") == "" {
		if err := s.forwardDirect(w, r, controller, sc, tok); err != nil {
			s.unavailable(w, r, controller, err)
		}
		return
	}
	// Websocket upgrades (watches) are spliced by the standard proxy.
	rp := &httputil.ReverseProxy{
		BufferPool: proxyBuffers,
		Transport:  sc, // picks the address, failing over between them
		// No FlushInterval: an answer without a length (the log stream) is
		// flushed as it comes anyway, and websockets are spliced.
		Rewrite: func(pr *httputil.ProxyRequest) {
			addr := sc.address()
			pr.Out.URL.Scheme, pr.Out.URL.Host, pr.Out.Host = "https", addr, addr
			pr.Out.Header.Del("Cookie")
			pr.Out.Header.Del("Origin") // the hub checked the caller; the controller sees the hub
			pr.Out.Header.Set("Authorization", "Bearer "+tok)
		},
		ModifyResponse: func(resp *http.Response) error {
			if resp.StatusCode != http.StatusUnauthorized {
				sanitizeUpgradeAnswer(resp)
				if rwc, ok := resp.Body.(io.ReadWriteCloser); ok && resp.StatusCode == http.StatusSwitchingProtocols {
					resp.Body = guard(rwc) // wsguard.go: both sides' messages bounded
				}
				return nil
			}
			defer resp.Body.Close()
			return RefusedBy(controller, resp)
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if refused := (*RefusedError)(nil); errors.As(err, &refused) {
				s.writeControllerRefused(w, refused)
				return
			}
			s.unavailable(w, r, controller, err)
		},
	}
	rp.ServeHTTP(w, r)
}

// unavailable answers a call no node of the controller answered: none
// could be reached, or the one that took the call did not answer in time.
func (s *Relay) unavailable(w http.ResponseWriter, r *http.Request, controller string, err error) {
	s.cfg.Logger.Warn("forward to controller failed", "controller", controller, "path", r.URL.Path, "err", err)
	var late *errNoAnswer
	switch {
	case errors.As(err, &late) && r.Method == http.MethodGet:
		reply.JSON(w, http.StatusGatewayTimeout, &api.Error{Code: api.CodeTimeout, Message: fmt.Sprintf(
			"controller %s did not answer within %v (it is overloaded or hung; 'drover controllers' shows its health)", controller, late.after)})
	case errors.As(err, &late):
		reply.JSON(w, http.StatusGatewayTimeout, &api.Error{Code: api.CodeTimeout, Message: fmt.Sprintf(
			"controller %s did not answer within %v: the change may or may not have been made (check 'drover status' before retrying)",
			controller, late.after)})
	default:
		reply.JSON(w, http.StatusBadGateway, &api.Error{Code: api.CodeUnavailable,
			Message: fmt.Sprintf("controller %s is unavailable behind the hub ('drover controllers' shows its health)", controller)})
	}
}

// proxyBuffers recycles the buffers the proxy copies answers through (32
// KiB each, allocated per request otherwise).
var proxyBuffers = &bufferPool{pool: sync.Pool{New: func() any { b := make([]byte, proxyBufferSize); return &b }}}

const proxyBufferSize = 32 << 10

type bufferPool struct{ pool sync.Pool }

func (p *bufferPool) Get() []byte  { return *p.pool.Get().(*[]byte) }
func (p *bufferPool) Put(b []byte) { p.pool.Put(&b) }

// Recorder is a ResponseWriter that notes the status answered, for the
// request counters.
type Recorder struct {
	http.ResponseWriter
	Status int
}

// WriteHeader notes the first status.
func (r *Recorder) WriteHeader(code int) {
	if r.Status == 0 {
		r.Status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController (the reverse proxy's websocket
// hijack and flushes) reach the connection.
func (r *Recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

func (r *Recorder) Write(b []byte) (int, error) {
	if r.Status == 0 {
		r.Status = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}
