// Package apiconn is a machine agent's connection to the controller: one
// websocket (GET /v1/agent/stream) to one controller node at a time, with
// failover across every known node and resumption by raft index.
//
// Invariants:
//   - At most one websocket is open. When it fails, every call waiting on it
//     fails with ErrDisconnected (its outcome is unknown: callers retry
//     idempotently), and the next node in rotation is dialled with
//     since=<highest index seen>, so the remote state never goes backwards.
//   - State frames are whole: only the latest is kept, and a slow consumer
//     sees the newest state, never a queue of stale ones.
//   - The address list is replaced by every state frame's controller
//     addresses (when non-empty) and handed to OnAddresses for persistence.
//   - Switch moves the connection to another controller (a migrated
//     model's): its addresses and CA replace the old ones, the index starts
//     again from 0 (the new controller's raft log is another history), and
//     the open websocket is closed. The last state stays until the new
//     controller sends one. A handshake answered with api.CodeRedirect
//     hands the target to OnRedirect, which persists it and switches.
package apiconn

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/internal/supervise"
)

// errSwitched ends a session whose connection Switch replaced.
var errSwitched = errors.New("apiconn: moved to another controller")

// ErrDisconnected is returned by Call when there is no connection or the
// connection failed before the answer arrived.
var ErrDisconnected = errors.New("apiconn: not connected to a controller")

// Config holds a Conn's dependencies.
type Config struct {
	Addresses []string
	CACert    []byte
	Tag       string
	Secret    string
	Logger    *slog.Logger
	// OnAddresses is called (from the reader) when the address list changes.
	OnAddresses func([]string)
	// OnRedirect is called (from the dialler) when a controller answers
	// the login with api.CodeRedirect: the model moved to target.
	OnRedirect func(target api.TargetController)
	// CallTimeout bounds one request (default 30s).
	CallTimeout time.Duration
}

// Conn is the agent's controller connection.
type Conn struct {
	cfg Config

	mu      sync.Mutex
	tlsCfg  *tls.Config
	addrs   []string
	next    int // rotation position
	ws      *websocket.Conn
	current string
	index   uint64
	nextID  uint64
	pending map[uint64]chan *frame
	state   *api.MachineState
	notify  chan struct{} // closed and replaced on every new state
	wmu     sync.Mutex    // serialises writes to ws
}

type frame struct {
	api.AgentFrame
	Result json.RawMessage `json:"result,omitempty"`
	State  json.RawMessage `json:"state,omitempty"`
}

// New validates cfg.
func New(cfg Config) (*Conn, error) {
	if len(cfg.Addresses) == 0 || cfg.Tag == "" || cfg.Logger == nil {
		return nil, errors.New("apiconn: Addresses, Tag and Logger are required")
	}
	if cfg.CallTimeout <= 0 {
		cfg.CallTimeout = 30 * time.Second
	}
	tlsCfg, err := TLSConfig(cfg.CACert)
	if err != nil {
		return nil, err
	}
	return &Conn{cfg: cfg, tlsCfg: tlsCfg,
		addrs: slices.Clone(cfg.Addresses), pending: map[uint64]chan *frame{}, notify: make(chan struct{})}, nil
}

// TLSConfig trusts caCert alone (none: the system's roots).
func TLSConfig(caCert []byte) (*tls.Config, error) {
	pool := x509.NewCertPool()
	if len(caCert) > 0 && !pool.AppendCertsFromPEM(caCert) {
		return nil, errors.New("apiconn: bad CA certificate")
	}
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}

// Switch moves the connection to another controller: addrs and caCert
// replace the known ones, and the open websocket, if any, is closed so
// that the next session dials the new controller from index 0.
func (c *Conn) Switch(addrs []string, caCert []byte) error {
	if len(addrs) == 0 {
		return errors.New("apiconn: a controller to switch to needs addresses")
	}
	tlsCfg, err := TLSConfig(caCert)
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.addrs, c.next, c.index, c.tlsCfg = slices.Clone(addrs), 0, 0, tlsCfg
	c.cfg.CACert = slices.Clone(caCert)
	ws := c.ws
	c.ws, c.current = nil, ""
	c.mu.Unlock()
	if ws != nil {
		ws.Close()
	}
	return nil
}

// Controller is the controller the connection uses: its addresses and
// CA.
func (c *Conn) Controller() (addrs []string, caCert []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.addrs), slices.Clone(c.cfg.CACert)
}

