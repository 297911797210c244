package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/droverhq/drover/api"
)

// conn is one simulated agent's websocket to a controller: a reader
// goroutine that keeps the latest machine state and hands responses to the
// one caller.
type conn struct {
	ws      *websocket.Conn
	initial chan struct{} // closed when the first state arrives
	first   time.Time     // when it arrived (set before initial closes)
	states  chan *api.MachineState
	resp    chan *api.AgentFrame
	done    chan struct{}
	nextID  uint64
}

// wsDialer is shared by every simulated agent: small buffers, as
// agentbench's.
func wsDialer(ca []byte) websocket.Dialer {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	return websocket.Dialer{TLSClientConfig: &tls.Config{RootCAs: pool}, HandshakeTimeout: time.Minute,
		ReadBufferSize: 1024, WriteBufferSize: 512, WriteBufferPool: &sync.Pool{}}
}

// dial opens the agent stream at addr as tag, with the dialer's CA.
func dial(ctx context.Context, d *websocket.Dialer, addr, tag, secret string) (*conn, error) {
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
	c := &conn{ws: ws, initial: make(chan struct{}), states: make(chan *api.MachineState, 1),
		resp: make(chan *api.AgentFrame, 1), done: make(chan struct{})}
	go c.read() // ends when ws closes
	return c, nil
}

func (c *conn) read() {
	defer close(c.done)
	started := false
	for {
		_, data, err := c.ws.ReadMessage()
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
				c.first = time.Now()
				started = true
				close(c.initial)
			}
			select { // keep only the latest
			case <-c.states:
			default:
			}
			c.states <- f.State
		case f.Type == "response":
			select {
			case c.resp <- &f:
			default: // nobody waits for it (a call that gave up)
			}
		}
	}
}

// call sends one request and waits for its answer.
func (c *conn) call(ctx context.Context, method string, params any) error {
	c.nextID++
	if err := c.ws.WriteJSON(api.AgentRequest{ID: c.nextID, Method: method, Params: params}); err != nil {
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
		case <-c.done:
			return fmt.Errorf("%s: connection closed", method)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (c *conn) close() {
	c.ws.Close()
	<-c.done
}

// minion is one simulated machine agent following the minion protocol
// (docs/decisions/0036-minion-protocol.md) as agent/internal/machine's
// minion does, without hooks to wait for (no operation ever runs, so it is
// idle at once): one report per phase; VALIDATION dials the target's
// PathAgentValidate with the agent's own credential, TLS verified against
// the target's CA alone; at SUCCESS it reports, then logs in to the target
// and holds its stream.
type minion struct {
	tag, secret string
	src, dst    *conn
	onTarget    time.Time            // when the target's first state arrived
	reportedAt  map[string]time.Time // by phase: when the source answered the report
}

// follow runs the protocol on the source's stream until the agent holds
// its state from the target.
func (mn *minion) follow(ctx context.Context) error {
	reported := map[string]bool{} // "<migration>/<phase>"
	mn.reportedAt = map[string]time.Time{}
	for {
		var st *api.MachineState
		select {
		case st = <-mn.src.states:
		case <-mn.src.done:
			return fmt.Errorf("%s: the source closed the stream before SUCCESS", mn.tag)
		case <-ctx.Done():
			return ctx.Err()
		}
		m := st.Migration
		if m == nil || reported[m.ID+"/"+m.Phase] {
			continue
		}
		rep := api.MinionReport{MigrationID: m.ID, Phase: m.Phase, Success: true}
		switch m.Phase {
		case api.MigrationQuiesce, api.MigrationSuccess:
		case api.MigrationValidation:
			if err := validate(ctx, m, mn.tag, mn.secret); err != nil {
				rep.Success, rep.Message = false, err.Error()
			}
		default:
			continue
		}
		if err := mn.src.call(ctx, api.AgentMigrationReport, rep); err != nil {
			if m.Phase != api.MigrationSuccess {
				return fmt.Errorf("%s: report %s: %w", mn.tag, m.Phase, err)
			}
		}
		reported[m.ID+"/"+m.Phase] = true
		mn.reportedAt[m.Phase] = time.Now()
		if m.Phase == api.MigrationSuccess {
			return mn.move(ctx, m.Target)
		}
	}
}

// move logs in to the target and waits for its first state.
func (mn *minion) move(ctx context.Context, t *api.TargetController) error {
	if t == nil || len(t.Addresses) == 0 {
		return fmt.Errorf("%s: SUCCESS names no target", mn.tag)
	}
	d := wsDialer([]byte(t.CACert))
	var errs []error
	for _, addr := range t.Addresses {
		c, err := dial(ctx, &d, addr, mn.tag, mn.secret)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		select {
		case <-c.initial:
		case <-c.done:
			errs = append(errs, fmt.Errorf("%s: the target closed the stream", mn.tag))
			continue
		case <-ctx.Done():
			c.close()
			return ctx.Err()
		}
		mn.dst, mn.onTarget = c, c.first
		mn.src.close()
		return nil
	}
	return errors.Join(errs...)
}

// validate dials the target's PathAgentValidate as the agent does: each
// address in turn, TLS verified against the target's CA alone, Basic
// auth, Juju's 10 tries from 100 ms ×1.6.
func validate(ctx context.Context, m *api.AgentMigration, tag, secret string) error {
	t := m.Target
	if t == nil || len(t.Addresses) == 0 || t.CACert == "" {
		return fmt.Errorf("migration %s names no target controller to validate against", m.ID)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM([]byte(t.CACert)) {
		return errors.New("the target controller's CA certificate does not parse")
	}
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	defer hc.CloseIdleConnections()
	body, _ := json.Marshal(api.AgentValidateRequest{MigrationID: m.ID})
	delay := 100 * time.Millisecond
	var last error
	for attempt := range 10 {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(delay):
			}
			delay = time.Duration(float64(delay) * 1.6)
		}
		for _, addr := range t.Addresses {
			if last = validateAt(ctx, hc, addr, tag, secret, body); last == nil {
				return nil
			}
		}
	}
	return fmt.Errorf("cannot log in to the target controller: %w", last)
}

func validateAt(ctx context.Context, hc *http.Client, addr, tag, secret string, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "https://"+addr+api.PathAgentValidate, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.SetBasicAuth(tag, secret)
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNoContent {
		return nil
	}
	var e api.Error
	if json.NewDecoder(resp.Body).Decode(&e) == nil && e.Code != "" {
		return fmt.Errorf("%s: %w", addr, &e)
	}
	return fmt.Errorf("%s: HTTP %d", addr, resp.StatusCode)
}
