package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"github.com/droverhq/drover/api"
)

// dialer opens simulated agents' websockets with small buffers.
type dialer struct {
	ws websocket.Dialer
}

func newDialer(ca []byte) *dialer {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	return &dialer{ws: websocket.Dialer{
		TLSClientConfig:  &tls.Config{RootCAs: pool, ClientSessionCache: tls.NewLRUClientSessionCache(64)},
		HandshakeTimeout: time.Minute, ReadBufferSize: 512, WriteBufferSize: 512,
		WriteBufferPool: &sync.Pool{},
	}}
}

// agent is one simulated machine agent: a reader goroutine and nothing else.
type agent struct {
	ws      *websocket.Conn
	initial chan struct{}
	resp    chan *api.AgentFrame
	nextID  uint64
	arrived atomic.Int64 // wall clock (UnixNano) of the frame reaching target

	// mu guards the fields below.
	mu        sync.Mutex
	started   bool
	units     []string // from the first state frame
	target    int64
	reached   chan struct{} // closed by the reader at the target
	reachedCh chan struct{} // the same channel, for the waiter
	done      chan struct{}
}

func (d *dialer) dial(ctx context.Context, addr, tag, secret string) (*agent, error) {
	req, _ := http.NewRequest("GET", "https://x", nil)
	req.SetBasicAuth(tag, secret)
	h := http.Header{"Authorization": req.Header["Authorization"]}
	ws, resp, err := d.ws.DialContext(ctx, "wss://"+addr+"/v1/agent/stream", h)
	if err != nil {
		if resp != nil {
			return nil, fmt.Errorf("dial %s: %w (HTTP %d)", tag, err, resp.StatusCode)
		}
		return nil, fmt.Errorf("dial %s: %w", tag, err)
	}
	a := &agent{ws: ws, initial: make(chan struct{}), resp: make(chan *api.AgentFrame, 1), done: make(chan struct{})}
	go a.read() // ends when ws closes
	return a, nil
}

var appVersionKey = []byte(`"app-version":`)

func (a *agent) read() {
	defer close(a.done)
	for {
		_, data, err := a.ws.ReadMessage()
		if err != nil {
			return
		}
		switch {
		case bytes.HasPrefix(data, []byte(`{"type":"state"`)):
			v := int64(-1)
			if i := bytes.Index(data, appVersionKey); i >= 0 {
				rest := data[i+len(appVersionKey):]
				j := bytes.IndexFunc(rest, func(r rune) bool { return r < '0' || r > '9' })
				if j > 0 {
					v, _ = strconv.ParseInt(string(rest[:j]), 10, 64)
				}
			}
			a.mu.Lock()
			if !a.started {
				var f api.AgentFrame
				if err := json.Unmarshal(data, &f); err == nil && f.State != nil {
					for u := range f.State.Units {
						a.units = append(a.units, u)
					}
				}
				a.started = true
				close(a.initial)
			}
			if a.reached != nil && v >= a.target {
				a.arrived.Store(time.Now().UnixNano())
				close(a.reached)
				a.reached = nil
			}
			a.mu.Unlock()
		case bytes.HasPrefix(data, []byte(`{"type":"response"`)):
			var f api.AgentFrame
			if err := json.Unmarshal(data, &f); err == nil {
				a.resp <- &f
			}
		}
	}
}

// arm starts waiting for app-version target; reachedCh closes when a
// frame carries it.
func (a *agent) arm(target int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.target = target
	ch := make(chan struct{})
	a.reached = ch
	a.reachedCh = ch
}

func (a *agent) call(method string, params any) error {
	a.nextID++
	if err := a.ws.WriteJSON(api.AgentRequest{ID: a.nextID, Method: method, Params: params}); err != nil {
		return err
	}
	select {
	case f := <-a.resp:
		if f.Error != nil {
			return fmt.Errorf("%s: %w", method, f.Error)
		}
		return nil
	case <-a.done:
		return fmt.Errorf("%s: connection closed", method)
	case <-time.After(time.Minute):
		return fmt.Errorf("%s: no answer", method)
	}
}

func (a *agent) close() {
	a.ws.Close()
	<-a.done
}
