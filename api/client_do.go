package api

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// maxErrorBody bounds how much of an error response is read.
const maxErrorBody = 64 << 10

// request is one API call before it is sent to an address.
type request struct {
	method      string
	path        string // escaped, from /v1
	query       url.Values
	body        []byte
	contentType string
	read        ReadOptions
	header      http.Header   // set on the request after the client's own
	extra       time.Duration // added to the per-attempt timeout (task waits)
	// stream bounds only the wait for the answer's headers by the
	// per-attempt timeout, not the reading of its body (log streams).
	stream bool
	// answered is the X-Drover-Index of the answer (0: none), set by
	// attempt.
	answered uint64
}

// idempotent reports whether the request may be sent again after it may
// have reached a server. Only reads are: a write that reached a node may
// have been applied even if no answer came back.
func (r *request) idempotent() bool { return r.method == http.MethodGet }

// response is a 2xx answer whose body the caller must close; closing it
// also ends the attempt's timeout context.
type response struct {
	*http.Response
	cancel context.CancelFunc
}

func (r *response) Close() error {
	err := r.Body.Close()
	r.cancel()
	return err
}

// bodyCloser hands a streamed body to the caller with the attempt's cancel.
type bodyCloser struct {
	io.Reader
	r *response
}

func (b bodyCloser) Close() error { return b.r.Close() }

// call sends r and decodes a JSON answer into out (nil: discard it).
func (c *Client) call(ctx context.Context, r *request, out any) error {
	resp, err := c.send(ctx, r)
	if err != nil {
		return err
	}
	defer resp.Close()
	if out == nil || resp.StatusCode == http.StatusNoContent {
		_, err := io.Copy(io.Discard, resp.Body)
		if err != nil && ctx.Err() == nil && r.idempotent() {
			return unavailablef(err, "reading the answer to %s %s failed", r.method, r.path)
		}
		return nil
	}
	// The body is read to its end, so the connection goes back to the pool
	// instead of being closed (a new TLS handshake per request tripled
	// write latency), into a reused buffer: json.Decoder would allocate
	// its own and hold the whole value in it just the same.
	buf := bodyBuffers.Get().(*bytes.Buffer)
	defer putBodyBuffer(buf)
	_, err = buf.ReadFrom(resp.Body)
	if err == nil {
		err = json.Unmarshal(buf.Bytes(), out)
	}
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("%s %s: %w", r.method, r.path, ctx.Err())
		}
		return fmt.Errorf("%w: %w", Errorf(CodeInternal, "cannot decode the answer to %s %s", r.method, r.path), err)
	}
	return nil
}

// bodyBuffers holds buffers for reading answers; one of more than
// maxPooledBody is dropped rather than kept for every later small answer.
var bodyBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

const maxPooledBody = 256 << 10

func putBodyBuffer(b *bytes.Buffer) {
	if b.Cap() <= maxPooledBody {
		b.Reset()
		bodyBuffers.Put(b)
	}
}

// send tries r against each address in turn, starting with the preferred
// one, and returns the first 2xx response. It moves on to the next address
// when the request certainly was not sent (dial or TLS handshake failure),
// and for reads also when the connection failed mid-way or the node
// answered unavailable. Any other answer is final.
func (c *Client) send(ctx context.Context, r *request) (*response, error) {
	used := *c.token.Load()
	resp, err := c.sendOnce(ctx, r)
	var apiErr *Error
	if errors.As(err, &apiErr) && apiErr.Code == CodeUnauthorized {
		ok, rerr := c.refreshToken(ctx, used)
		if ok {
			return c.sendOnce(ctx, r)
		}
		if rerr != nil {
			return nil, rerr
		}
	}
	return resp, err
}

