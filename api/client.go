package api

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// ClientConfig configures a Client. Addresses and CACert are required.
type ClientConfig struct {
	// Addresses are host:port of every controller node. The client tries
	// them in turn and sticks to the last one that answered.
	Addresses []string
	// CACert is the controller CA in PEM. It is pinned: the client trusts
	// no other CA, and always speaks TLS.
	CACert []byte
	// User and Password authenticate with HTTP Basic auth; Token with a
	// Bearer header. At most one of the two may be set.
	User     string
	Password string
	Token    string
	// RefreshToken, if set with Token, is called when the server rejects
	// the token as unauthorized (it expired): it returns a new token, and
	// the request is retried once with it. A hub session is refreshed
	// this way without the caller noticing.
	RefreshToken func(ctx context.Context) (string, error)
	// HTTPClient is optional. Its *http.Transport (or a default one) is
	// cloned and given the pinned TLS config; any other RoundTripper is used
	// as is and is then responsible for TLS itself.
	HTTPClient *http.Client
	// Timeout bounds one attempt against one address (0: none). Task waits
	// add their wait on top.
	Timeout time.Duration
	// FollowAddresses replaces Addresses with ControllerInfo.APIAddresses
	// after the first successful call, and whenever ControllerInfo answers.
	FollowAddresses bool
	// ReadYourWrites makes every read that names no index of its own wait
	// for the highest X-Drover-Index this client has seen (see Index).
	ReadYourWrites bool
	// Index starts the highest index seen there: the last index a client
	// saw in an earlier process (the CLI keeps it in its store).
	Index uint64
	// Indexes start, by controller UUID, the highest index each controller
	// behind a hub has answered with (PlaceModel), as Index does for a
	// controller reached directly.
	Indexes map[string]uint64
	// WatchIdleTimeout, if positive, makes a watcher drop a connection that
	// carried no frame (keepalives included) for that long and resume on
	// another; it catches half-open connections to a partitioned node.
	WatchIdleTimeout time.Duration
	// Logger receives failover and address-refresh notes; nil discards.
	Logger *slog.Logger
	// ServerKind names the server in errors ("cannot reach the hub at
	// ..."): "controller" when empty.
	ServerKind string
	// Header is sent with every request (the client's own headers, its
	// credential among them, take precedence). hubbench sends
	// Cache-Control: no-store with it to time the hub's relay alone.
	Header http.Header
}

// ReadOptions tune a read. Index makes the node wait until it has applied
// that raft index; Consistent asks for a linearizable read.
type ReadOptions struct {
	Index      uint64
	Consistent bool
}

// Client is the typed client of the Drover API. It is safe for concurrent
// use. Call Close when done to release idle connections.
type Client struct {
	http      *http.Client
	transport *http.Transport // nil when the caller brought its own RoundTripper
	direct    bool            // send through transport, bypassing http (see do)
	tls       *tls.Config
	basicAuth string // the Authorization value for User and Password, if set
	refresh   func(ctx context.Context) (string, error)
	timeout   time.Duration
	follow    bool
	ryw       bool
	watchIdle time.Duration
	logger    *slog.Logger
	kind      string      // ClientConfig.ServerKind
	header    http.Header // ClientConfig.Header

	token    atomic.Pointer[string]
	index    atomic.Uint64 // highest X-Drover-Index seen
	followed atomic.Bool   // FollowAddresses refresh done

	refreshMu sync.Mutex // one refresh at a time

	// scopeMu guards controllers and serialises updates of placed
	// (scopes.go).
	scopeMu     sync.Mutex
	controllers map[string]*atomic.Uint64 // by controller UUID: the highest index it answered with
	// placed maps each model placed behind a hub to its controller's
	// entry in controllers; replaced whole, never modified, so a request
	// reads it without locking. nil until a model is placed.
	placed atomic.Pointer[map[string]*atomic.Uint64]

	// mu guards the address list and the preferred position in it, and
	// serialises updates of order.
	mu        sync.Mutex
	addrs     []string
	preferred int
	// order is the addresses in the order to try them, the preferred one
	// first; replaced whole, never modified, so a request reads it
	// without locking.
	order atomic.Pointer[[]string]
}