// Addresses returns the current controller address list.
func (c *Conn) Addresses() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.addrs)
}

// State returns the latest machine state (nil before the first frame) and
// a channel closed when a newer one arrives.
func (c *Conn) State() (*api.MachineState, <-chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state, c.notify
}

// Run keeps a connection open until ctx ends, failing over between
// controllers with backoff.
func (c *Conn) Run(ctx context.Context) error {
	err := supervise.Run(ctx, supervise.Config{Name: "controller-connection", Logger: c.cfg.Logger,
		Min: reconnectBackoffMin, Max: reconnectBackoffMax, HealthyAfter: healthySession, RestartOnSuccess: true,
		Message: "controller connection ended", Level: slog.LevelWarn}, func(ctx context.Context) error {
		addr := c.pick()
		if err := c.session(ctx, addr); err != nil {
			return fmt.Errorf("%s: %w", addr, err)
		}
		return nil
	})
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// The pause before dialling the next controller doubles from min to max;
// a session that lasted healthySession starts it again from min.
const (
	reconnectBackoffMin = 100 * time.Millisecond
	reconnectBackoffMax = 5 * time.Second
	healthySession      = 10 * time.Second
)

func (c *Conn) pick() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	a := c.addrs[c.next%len(c.addrs)]
	c.next++
	return a
}

// session dials addr and reads frames until the connection fails.
func (c *Conn) session(ctx context.Context, addr string) error {
	c.mu.Lock()
	since, tlsCfg := c.index, c.tlsCfg
	c.mu.Unlock()
	d := websocket.Dialer{TLSClientConfig: tlsCfg, HandshakeTimeout: 10 * time.Second, ReadBufferSize: 4 << 10}
	h := http.Header{}
	req, _ := http.NewRequest(http.MethodGet, "https://x", nil)
	req.SetBasicAuth(c.cfg.Tag, c.cfg.Secret)
	h.Set("Authorization", req.Header.Get("Authorization"))
	dctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	ws, resp, err := d.DialContext(dctx, "wss://"+addr+"/v1/agent/stream?since="+strconv.FormatUint(since, 10), h)
	cancel()
	if err != nil {
		if resp != nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusConflict {
				return c.refused(ctx, addr, tlsCfg, h, resp)
			}
			return fmt.Errorf("dial %s: %w (HTTP %d)", addr, err, resp.StatusCode)
		}
		return fmt.Errorf("dial %s: %w", addr, err)
	}
	ws.SetReadLimit(64 << 20)
	c.mu.Lock()
	if c.tlsCfg != tlsCfg { // switched meanwhile
		c.mu.Unlock()
		ws.Close()
		return fmt.Errorf("dial %s: the agent moved to another controller", addr)
	}
	c.ws, c.current = ws, addr
	c.mu.Unlock()
	c.cfg.Logger.Info("connected to controller", "addr", addr, "since", since)
	stop := context.AfterFunc(ctx, func() { ws.Close() })
	defer stop()
	err = c.readLoop(ws)
	ws.Close()
	c.mu.Lock()
	c.ws, c.current = nil, ""
	for id, ch := range c.pending {
		close(ch)
		delete(c.pending, id)
	}
	c.mu.Unlock()
	return err
}

func (c *Conn) readLoop(ws *websocket.Conn) error {
	for {
		// Keepalives arrive periodically; silence means a dead peer.
		ws.SetReadDeadline(time.Now().Add(90 * time.Second))
		_, data, err := ws.ReadMessage()
		if err != nil {
			return err
		}
		var f frame
		if err := json.Unmarshal(data, &f); err != nil {
			return fmt.Errorf("bad frame: %w", err)
		}
		c.mu.Lock()
		if c.ws != ws {
			// The agent switched to another controller: frames and
			// indexes of this connection are not the agent's.
			c.mu.Unlock()
			return errSwitched
		}
		c.index = max(c.index, f.Index)
		c.mu.Unlock()
		switch f.Type {
		case api.AgentFrameState:
			if err := c.setState(f.State); err != nil {
				return err
			}
		case api.AgentFrameResponse:
			c.mu.Lock()
			ch := c.pending[f.ID]
			delete(c.pending, f.ID)
			c.mu.Unlock()
			if ch != nil {
				ch <- &f
			}
		}
	}
}

