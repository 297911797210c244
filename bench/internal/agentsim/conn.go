// Package agentsim simulates machine agents for the benchmarks: a model
// deployed through the hub whose machines are recorded as provisioned
// (manual machines, no process runs), and agent websockets that log in as
// those machines and speak the agent protocol (api/agentwire.go).
package agentsim

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/droverhq/drover/api"
)

// Conn is one simulated agent's websocket to a controller: a reader
// goroutine that keeps the latest machine state and hands responses to the
// one caller.
type Conn struct {
	WS *websocket.Conn
	// Initial is closed when the first state arrives, First is when
	// (set before Initial closes).
	Initial chan struct{}
	First   time.Time
	// States holds the latest machine state not yet taken.
	States chan *api.MachineState
	// Done is closed when the connection is gone.
	Done   chan struct{}
	resp   chan *api.AgentFrame
	nextID uint64
}

// WSDialer is shared by every simulated agent: small buffers, as
// agentbench's.
func WSDialer(ca []byte) websocket.Dialer {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	return websocket.Dialer{TLSClientConfig: &tls.Config{RootCAs: pool}, HandshakeTimeout: time.Minute,
		ReadBufferSize: 1024, WriteBufferSize: 512, WriteBufferPool: &sync.Pool{}}
}

// Dial opens the agent stream at addr as tag, with the dialer's CA.
func Dial(ctx context.Context, d *websocket.Dialer, addr, tag, secret string) (*Conn, error) {
	req, _ := http.NewRequest(http.MethodGet, "https://x", nil)
	req.SetBasicAuth(tag, secret)
	h := http.Header{"Authorization": req.Header["Authorization"]}
	ws, resp, err := d.DialContext(ctx, "wss://"+addr+"/v1/agent/stream", h)
	if err != nil {
		if resp != nil {
			return nil, fmt.Errorf("dial %s as %s: %w (HTTP %d)", addr, tag, err, resp.StatusCode)
		}
		return nil, fmt.Errorf("dial %s as %s: %w", addr, tag, err)
	}
	c := &Conn{WS: ws, Initial: make(chan struct{}), States: make(chan *api.MachineState, 1),
		resp: make(chan *api.AgentFrame, 1), Done: make(chan struct{})}
	go c.read() // ends when ws closes
	return c, nil
}

func (c *Conn) read() {
	defer close(c.Done)
	started := false
	for {
		_, data, err := c.WS.ReadMessage()
		if err != nil {
			return
		}
		var f api.AgentFrame
		if err := json.Unmarshal(data, &f); err != nil {
			continue
		}
		switch {
		case f.Type == "state" && f.State != nil:
			if !started {
				c.First = time.Now()
				started = true
				close(c.Initial)
			}
			select { // keep only the latest
			case <-c.States:
			default:
			}
			c.States <- f.State
		case f.Type == "response":
			select {
			case c.resp <- &f:
			default: // nobody waits for it (a call that gave up)
			}
		}
	}
}

// Call sends one request and waits for its answer.
func (c *Conn) Call(ctx context.Context, method string, params any) error {
	c.nextID++
	if err := c.WS.WriteJSON(api.AgentRequest{ID: c.nextID, Method: method, Params: params}); err != nil {
		return err
	}
	for {
		select {
		case f := <-c.resp:
			if f.ID != c.nextID {
				continue // the answer of an earlier call that gave up
			}
			if f.Error != nil {
				return fmt.Errorf("%s: %w", method, f.Error)
			}
			return nil
		case <-c.Done:
			return fmt.Errorf("%s: connection closed", method)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Close closes the websocket and waits for the reader to end.
func (c *Conn) Close() {
	c.WS.Close()
	<-c.Done
}
