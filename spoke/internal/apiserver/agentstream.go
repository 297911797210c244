package apiserver

import (
	"context"
	"encoding/json"
	"hash/fnv"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/spoke/internal/state"
)

// agentUpgrader keeps idle connections small: tiny read buffers and a
// write buffer borrowed from a shared pool only while a frame is written.
var agentUpgrader = websocket.Upgrader{
	ReadBufferSize:  512,
	WriteBufferSize: 4 << 10,
	WriteBufferPool: &sync.Pool{},
	// Agents are not browsers: they send no Origin.
	CheckOrigin: func(r *http.Request) bool { return r.Header.Get("Origin") == "" },
}

// maxAgentMessage bounds one request: a relation bag may be 16 MiB.
const maxAgentMessage = 20 << 20

// agentConn is one machine agent's websocket. The handler goroutine is the
// writer; one reader goroutine serves requests.
type agentConn struct {
	s       *Server
	ws      *websocket.Conn
	model   string
	machine string
	pokeCh  chan struct{}        // one slot: "your state may have changed"
	out     chan *api.AgentFrame // responses from the reader

	// mu guards the fields below; the hub reads them.
	mu       sync.Mutex
	building bool
	in       interest
}

func (c *agentConn) poke() {
	select {
	case c.pokeCh <- struct{}{}:
	default:
	}
}

// authenticateAgent checks a machine agent's Basic credentials and returns
// its model and machine.
func (s *Server) authenticateAgent(r *http.Request) (model, machine string, err error) {
	tag, secret, ok := r.BasicAuth()
	if !ok || !strings.HasPrefix(tag, "machine-") {
		return "", "", api.Errorf(api.CodeUnauthorized, "authentication required: pass the machine agent's tag and secret")
	}
	cred, err := s.b.Store().Snapshot().CredentialByTag(tag)
	if err != nil {
		return "", "", err
	}
	if cred == nil || cred.ModelUUID == "" || !checkSecret(secret, cred.Hash) {
		return "", "", api.Errorf(api.CodeUnauthorized, "invalid agent tag or secret")
	}
	machine, ok = strings.CutPrefix(tag, "machine-"+cred.ModelUUID+"-")
	if !ok || machine == "" {
		return "", "", api.Errorf(api.CodeUnauthorized, "invalid agent tag or secret")
	}
	return cred.ModelUUID, machine, nil
}