// NewClient validates cfg and returns a client. It does not connect.
func NewClient(cfg ClientConfig) (*Client, error) {
	if len(cfg.Addresses) == 0 {
		return nil, Errorf(CodeInvalid, "api client: no controller addresses")
	}
	if len(cfg.CACert) == 0 {
		return nil, Errorf(CodeInvalid, "api client: CA certificate is required")
	}
	if cfg.Token != "" && (cfg.User != "" || cfg.Password != "") {
		return nil, Errorf(CodeInvalid, "api client: both a token and a user/password given")
	}
	if cfg.Timeout < 0 {
		return nil, Errorf(CodeInvalid, "api client: negative timeout")
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(cfg.CACert) {
		return nil, Errorf(CodeInvalid, "api client: no certificate in CACert")
	}
	c := &Client{
		tls:       &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
		refresh:   cfg.RefreshToken,
		timeout:   cfg.Timeout,
		follow:    cfg.FollowAddresses,
		ryw:       cfg.ReadYourWrites,
		logger:    cfg.Logger,
		kind:      cmp.Or(cfg.ServerKind, "controller"),
		watchIdle: cfg.WatchIdleTimeout,
		addrs:     slices.Clone(cfg.Addresses),
		header:    cfg.Header.Clone(),
	}
	c.index.Store(cfg.Index)
	for uuid, idx := range cfg.Indexes {
		c.controllerIndexLocked(uuid).Store(idx) // not yet shared
	}
	c.reorderLocked() // not yet shared
	if c.logger == nil {
		c.logger = slog.New(slog.DiscardHandler)
	}
	if cfg.User != "" {
		r := http.Request{Header: http.Header{}}
		r.SetBasicAuth(cfg.User, cfg.Password)
		c.basicAuth = r.Header.Get("Authorization")
	}
	c.token.Store(&cfg.Token)
	hc := &http.Client{}
	if cfg.HTTPClient != nil {
		*hc = *cfg.HTTPClient
	}
	switch rt := hc.Transport.(type) {
	case nil:
		c.transport = http.DefaultTransport.(*http.Transport).Clone()
		c.transport.Proxy = nil
	case *http.Transport:
		c.transport = rt.Clone()
	}
	if c.transport != nil {
		c.transport.TLSClientConfig = c.tls.Clone()
		// HTTP/1.1 with a connection per concurrent request: one HTTP/2
		// connection serialises every request's frames through a single
		// TLS stream and measured 4x slower under concurrent writes.
		c.transport.ForceAttemptHTTP2 = false
		if c.transport.MaxIdleConnsPerHost < 512 {
			c.transport.MaxIdleConnsPerHost = 512
		}
		hc.Transport = c.transport
	}
	// Redirects would carry credentials to another host; the API never
	// redirects.
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	c.http = hc
	c.direct = c.transport != nil && hc.Timeout == 0 && hc.Jar == nil
	return c, nil
}

// Close releases the client's idle connections. Watchers it started stay
// open until they are closed themselves.
func (c *Client) Close() {
	if c.transport != nil {
		c.transport.CloseIdleConnections()
	}
}

// Index is the highest raft index (X-Drover-Index) any response has
// carried, but those to the calls of a model placed behind a hub
// (PlaceModel, Indexes).
func (c *Client) Index() uint64 { return c.index.Load() }

// Addresses returns the current address list.
func (c *Client) Addresses() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.addrs)
}

// SetAddresses replaces the address list. The address in use stays
// preferred if it is still listed.
func (c *Client) SetAddresses(addrs []string) error {
	if len(addrs) == 0 {
		return Errorf(CodeInvalid, "api client: no controller addresses")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	cur := c.addrs[c.preferred]
	c.addrs = slices.Clone(addrs)
	c.preferred = max(0, slices.Index(c.addrs, cur))
	c.reorderLocked()
	return nil
}

// rotation returns the addresses in the order to try them: the preferred
// one first. The slice is shared: never modify it.
func (c *Client) rotation() []string { return *c.order.Load() }

func (c *Client) reorderLocked() {
	out := make([]string, 0, len(c.addrs))
	for i := range c.addrs {
		out = append(out, c.addrs[(c.preferred+i)%len(c.addrs)])
	}
	c.order.Store(&out)
}

// prefer makes addr the first address to try, if it is still listed. It
// runs after every successful call, so the usual case (addr is already
// first) takes no lock.
func (c *Client) prefer(addr string) {
	if order := c.rotation(); order[0] == addr {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if i := slices.Index(c.addrs, addr); i >= 0 && i != c.preferred {
		c.preferred = i
		c.reorderLocked()
	}
}

// setAuth adds the configured credentials to h.
func (c *Client) setAuth(h http.Header) {
	switch tok := *c.token.Load(); {
	case tok != "":
		h.Set("Authorization", "Bearer "+tok)
	case c.basicAuth != "":
		h.Set("Authorization", c.basicAuth)
	}
}

// refreshToken replaces the token after an unauthorized answer; false
// when there is no way to (no RefreshToken, or it failed). A failed
// renewal's *Error is returned, for the caller to answer with instead of
// the unauthorized one: why the session could not be renewed, or that the
// server was unavailable (which watches and reads retry).
func (c *Client) refreshToken(ctx context.Context, used string) (bool, error) {
	if c.refresh == nil || used == "" {
		return false, nil
	}
	c.refreshMu.Lock()
	defer c.refreshMu.Unlock()
	if cur := *c.token.Load(); cur != used {
		return true, nil // another request refreshed it meanwhile
	}
	tok, err := c.refresh(ctx)
	if err != nil || tok == "" {
		c.logger.Debug("api: token refresh failed", "error", err)
		var ae *Error
		if errors.As(err, &ae) {
			return false, err
		}
		return false, nil
	}
	c.token.Store(&tok)
	return true, nil
}

// ErrWatcherClosed is returned by Watcher.Next after Close or once the
// context given to Watch is done.
var ErrWatcherClosed = errors.New("api: watcher closed")

// unavailablef builds the error of a call that reached no controller; it
// wraps cause so the transport error stays inspectable.
func unavailablef(cause error, format string, args ...any) error {
	return fmt.Errorf("%w: %w", Errorf(CodeUnavailable, format, args...), cause)
}
