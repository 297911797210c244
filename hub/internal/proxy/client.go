package proxy

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/hub/internal/reply"
	"github.com/droverhq/drover/hub/internal/store"
)

// ErrNotAPI means a server answered with what the Drover API never
// answers (no JSON error, an undecodable body): not a Drover controller.
var ErrNotAPI = errors.New("the answer is not the Drover API's")

// ErrUnavailable means no address of the owning controller answered.
var ErrUnavailable = errors.New("controller unavailable")

// Client talks to one controller: TLS pinned to its CA. Callers of
// http choose the address; as an http.RoundTripper (the proxy's) it
// chooses, failing over between the addresses.
type Client struct {
	ca        string // the CA it was built for, with addrs
	caSHA256  string // hex SHA-256 of the certificate pinned from ca, named in spoke tokens
	addrs     []string
	preferred atomic.Int32 // index in addrs of the last address that answered
	pool      connPool     // the proxy's own connections (fastproxy.go)
	http      *http.Client
	transport *http.Transport
	t         Timeouts
}

// address is the address that answered last, where requests go first.
func (sc *Client) address() string {
	if len(sc.addrs) == 0 {
		return ""
	}
	return sc.addrs[int(sc.preferred.Load())%len(sc.addrs)]
}

// RoundTrip sends req to the address that answered last and, when the
// request certainly was not sent (the dial or the TLS handshake failed, as
// when that node is down), to the next one in turn. Any other failure is
// final: the request may have reached the controller.
func (sc *Client) RoundTrip(req *http.Request) (*http.Response, error) {
	var resp *http.Response
	err := sc.failover(req.Context(), func(addr string) (bool, error) {
		out := req
		if out.URL.Host != addr { // the proxy named sc.address(); a retry goes elsewhere
			out = req.Clone(req.Context())
			out.URL.Host, out.Host = addr, addr
		}
		var err error
		resp, err = sc.transport.RoundTrip(out)
		return err == nil, err
	})
	if err != nil {
		return nil, err
	}
	return resp, nil
}

// failover calls try with the controller's addresses in turn, starting
// with the one that answered last, until try is done: answered (a nil
// error; that address is remembered) or failed for good. It moves on to
// the next address only when the request certainly was not sent
// (api.NotSent) and ctx is still alive: a request that may have reached
// the controller is not sent again. It returns try's last error, or
// ErrUnavailable when there is no address to try.
func (sc *Client) failover(ctx context.Context, try func(addr string) (done bool, err error)) error {
	if len(sc.addrs) == 0 {
		return ErrUnavailable
	}
	start := int(sc.preferred.Load())
	var err error
	for i := range sc.addrs {
		j := (start + i) % len(sc.addrs)
		var done bool
		if done, err = try(sc.addrs[j]); done {
			if err == nil {
				sc.preferred.Store(int32(j))
			}
			return err
		}
		if !api.NotSent(err) || ctx.Err() != nil {
			break
		}
	}
	return err
}

// Clients caches one client per controller; a client is rebuilt when the
// controller's CA or addresses change.
type Clients struct {
	t  Timeouts
	mu sync.Mutex
	m  map[string]*Client
}

// NewClients is an empty set of clients whose waits t bounds.
func NewClients(t Timeouts) *Clients { return &Clients{t: t} }

func newClient(ca string, addrs []string, t Timeouts) (*Client, error) {
	cert, err := controllerCA(ca)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil
	tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	tr.ForceAttemptHTTP2 = false
	tr.MaxIdleConnsPerHost = 256
	tr.ResponseHeaderTimeout = t.Head // as exchange's: a hung controller answers nothing
	sc := &Client{ca: ca, caSHA256: certSHA256(cert), addrs: slices.Clone(addrs), transport: tr, t: t}
	sc.http = &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return sc, nil
}

// controllerCA reads the controller's CA certificate, the one the hub
// pins: its first, and at registration its only, certificate (a bundle
// would let a server chained to another CA pass for a controller whose CA
// it merely lists).
func controllerCA(ca string) (*x509.Certificate, error) {
	var block *pem.Block
	for rest := []byte(ca); ; {
		if block, rest = pem.Decode(rest); block == nil || block.Type == "CERTIFICATE" {
			break
		}
	}
	if block == nil {
		return nil, fmt.Errorf("%w: no certificate in the controller CA", reply.ErrBadRequest)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%w: the controller CA: %w", reply.ErrBadRequest, err)
	}
	return cert, nil
}

func certSHA256(cert *x509.Certificate) string {
	sum := sha256.Sum256(cert.Raw)
	return hex.EncodeToString(sum[:])
}

// ControllerCASHA256 is the hex SHA-256 of the certificate the hub pins
// from a controller's CA (PEM): what its tokens for that controller name.
func ControllerCASHA256(ca string) (string, error) {
	cert, err := controllerCA(ca)
	if err != nil {
		return "", err
	}
	return certSHA256(cert), nil
}

func (ss *Clients) Get(c store.Controller) (*Client, error) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if sc := ss.m[c.UUID]; sc != nil && sc.ca == c.CACert && slices.Equal(sc.addrs, c.APIAddresses) {
		return sc, nil
	}
	sc, err := newClient(c.CACert, c.APIAddresses, ss.t)
	if err != nil { // the registered record is at fault, not the caller
		return nil, fmt.Errorf("%w: controller %s: its CA has no certificate", ErrUnavailable, c.Name)
	}
	if old := ss.m[c.UUID]; old != nil {
		old.transport.CloseIdleConnections()
		old.pool.closeAll()
	}
	if ss.m == nil {
		ss.m = map[string]*Client{}
	}
	ss.m[c.UUID] = sc
	return sc, nil
}