func (c *Conn) setState(raw json.RawMessage) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var ms api.MachineState
	if err := dec.Decode(&ms); err != nil {
		return fmt.Errorf("bad state frame: %w", err)
	}
	c.mu.Lock()
	changed := len(ms.ControllerAddresses) > 0 && !slices.Equal(ms.ControllerAddresses, c.addrs)
	if changed {
		c.addrs = slices.Clone(ms.ControllerAddresses)
		c.next = 0
	}
	c.state = &ms
	close(c.notify)
	c.notify = make(chan struct{})
	c.mu.Unlock()
	if changed && c.cfg.OnAddresses != nil {
		c.cfg.OnAddresses(slices.Clone(ms.ControllerAddresses))
	}
	return nil
}

// Call sends one request and decodes its result into out (if not nil).
// A timed-out call drops the connection, so a wedged node is left.
func (c *Conn) Call(ctx context.Context, method string, params, out any) error {
	c.mu.Lock()
	ws := c.ws
	if ws == nil {
		c.mu.Unlock()
		return ErrDisconnected
	}
	c.nextID++
	id := c.nextID
	ch := make(chan *frame, 1)
	c.pending[id] = ch
	c.mu.Unlock()
	data, err := json.Marshal(api.AgentRequest{ID: id, Method: method, Params: params})
	if err != nil {
		return err
	}
	c.wmu.Lock()
	ws.SetWriteDeadline(time.Now().Add(10 * time.Second))
	err = ws.WriteMessage(websocket.TextMessage, data)
	c.wmu.Unlock()
	if err != nil {
		ws.Close()
		return fmt.Errorf("%w: %v", ErrDisconnected, err)
	}
	timer := time.NewTimer(c.cfg.CallTimeout)
	defer timer.Stop()
	select {
	case f, ok := <-ch:
		if !ok {
			return ErrDisconnected
		}
		if f.Error != nil {
			return f.Error
		}
		if out != nil && len(f.Result) > 0 {
			dec := json.NewDecoder(bytes.NewReader(f.Result))
			dec.UseNumber()
			return dec.Decode(out)
		}
		return nil
	case <-ctx.Done():
		c.forget(id)
		return ctx.Err()
	case <-timer.C:
		c.forget(id)
		c.cfg.Logger.Warn("controller request timed out; reconnecting", "method", method)
		ws.Close()
		return fmt.Errorf("%w: %s timed out", ErrDisconnected, method)
	}
}

func (c *Conn) forget(id uint64) {
	c.mu.Lock()
	delete(c.pending, id)
	c.mu.Unlock()
}

// Current is the address of the node connected to, or "".
func (c *Conn) Current() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.current
}

// HTTPClient returns a client for the agent's plain HTTP routes (charm
// downloads), trusting the controller CA.
func (c *Conn) HTTPClient() *http.Client {
	c.mu.Lock()
	defer c.mu.Unlock()
	return &http.Client{Timeout: 5 * time.Minute, Transport: &http.Transport{TLSClientConfig: c.tlsCfg}}
}

// Download fetches the charm archive sha256 from any controller.
func (c *Conn) Download(ctx context.Context, sha string) ([]byte, error) {
	var data []byte
	err := c.fetch(ctx, "/v1/agent/charms/"+sha, func(resp *http.Response) (err error) {
		data, err = readBody(resp)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("download charm %s: %w", sha, err)
	}
	return data, nil
}

// DownloadResource fetches resource content sha256 from any controller
// into the file dst, streaming.
func (c *Conn) DownloadResource(ctx context.Context, sha, dst string) error {
	err := c.fetch(ctx, "/v1/agent/resources/"+sha, func(resp *http.Response) error {
		return saveBody(resp, dst)
	})
	if err != nil {
		return fmt.Errorf("download resource %s: %w", sha, err)
	}
	return nil
}

// fetch GETs path from the current controller, then the others, until
// take accepts an answer.
func (c *Conn) fetch(ctx context.Context, path string, take func(*http.Response) error) error {
	var lastErr error
	hc := c.HTTPClient()
	defer hc.CloseIdleConnections()
	addrs := c.Addresses()
	if cur := c.Current(); cur != "" {
		addrs = append([]string{cur}, addrs...)
	}
	for _, a := range addrs {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+a+path, nil)
		if err != nil {
			return err
		}
		req.SetBasicAuth(c.cfg.Tag, c.cfg.Secret)
		resp, err := hc.Do(req)
		if err != nil {
			lastErr = err
			continue
		}
		if lastErr = take(resp); lastErr == nil {
			return nil
		}
	}
	return lastErr
}