func (c *Client) sendOnce(ctx context.Context, r *request) (*response, error) {
	addrs := c.rotation()
	var lastErr error
	for _, addr := range addrs {
		resp, err := c.attempt(ctx, addr, r)
		if err == nil {
			c.prefer(addr)
			c.maybeFollow(ctx, r)
			return resp, nil
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%s %s: %w", r.method, r.path, ctx.Err())
		}
		var apiErr *Error
		if errors.As(err, &apiErr) {
			if apiErr.Code == CodeUnavailable && r.idempotent() {
				c.logger.Debug("api: node unavailable, failing over", "address", addr, "error", err)
				lastErr = err
				continue
			}
			return nil, err
		}
		if !NotSent(err) && !r.idempotent() {
			// The write may have been applied: never resend it.
			if errors.Is(err, context.DeadlineExceeded) {
				return nil, fmt.Errorf("%w: %w", Errorf(CodeTimeout,
					"no answer from %s in time; the request may have been applied", addr), err)
			}
			return nil, fmt.Errorf("%w: %w", Errorf(CodeTimeout,
				"connection to %s lost; the request may have been applied", addr), err)
		}
		c.logger.Debug("api: address failed, failing over", "address", addr, "error", err)
		lastErr = err
	}
	var apiErr *Error
	if errors.As(lastErr, &apiErr) {
		return nil, lastErr
	}
	return nil, unavailablef(lastErr, "cannot reach the %s at %s", c.kind, strings.Join(addrs, ", "))
}

// attempt sends r to one address.
func (c *Client) attempt(ctx context.Context, addr string, r *request) (*response, error) {
	actx, cancel := ctx, context.CancelFunc(func() {})
	headers := func() {}
	switch {
	case c.timeout > 0 && r.stream:
		actx, cancel = context.WithCancel(ctx)
		t := time.AfterFunc(c.timeout+r.extra, cancel)
		headers = func() { t.Stop() }
	case c.timeout > 0:
		actx, cancel = context.WithTimeout(ctx, c.timeout+r.extra)
	}
	req, err := c.newRequest(actx, addr, r)
	if err != nil {
		cancel()
		return nil, err
	}
	resp, err := c.do(req)
	headers()
	if err != nil {
		cancel()
		return nil, err
	}
	if idx, err := strconv.ParseUint(resp.Header.Get(HeaderIndex), 10, 64); err == nil {
		r.answered = idx
		c.observe(r.method, r.path, idx)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		defer cancel()
		defer resp.Body.Close()
		return nil, decodeError(resp)
	}
	return &response{Response: resp, cancel: cancel}, nil
}

// do sends one request. With no timeout or cookie jar of its own and no
// redirect to follow (the API never redirects), http.Client adds nothing
// to the transport's round trip but work: it copies every request's
// headers in case of a redirect. Errors keep http.Client's shape.
func (c *Client) do(req *http.Request) (*http.Response, error) {
	if !c.direct {
		return c.http.Do(req)
	}
	resp, err := c.transport.RoundTrip(req)
	if err != nil {
		op := req.Method[:1] + strings.ToLower(req.Method[1:])
		return nil, &url.Error{Op: op, URL: req.URL.String(), Err: err}
	}
	return resp, nil
}

func (c *Client) newRequest(ctx context.Context, addr string, r *request) (*http.Request, error) {
	q := r.query
	if r.idempotent() {
		idx := max(r.read.Index, c.readIndex(r))
		if idx > 0 || r.read.Consistent {
			q = url.Values{}
			for k, v := range r.query {
				q[k] = v
			}
		}
		if idx > 0 {
			q.Set("index", strconv.FormatUint(idx, 10))
		}
		if r.read.Consistent {
			q.Set("consistent", "true")
		}
	}
	u := "https://" + addr + r.path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	var body io.Reader
	if r.body != nil {
		body = bytes.NewReader(r.body)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, u, body)
	if err != nil {
		return nil, Errorf(CodeBadRequest, "api client: %v", err)
	}
	for k, v := range c.header {
		req.Header[k] = v
	}
	for k, v := range r.header {
		req.Header[k] = v
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "drover-api-client")
	if r.body != nil {
		req.Header.Set("Content-Type", r.contentType)
	}
	c.setAuth(req.Header)
	return req, nil
}

