package agentgw

import (
	"context"
	"encoding/json"
	"errors"
	"hash/fnv"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/spoke/internal/credential"
	"github.com/droverhq/drover/spoke/internal/reply"
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

// agentConn is one machine agent's websocket. Its reader goroutine lives as
// long as the connection and serves requests in order; a writer goroutine
// exists only while there is something to send (see the package comment).
type agentConn struct {
	g       *Gateway
	ws      *websocket.Conn
	model   string
	machine string
	cancel  context.CancelFunc   // ends the reader's context
	out     chan *api.AgentFrame // responses from the reader
	last    uint64               // hash of the last state sent; the one writer's own

	// mu guards the fields below; the hub reads and sets them.
	mu        sync.Mutex
	building  bool
	in        interest
	dirty     bool // the state may have changed since the last build
	keepalive bool // a keepalive frame is due
	writing   bool // a writer goroutine runs
	closed    bool // the connection is done: no more writers
}

// tag is the credential tag the connection authenticated as.
func (c *agentConn) tag() string { return "machine-" + c.model + "-" + c.machine }

// poke says "your state may have changed".
func (c *agentConn) poke() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dirty = true
	c.startWriterLocked()
}

// startWriterLocked starts the writer unless it runs. Callers hold c.mu,
// and either are c's reader or hold the hub's lock with c registered, so
// the reader has not yet left and Gateway.conns is above zero for the Add.
func (c *agentConn) startWriterLocked() {
	if c.writing || c.closed {
		return
	}
	c.writing = true
	c.g.conns.Add(1)
	go c.writer() // joined by Gateway.Close
}

// shut ends the connection: the reader's read fails, a writer's write
// fails, and no writer starts again.
func (c *agentConn) shut() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.cancel()
	c.ws.Close()
}

// Authenticate checks a machine agent's Basic credentials and returns
// its model and machine. Failures are charged to the source address and
// the tag; over the limit it returns a *credential.ThrottledError, which
// credential.Refusal turns into the answer. A model being imported is
// served to no agent (CodeMigrating); one migrated away answers
// CodeRedirect, naming its new controller.
func (g *Gateway) Authenticate(r *http.Request) (model, machine string, err error) {
	cred, machine, err := g.checkAgent(r)
	if err != nil {
		return "", "", err
	}
	m, err := g.b.Store().Snapshot().ModelByUUID(cred.ModelUUID)
	if err != nil {
		return "", "", err
	}
	switch mig := modelMigration(m); {
	case m.Importing():
		// Its agents still run against the source until the migration
		// activates it.
		return "", "", api.Errorf(api.CodeMigrating, "model %q is being migrated to this controller (migration %s): its agents are served once the migration activates it", m.Name, mig.ID)
	case mig != nil && mig.Role == api.MigrationSource && mig.Phase == api.MigrationSuccess && mig.Target != nil:
		return "", "", api.Redirect(m.Name, *mig.Target)
	}
	// Copies, so the connection does not pin the decoded header.
	return cred.ModelUUID, strings.Clone(machine), nil
}

func modelMigration(m *api.Model) *api.ModelMigration {
	if m == nil {
		return nil
	}
	return m.Migration
}

// checkAgent checks a machine agent's Basic credentials against the
// credentials table, whatever its model's state, and returns the
// credential and the machine its tag names.
func (g *Gateway) checkAgent(r *http.Request) (*api.Credential, string, error) {
	tag, secret, ok := r.BasicAuth()
	if !ok || !strings.HasPrefix(tag, "machine-") {
		return nil, "", api.Errorf(api.CodeUnauthorized, "authentication required: pass the machine agent's tag and secret")
	}
	addr := credential.SourceAddr(r.RemoteAddr)
	if te := g.cfg.Limiter.Allow(addr, tag); te != nil {
		return nil, "", te
	}
	var cred *api.Credential
	ok, err := credential.Check(r.Context(), g.b, func() (bool, bool, error) {
		var err error
		cred, err = g.b.Store().Snapshot().CredentialByTag(tag)
		return err == nil && cred != nil && cred.ModelUUID != "" && credential.SecretMatches(secret, cred.Hash), cred != nil, err
	})
	if err != nil {
		return nil, "", err
	}
	if !ok {
		if redirect := g.reapedRedirect(tag, secret); redirect != nil {
			return nil, "", redirect
		}
		g.cfg.Limiter.Fail(addr, tag)
		return nil, "", api.Errorf(api.CodeUnauthorized, "invalid agent tag or secret")
	}
	machine, ok := strings.CutPrefix(tag, "machine-"+cred.ModelUUID+"-")
	if !ok || machine == "" {
		g.cfg.Limiter.Fail(addr, tag)
		return nil, "", api.Errorf(api.CodeUnauthorized, "invalid agent tag or secret")
	}
	return cred, machine, nil
}

