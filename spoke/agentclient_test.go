package spoke

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/droverhq/drover/api"
)

// testAgent is a machine agent's connection as a test drives it.
type testAgent struct {
	t  *testing.T
	ws *websocket.Conn

	mu     sync.Mutex
	state  *api.MachineState
	index  uint64
	frames int
	notify chan struct{} // closed and replaced on every frame
	resp   map[uint64]chan *api.AgentFrame
	nextID uint64
	done   chan struct{}
}

func dialAgent(ctx context.Context, addr string, ca []byte, tag, secret string, since uint64) (*testAgent, *http.Response, error) {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	d := websocket.Dialer{TLSClientConfig: &tls.Config{RootCAs: pool}, HandshakeTimeout: 10 * time.Second}
	h := http.Header{}
	req, _ := http.NewRequest("GET", "https://x", nil)
	req.SetBasicAuth(tag, secret)
	h.Set("Authorization", req.Header.Get("Authorization"))
	ws, resp, err := d.DialContext(ctx, "wss://"+addr+"/v1/agent/stream?since="+strconv.FormatUint(since, 10), h)
	if err != nil {
		return nil, resp, err
	}
	a := &testAgent{ws: ws, notify: make(chan struct{}), resp: map[uint64]chan *api.AgentFrame{}, done: make(chan struct{})}
	go a.read()
	return a, resp, nil
}

func (a *testAgent) read() {
	defer close(a.done)
	for {
		var f struct {
			api.AgentFrame
			Result json.RawMessage `json:"result"`
		}
		if err := a.ws.ReadJSON(&f); err != nil {
			a.mu.Lock()
			close(a.notify)
			a.notify = nil
			a.mu.Unlock()
			return
		}
		a.mu.Lock()
		switch f.Type {
		case api.AgentFrameState:
			a.state, a.index = f.State, f.Index
			a.frames++
		case api.AgentFrameResponse:
			if ch := a.resp[f.ID]; ch != nil {
				fr := f.AgentFrame
				fr.Result = f.Result
				ch <- &fr
				delete(a.resp, f.ID)
			}
		}
		close(a.notify)
		a.notify = make(chan struct{})
		a.mu.Unlock()
	}
}

func (a *testAgent) close() {
	a.ws.Close()
	<-a.done
}

// waitState waits for a state frame satisfying cond.
func (a *testAgent) waitState(t *testing.T, what string, cond func(*api.MachineState) bool) *api.MachineState {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	for {
		a.mu.Lock()
		st, ch := a.state, a.notify
		a.mu.Unlock()
		if st != nil && cond(st) {
			return st
		}
		if ch == nil {
			t.Fatalf("%s: connection closed", what)
		}
		select {
		case <-ch:
		case <-ctx.Done():
			b, _ := json.MarshalIndent(st, "", " ")
			t.Fatalf("%s: not reached; last state %s", what, b)
		}
	}
}

// call sends a request and decodes its result into out (if not nil).
func (a *testAgent) call(method string, params, out any) error {
	a.mu.Lock()
	a.nextID++
	id := a.nextID
	ch := make(chan *api.AgentFrame, 1)
	a.resp[id] = ch
	a.mu.Unlock()
	if err := a.ws.WriteJSON(api.AgentRequest{ID: id, Method: method, Params: params}); err != nil {
		return err
	}
	select {
	case f := <-ch:
		if f.Error != nil {
			return f.Error
		}
		if out != nil {
			return json.Unmarshal(f.Result.(json.RawMessage), out)
		}
		return nil
	case <-a.done:
		return fmt.Errorf("connection closed")
	case <-time.After(20 * time.Second):
		return fmt.Errorf("%s: no answer", method)
	}
}

func testHTTPClient(ca string) *http.Client {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM([]byte(ca))
	return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
}