// decodeError turns a non-2xx response into an *Error: the JSON Error body
// when there is one, otherwise a code mapped from the HTTP status.
func decodeError(resp *http.Response) *Error {
	data, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody)) // a short body still tells us something
	var e Error
	if err := json.Unmarshal(data, &e); err == nil && e.Code != "" {
		e.Status = resp.StatusCode
		return &e
	}
	if (resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusMethodNotAllowed) && resp.Request != nil {
		// No route, as a plain-text answer says: the server is not what the
		// client took it for, or older than the client.
		return &Error{Code: codeForStatus(resp.StatusCode), Status: resp.StatusCode,
			Message: fmt.Sprintf("the server does not serve %s %s (HTTP %d): it is older than this client, or not a Drover API server",
				resp.Request.Method, resp.Request.URL.Path, resp.StatusCode)}
	}
	msg := strings.TrimSpace(string(data))
	if len(msg) > 200 {
		msg = msg[:200] + "..."
	}
	if msg == "" {
		msg = http.StatusText(resp.StatusCode)
	}
	return &Error{Code: codeForStatus(resp.StatusCode), Status: resp.StatusCode,
		Message: fmt.Sprintf("HTTP %d: %s", resp.StatusCode, msg)}
}

// codeForStatus maps an HTTP status to a code for answers without an Error
// body (a proxy, or a server crash before the handler ran).
func codeForStatus(status int) Code {
	switch status {
	case http.StatusBadRequest:
		return CodeBadRequest
	case http.StatusUnauthorized:
		return CodeUnauthorized
	case http.StatusForbidden:
		return CodeForbidden
	case http.StatusNotFound:
		return CodeNotFound
	case http.StatusConflict:
		return CodeConflict
	case http.StatusRequestEntityTooLarge:
		return CodeTooLarge
	case http.StatusTooManyRequests:
		return CodeTooMany
	case http.StatusUnprocessableEntity:
		return CodeInvalid
	case http.StatusBadGateway, http.StatusServiceUnavailable:
		return CodeUnavailable
	case http.StatusRequestTimeout, http.StatusGatewayTimeout:
		return CodeTimeout
	}
	return CodeInternal
}

// NotSent reports whether err proves a request never left the client: the
// TCP dial or the TLS handshake failed.
func NotSent(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	var (
		verr  *tls.CertificateVerificationError
		rerr  tls.RecordHeaderError
		aerr  tls.AlertError
		uaerr x509.UnknownAuthorityError
		herr  x509.HostnameError
		cerr  x509.CertificateInvalidError
	)
	return errors.As(err, &verr) || errors.As(err, &rerr) || errors.As(err, &aerr) ||
		errors.As(err, &uaerr) || errors.As(err, &herr) || errors.As(err, &cerr)
}

// maybeFollow refreshes the address list once, after the first successful
// call, when FollowAddresses is set. A failure is logged and retried after
// the next successful call: the call that triggered it has succeeded.
func (c *Client) maybeFollow(ctx context.Context, r *request) {
	if !c.follow || r.path == pathController || !c.followed.CompareAndSwap(false, true) {
		return
	}
	if _, err := c.ControllerInfo(ctx); err != nil {
		c.followed.Store(false)
		c.logger.Warn("api: cannot refresh controller addresses", "error", err)
	}
}

// followInfo adopts the API addresses a ControllerInfo answer lists.
func (c *Client) followInfo(info *ControllerInfo) {
	if !c.follow || len(info.APIAddresses) == 0 {
		return
	}
	c.followed.Store(true)
	if err := c.SetAddresses(info.APIAddresses); err != nil {
		c.logger.Warn("api: cannot adopt controller addresses", "error", err)
	}
}