// Forget drops the client of a controller that is no longer registered.
func (ss *Clients) Forget(id string) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if old := ss.m[id]; old != nil {
		old.transport.CloseIdleConnections()
		old.pool.closeAll()
		delete(ss.m, id)
	}
}

// CloseIdle closes the proxy's connections to every controller that have
// been idle too long.
func (ss *Clients) CloseIdle(now time.Time) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	for _, sc := range ss.m {
		sc.pool.closeIdle(now)
	}
}

// RefusedError is a controller's refusal of the hub's own token: the
// controller is unavailable to the hub (502) until it trusts it again.
type RefusedError struct{ controller, why string }

// Error says that the controller refused the hub's token (why: its
// answer), and what to do, unless the controller said it (an answer
// ending in a parenthesis: its clock out of step with the hub's).
func (e *RefusedError) Error() string {
	why := cmp.Or(e.why, "unauthorized")
	if strings.HasSuffix(why, ")") {
		return fmt.Sprintf("controller %s refused the hub: %s", e.controller, why)
	}
	return fmt.Sprintf("controller %s refused the hub: %s (if its superuser ran 'drover remove-hub-trust', a hub administrator "+
		"registers it again with a new join token: 'drover create-hub-token' on the controller, 'drover add-controller' here)",
		e.controller, why)
}

func (e *RefusedError) Unwrap() error { return ErrUnavailable }

// refusedBy reads a controller's 401 answer to the hub (its Error body) as
// a *RefusedError; the caller closes the body.
func RefusedBy(controller string, resp *http.Response) *RefusedError {
	var e api.Error
	_ = json.NewDecoder(io.LimitReader(resp.Body, 4<<10)).Decode(&e)
	return &RefusedError{controller: controller, why: e.Message}
}

func doSpoke(ctx context.Context, hc *http.Client, url, method, tok string, body []byte, out any) error {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return err
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode >= 300 {
		ae := &api.Error{Status: resp.StatusCode}
		if json.Unmarshal(b, ae) != nil || ae.Code == "" {
			ae.Code, ae.Message = api.CodeInternal, fmt.Sprintf("controller answered %s", resp.Status)
			ae.Status = resp.StatusCode
			return fmt.Errorf("%w: %w", ErrNotAPI, ae)
		}
		ae.Status = resp.StatusCode
		return ae
	}
	if out != nil && len(b) > 0 {
		if err := json.Unmarshal(b, out); err != nil {
			return fmt.Errorf("%w: %w", ErrNotAPI, err)
		}
	}
	return nil
}

// Call sends one JSON request to the controller (named controller, for
// errors) with tok, trying its addresses in turn, and decodes the answer
// into out. A controller's own error comes back as *api.Error.
func (sc *Client) Call(ctx context.Context, controller, tok, method, path string, in, out any) error {
	var body []byte
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return err
		}
	}
	var lastErr error = ErrUnavailable
	for _, addr := range sc.addrs {
		actx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err := doSpoke(actx, sc.http, "https://"+addr+path, method, tok, body, out)
		cancel()
		var ae *api.Error
		if errors.As(err, &ae) && ae.Code == api.CodeUnauthorized {
			// The hub's own token refused: the controller's trouble, not
			// the request's (placement tries the next controller).
			return &RefusedError{controller: controller, why: ae.Message}
		}
		if err == nil || ae != nil {
			return err
		}
		lastErr = fmt.Errorf("%w: %s: %w", ErrUnavailable, addr, err)
	}
	return lastErr
}

// DialEvents dials the controller's event stream (/v1/events) with the
// query q and tok, at each of its addresses until one answers.
func (sc *Client) DialEvents(ctx context.Context, controller, tok string, q url.Values) (*websocket.Conn, error) {
	if len(sc.addrs) == 0 {
		return nil, errors.New("no address")
	}
	var conn *websocket.Conn
	var err error
	for _, addr := range sc.addrs {
		u := url.URL{Scheme: "wss", Host: addr, Path: "/v1/events", RawQuery: q.Encode()}
		d := websocket.Dialer{TLSClientConfig: sc.transport.TLSClientConfig, HandshakeTimeout: 10 * time.Second}
		var resp *http.Response
		conn, resp, err = d.DialContext(ctx, u.String(), http.Header{"Authorization": {"Bearer " + tok}})
		if resp != nil && resp.StatusCode == http.StatusUnauthorized {
			err = RefusedBy(controller, resp)
		}
		if resp != nil && resp.Body != nil {
			resp.Body.Close()
		}
		if err == nil {
			break
		}
	}
	if refused := (*RefusedError)(nil); errors.As(err, &refused) {
		return nil, err // says it all
	}
	if err != nil {
		return nil, fmt.Errorf("subscribe: %w", err)
	}
	return conn, nil
}

// Addrs are the controller's addresses.
func (sc *Client) Addrs() []string { return sc.addrs }

// CASHA256 is the hex SHA-256 of the controller's pinned CA certificate,
// which the hub's tokens for it name.
func (sc *Client) CASHA256() string { return sc.caSHA256 }

// NewClient is a client for a controller not kept in the set: one being
// registered, whose identity is asked before it is.
func (ss *Clients) NewClient(ca string, addrs []string) (*Client, error) {
	return newClient(ca, addrs, ss.t)
}

// Do sends one request to the controller at host with tok ("" for none)
// and decodes its JSON answer into out. A controller's own error comes
// back as *api.Error.
func (sc *Client) Do(ctx context.Context, host, method, path, tok string, body []byte, out any) error {
	return doSpoke(ctx, sc.http, "https://"+host+path, method, tok, body, out)
}

// CloseIdle closes the client's idle connections.
func (sc *Client) CloseIdle() { sc.transport.CloseIdleConnections() }
