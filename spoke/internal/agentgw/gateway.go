// Package agentgw is the agent gateway: each machine agent holds one
// websocket (GET /v1/agent/stream) over which it receives its machine's
// whole state and sends requests (status, leadership, relation scopes and
// settings, tasks, logs), which become raft commands through the
// controller node's proposer.
//
// One reader goroutine lives as long as the connection and answers
// requests in order; a writer goroutine exists only while something is
// due (an answer, which waits in a four-slot channel, a possibly changed
// state, a keepalive) and exits when nothing is, so an idle connection
// costs one goroutine. Waking a connection sets a flag under its lock and
// starts the writer if none runs: writes to one connection stay serial,
// and wakes coalesce. State frames are whole: the writer rebuilds the
// machine's api.MachineState from a fresh store snapshot, hashes its JSON,
// and sends it only if the hash differs from the last one sent; so a
// reconnecting agent loses nothing by missing intermediate frames.
//
// Fan-out. One agentHub per node holds a single event-broker subscription
// (Gateway.Run, a supervised node worker) and the connections grouped by
// model. For each batch it visits only the connections of the batch's
// models and, for each, tests the events against the interest the
// connection recorded at its last build (its machine, units, their
// applications, the relations they see with each relation's remote
// application, the applications one of its units led). A relation-data
// write by web/3 therefore wakes the kv units and web's peers, not every
// web unit; a lease renewal wakes only the holder's machine. The hub never
// waits for a connection; while a connection is between its snapshot and
// publishing the new interest, every event of its model wakes it again, so
// no change is lost in between. Keepalives come from one hub ticker that
// wakes every connection: an idle connection owns no timer. A writer that
// cannot write a frame within writeTimeout ends the connection; the agent
// reconnects (since=N) and gets the current state. Gateway.Close shuts
// every connection through the hub.
//
// Building is cheap when one change wakes many connections: the parts of a
// state that do not depend on the machine (model settings, an
// application's config, lease and relations, a non-container relation as
// its application's units see it) are computed once per store version and
// shared (buildMemo), and frames are encoded without reflection
// (appendMachineState, byte-identical to encoding/json).
//
// Memory per idle connection is kept small: one goroutine, 512-byte read
// buffers, write buffers and frames taken from shared pools only while
// writing, no per-connection timers, no copy of the last state (only its
// hash).
package agentgw

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/spoke/internal/credential"
	"github.com/droverhq/drover/spoke/internal/state"
	"github.com/droverhq/drover/spoke/internal/state/stream"
)

// Proposer is what the gateway needs of the controller node: its replica
// and event broker to read, and raft to write through.
type Proposer interface {
	Store() *state.Store
	Events() *stream.Broker
	// Propose replicates a command (forwarding to the raft leader) and
	// returns the FSM's value and the command's raft index.
	Propose(ctx context.Context, t state.MessageType, req any) (any, uint64, error)
	// WaitRead waits until the local replica may serve a read that
	// reflects minIndex (and, if consistent, every acknowledged write).
	WaitRead(ctx context.Context, minIndex uint64, consistent bool) (uint64, error)
	// CatchUp waits until the local replica has applied what this node
	// knows is committed, with no message and no log entry.
	CatchUp(ctx context.Context) error
	// HeardCommit waits until the node knows of a newer commit index
	// than known (or ctx ends); heard says whether it does.
	HeardCommit(ctx context.Context, known uint64) (commit uint64, heard bool)
	// IsLeader reports whether this node believes it leads.
	IsLeader() bool
}

// Config holds the gateway's dependencies.
type Config struct {
	Proposer Proposer
	Logger   *slog.Logger
	Now      func() time.Time
	// KeepaliveInterval is how long a connection may stay silent before
	// it sends a keepalive.
	KeepaliveInterval time.Duration
	// CharmDefaults returns a charm's config defaults (the API server's
	// parsed-charm cache).
	CharmDefaults func(*api.Charm) (map[string]any, error)
	// AppendLog records an agent's log line in the node's debug log.
	AppendLog func(model string, rec api.LogRecord)
	// Limiter throttles failed agent authentications (shared with the API
	// server's users; default: a limiter of the gateway's own).
	Limiter *credential.Limiter
}

// writeTimeout bounds one frame write: an agent slower than this is cut
// off (it reconnects with since=N); the hub never waits for it.
const writeTimeout = 10 * time.Second

// Gateway serves the agent streams of one controller node.
type Gateway struct {
	cfg Config
	b   Proposer
	log *slog.Logger
	hub *agentHub
	// memo shares machine-state parts between agent connections.
	memo buildMemo
	// conns counts connection goroutines, which outlive their handlers;
	// Close waits for them.
	conns sync.WaitGroup
}

// New returns a gateway; Run feeds it, Close ends it.
func New(cfg Config) (*Gateway, error) {
	if cfg.Proposer == nil || cfg.Logger == nil || cfg.Now == nil || cfg.KeepaliveInterval <= 0 ||
		cfg.CharmDefaults == nil || cfg.AppendLog == nil {
		return nil, errors.New("agentgw: Proposer, Logger, Now, KeepaliveInterval, CharmDefaults and AppendLog are required")
	}
	if cfg.Limiter == nil {
		cfg.Limiter = credential.NewLimiter(credential.DefaultLimits, cfg.Now)
	}
	return &Gateway{cfg: cfg, b: cfg.Proposer, log: cfg.Logger, hub: newAgentHub()}, nil
}

// Close shuts every connection and waits for their goroutines.
func (g *Gateway) Close() {
	g.hub.closeAll()
	g.conns.Wait()
}

func (g *Gateway) now() time.Time { return g.cfg.Now().UTC() }

func (g *Gateway) keepaliveInterval() time.Duration { return g.cfg.KeepaliveInterval }

// unitTagOf is "unit-app-N" for "app/N", the entity a unit's log lines
// name.
func unitTagOf(unit string) string { return "unit-" + strings.ReplaceAll(unit, "/", "-") }