// agentStream serves GET /v1/agent/stream?since=N.
func (s *Server) agentStream(w http.ResponseWriter, r *http.Request) {
	model, machine, err := s.authenticateAgent(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	var since uint64
	if v := r.URL.Query().Get("since"); v != "" {
		if since, err = strconv.ParseUint(v, 10, 64); err != nil {
			writeError(w, r, badParam("since", v, "want a raft index"))
			return
		}
	}
	ws, err := agentUpgrader.Upgrade(w, r, nil)
	if err != nil {
		return // the upgrader has answered
	}
	ws.SetReadLimit(maxAgentMessage)
	// The connection outlives this handler: returning frees the HTTP
	// server's per-connection state (buffers, the handler's deep stack),
	// which would otherwise stay pinned for the life of an idle agent.
	ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	c := &agentConn{s: s, ws: ws, model: model, machine: machine,
		pokeCh: make(chan struct{}, 1), out: make(chan *api.AgentFrame, 4)}
	c.in.machine = machine
	s.conns.Add(2)
	go func() { // the writer; joined by Server.Close
		defer s.conns.Done()
		defer cancel()
		defer ws.Close()
		c.run(ctx, since)
	}()
	go func() { // the reader; joined by Server.Close
		defer s.conns.Done()
		c.readLoop(ctx, cancel)
	}()
}

// run is the writer side of a connection, from its first state frame on.
func (c *agentConn) run(ctx context.Context, since uint64) {
	s := c.s
	if since > 0 {
		// An agent failing over from a node that was ahead waits for this
		// replica to catch up, so its state never goes backwards.
		wctx, wcancel := context.WithTimeout(ctx, 5*time.Second)
		_, err := s.b.WaitRead(wctx, since, false)
		wcancel()
		if err != nil {
			s.log.Debug("agent resumed ahead of this replica", "model", c.model, "machine", c.machine, "since", since)
		}
	}
	s.agents.register(c)
	defer s.agents.unregister(c)
	c.poke()
	s.markMachineStarted(ctx, c.model, c.machine)
	if err := c.writeLoop(ctx); err != nil && ctx.Err() == nil {
		s.log.Debug("agent stream ended", "model", c.model, "machine", c.machine, "err", err)
	}
}

// markMachineStarted records that the machine agent is connected.
func (s *Server) markMachineStarted(ctx context.Context, model, machine string) {
	mc, err := s.b.Store().Snapshot().MachineByID(model, machine)
	if err != nil || mc == nil || mc.AgentStatus.Status == "started" {
		return
	}
	_, _, err = s.b.Propose(ctx, state.SetStatusType, &state.SetStatusRequest{ModelUUID: model,
		Kind: api.StatusKindMachine, Entity: machine, Status: api.Status{Status: "started", Since: s.now()}})
	if err != nil {
		s.log.Debug("cannot mark machine started", "model", model, "machine", machine, "err", err)
	}
}

func (c *agentConn) write(data []byte) error {
	c.ws.SetWriteDeadline(time.Now().Add(writeTimeout))
	return c.ws.WriteMessage(websocket.TextMessage, data)
}

func (c *agentConn) writeLoop(ctx context.Context) error {
	var last uint64 // hash of the last state sent
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-c.s.closing:
			return nil
		case f := <-c.out:
			data, err := json.Marshal(f)
			if err != nil {
				return err
			}
			if err := c.write(data); err != nil {
				return err
			}
		case <-c.s.agents.ticker():
			idx, _ := c.s.b.Store().Snapshot().LatestIndex()
			data, _ := json.Marshal(&api.AgentFrame{Type: api.AgentFrameKeepalive, Index: idx})
			if err := c.write(data); err != nil {
				return err
			}
		case <-c.pokeCh:
			data, h, err := c.build()
			if err != nil {
				return err
			}
			if h == last {
				continue
			}
			if err := c.write(data); err != nil {
				return err
			}
			last = h
		}
	}
}

// build returns the state frame and the hash of its state.
func (c *agentConn) build() ([]byte, uint64, error) {
	c.mu.Lock()
	c.building = true
	c.mu.Unlock()
	snap := c.s.b.Store().Snapshot()
	idx, err := snap.LatestIndex()
	if err != nil {
		return nil, 0, err
	}
	ms, in, err := c.s.buildMachineState(snap, c.model, c.machine, c.s.now())
	if err != nil {
		return nil, 0, err
	}
	c.mu.Lock()
	c.building, c.in = false, in
	c.mu.Unlock()
	body, err := json.Marshal(ms)
	if err != nil {
		return nil, 0, err
	}
	h := fnv.New64a()
	h.Write(body)
	frame := make([]byte, 0, len(body)+64)
	frame = append(frame, `{"type":"state","index":`...)
	frame = strconv.AppendUint(frame, idx, 10)
	frame = append(frame, `,"state":`...)
	frame = append(frame, body...)
	frame = append(frame, '}')
	return frame, h.Sum64(), nil
}

// agentRequestIn is an AgentRequest as received, params still raw.
type agentRequestIn struct {
	ID     uint64          `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// readLoop answers requests in order until the connection fails.
func (c *agentConn) readLoop(ctx context.Context, cancel context.CancelFunc) {
	defer cancel()
	for {
		_, data, err := c.ws.ReadMessage()
		if err != nil {
			return
		}
		var req agentRequestIn
		f := &api.AgentFrame{Type: api.AgentFrameResponse}
		if err := json.Unmarshal(data, &req); err != nil {
			f.Error = api.Errorf(api.CodeBadRequest, "malformed agent request: %v", err)
		} else {
			f.ID = req.ID
			res, idx, err := c.s.handleAgentRequest(ctx, c, &req)
			f.Result, f.Index = res, idx
			if err != nil {
				f.Error = toAPIError(err)
				if f.Error.Code == api.CodeInternal {
					c.s.log.Error("agent request failed", "method", req.Method, "model", c.model, "machine", c.machine, "err", err)
				}
			}
		}
		select {
		case c.out <- f:
		case <-ctx.Done():
			return
		}
	}
}