// reapedRedirect is the redirect an agent of a model this controller
// reaped after migrating it away gets, once its secret matches the one
// the tombstone kept (an agent that was away through the migration); nil
// for any other tag or secret.
func (g *Gateway) reapedRedirect(tag, secret string) error {
	rest, _ := strings.CutPrefix(tag, "machine-")
	if len(rest) < 38 || rest[36] != '-' {
		return nil
	}
	tomb, err := g.b.Store().Snapshot().TombstoneByModel(rest[:36])
	if err != nil || tomb == nil {
		return nil
	}
	hash, ok := tomb.Agents[tag]
	if !ok || !credential.SecretMatches(secret, hash) {
		return nil
	}
	return api.Redirect(tomb.ModelName, tomb.Target)
}

// ServeStream serves GET /v1/agent/stream?since=N.
func (g *Gateway) ServeStream(w http.ResponseWriter, r *http.Request) {
	model, machine, err := g.Authenticate(r)
	if err != nil {
		reply.WriteError(w, r, credential.Refusal(w.Header(), err))
		return
	}
	since, err := reply.UintParam(r, "since", "want a raft index")
	if err != nil {
		reply.WriteError(w, r, err)
		return
	}
	if err := g.reachSince(r.Context(), since); err != nil {
		reply.WriteError(w, r, err)
		return
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
	c := &agentConn{g: g, ws: ws, model: model, machine: machine, cancel: cancel,
		out: make(chan *api.AgentFrame, 4)}
	c.in.machine = machine
	g.conns.Add(1)
	go func() { // the reader; joined by Gateway.Close
		defer g.conns.Done()
		c.run(ctx, since)
	}()
}

// sinceWait bounds how long an agent resuming from an index this node
// has not applied waits for it.
const sinceWait = 5 * time.Second

// reachSince waits, for at most sinceWait, until this replica has applied
// since, the index an agent failing over resumes after, so that its state
// never goes backwards (ADR 0028). A follower still behind then refuses
// as unavailable: the agent tries another node. The leader has applied
// every committed command, so an index beyond it is from another history
// (a restored controller): it serves the agent, whose stream starts with
// the state as it is.
func (g *Gateway) reachSince(ctx context.Context, since uint64) error {
	if since == 0 {
		return nil
	}
	wctx, cancel := context.WithTimeout(ctx, sinceWait)
	defer cancel()
	at, err := g.b.WaitRead(wctx, since, false)
	if err == nil || g.b.IsLeader() || ctx.Err() != nil {
		return nil
	}
	at, _ = g.b.WaitRead(ctx, 0, false) // waits for nothing
	return api.Errorf(api.CodeUnavailable, "this controller node has not reached raft index %d (it is at %d); try another node", since, at)
}

// run is the reader side of a connection: it registers with the hub, asks
// for the first state frame, and serves requests until the connection
// fails or the server closes.
func (c *agentConn) run(ctx context.Context, since uint64) {
	g := c.g
	defer c.shut()
	if !g.hub.register(c) {
		return // the server is closing
	}
	defer g.hub.unregister(c)
	c.poke()
	// Off the reader's stack, for the reason readLoop gives.
	g.conns.Add(1)
	go func() { // joined by Gateway.Close
		defer g.conns.Done()
		g.markMachineStarted(ctx, c.model, c.machine)
	}()
	c.readLoop(ctx)
}

// markMachineStarted records that the machine agent is connected.
func (g *Gateway) markMachineStarted(ctx context.Context, model, machine string) {
	mc, err := g.b.Store().Snapshot().MachineByID(model, machine)
	if err != nil || mc == nil || mc.AgentStatus.Status == "started" {
		return
	}
	_, _, err = g.b.Propose(ctx, state.SetStatusType, &state.SetStatusRequest{ModelUUID: model,
		Kind: api.StatusKindMachine, Entity: machine, Status: api.Status{Status: "started", Since: g.now()}})
	if err != nil {
		g.log.Debug("cannot mark machine started", "model", model, "machine", machine, "err", err)
	}
}

func (c *agentConn) write(data []byte) error {
	c.ws.SetWriteDeadline(time.Now().Add(writeTimeout))
	return c.ws.WriteMessage(websocket.TextMessage, data)
}

// writer sends what is due (responses first, then a changed state, then a
// keepalive) and exits when nothing is. A failed write ends the connection.
func (c *agentConn) writer() {
	defer c.g.conns.Done()
	for {
		// c.out is polled under c.mu: the reader queues an answer and then
		// takes c.mu to start a writer, so an answer is never stranded.
		var f *api.AgentFrame
		c.mu.Lock()
		select {
		case f = <-c.out:
		default:
		}
		dirty, keepalive := c.dirty, c.keepalive
		if f == nil && !dirty && !keepalive {
			c.writing = false
			c.mu.Unlock()
			return
		}
		if f == nil {
			c.dirty = false
			if !dirty {
				c.keepalive = false
			}
		}
		c.mu.Unlock()
		var err error
		switch {
		case f != nil:
			err = c.writeResponse(f)
		case dirty:
			err = c.writeState()
		default:
			err = c.writeKeepalive()
		}
		if err != nil {
			c.mu.Lock()
			c.writing, c.closed = false, true // no writer after a failed write
			c.mu.Unlock()
			if !errors.Is(err, net.ErrClosed) {
				c.g.log.Debug("agent stream ended", "model", c.model, "machine", c.machine, "err", err)
			}
			c.shut()
			return
		}
	}
}

func (c *agentConn) writeResponse(f *api.AgentFrame) error {
	data, err := json.Marshal(f)
	if err != nil {
		return err
	}
	return c.write(data)
}

func (c *agentConn) writeKeepalive() error {
	idx, _ := c.g.b.Store().Snapshot().LatestIndex()
	data, _ := json.Marshal(&api.AgentFrame{Type: api.AgentFrameKeepalive, Index: idx})
	return c.write(data)
}

// writeState sends the machine's state if it differs from the last sent.
func (c *agentConn) writeState() error {
	fp, h, err := c.build()
	if err != nil {
		return err
	}
	defer putFrame(fp)
	if h == c.last {
		return nil
	}
	if err := c.write(*fp); err != nil {
		return err
	}
	c.last = h
	return nil
}

// framePool recycles state frames: one is in use per writer, and only
// while it builds and writes.
var framePool = sync.Pool{New: func() any { b := make([]byte, 0, 2048); return &b }}

// putFrame recycles fp unless it grew large for one big state.
func putFrame(fp *[]byte) {
	if cap(*fp) <= 64<<10 {
		framePool.Put(fp)
	}
}

// build returns the state frame (from framePool; the caller puts it back)
// and the hash of its state.
func (c *agentConn) build() (*[]byte, uint64, error) {
	c.mu.Lock()
	c.building = true
	c.mu.Unlock()
	snap := c.g.b.Store().Snapshot()
	idx, err := snap.LatestIndex()
	if err != nil {
		return nil, 0, err
	}
	v := storeVersion{gen: snap.Generation(), index: idx}
	ms, in, err := c.g.buildMachineState(snap, v, &c.g.memo, c.model, c.machine, c.g.now())
	if err != nil {
		return nil, 0, err
	}
	c.mu.Lock()
	c.building, c.in = false, in
	c.mu.Unlock()
	fp := framePool.Get().(*[]byte)
	frame := append((*fp)[:0], `{"type":"state","index":`...)
	frame = strconv.AppendUint(frame, idx, 10)
	frame = append(frame, `,"state":`...)
	start := len(frame)
	if frame, err = appendMachineState(frame, ms); err != nil {
		putFrame(fp)
		return nil, 0, err
	}
	h := fnv.New64a()
	h.Write(frame[start:])
	*fp = append(frame, '}')
	return fp, h.Sum64(), nil
}

// agentRequestIn is an AgentRequest as received, params still raw.
type agentRequestIn struct {
	ID     uint64          `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// readLoop answers requests in order until the connection fails. An
// answer waits in c.out (four slots) for the writer.
//
// Each request is served on a short-lived goroutine that the reader waits
// for. The reader spends nearly all its life parked in ReadMessage, which
// needs a small stack; serving a request (a raft proposal, JSON) needs a
// deep one, and a stack only shrinks while it is four times what it uses,
// so a reader that served requests itself would keep twice the stack for
// the life of the connection.
func (c *agentConn) readLoop(ctx context.Context) {
	for {
		_, data, err := c.ws.ReadMessage()
		if err != nil {
			return
		}
		var f *api.AgentFrame
		var wg sync.WaitGroup
		wg.Go(func() { f = c.serve(ctx, data) })
		wg.Wait()
		select {
		case c.out <- f:
		case <-ctx.Done():
			return
		}
		c.mu.Lock()
		c.startWriterLocked()
		c.mu.Unlock()
	}
}

// serve answers one request.
func (c *agentConn) serve(ctx context.Context, data []byte) *api.AgentFrame {
	var req agentRequestIn
	f := &api.AgentFrame{Type: api.AgentFrameResponse}
	if err := json.Unmarshal(data, &req); err != nil {
		f.Error = api.Errorf(api.CodeBadRequest, "malformed agent request: %v", err)
		return f
	}
	f.ID = req.ID
	res, idx, err := c.g.handleAgentRequest(ctx, c, &req)
	f.Result, f.Index = res, idx
	if err != nil {
		f.Error = reply.APIError(err)
		if f.Error.Code == api.CodeInternal {
			c.g.log.Error("agent request failed", "method", req.Method, "model", c.model, "machine", c.machine, "err", err)
		}
	}
	return f
}
