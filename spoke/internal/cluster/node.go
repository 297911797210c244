// Package cluster runs a controller node's raft member: the durable log
// (bbolt), file snapshots, the mutual-TLS transport, membership changes,
// and the read index used for linearizable reads (readindex.go). It knows nothing about the
// model state: it replicates opaque commands into the FSM it is given.
//
// Invariants: a command is acknowledged only after the leader applied it to
// its FSM, so an acknowledged write is on a quorum of durable logs; a
// consistent read on any node returns state at least as new as every write
// acknowledged before the read began.
package cluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/droverhq/drover/internal/coalesce"
)

// Errors callers test with errors.Is.
var (
	ErrNotLeader = errors.New("cluster: not the raft leader")
	ErrNoLeader  = errors.New("cluster: no raft leader")
	// ErrUnknownOutcome means the command may or may not have been
	// committed (leadership was lost after it was appended). Never retry
	// such a command blindly.
	ErrUnknownOutcome = errors.New("cluster: leadership lost; outcome unknown")
	// ErrShutdown means the node is shutting down.
	ErrShutdown = errors.New("cluster: node is shut down")
)

// logCacheEntries is how many recent log entries are kept in memory for
// replication (a group-committed entry holds up to maxBatch commands).
const logCacheEntries = 256

// Config is what a Node needs. Every field without a default is required.
type Config struct {
	NodeID    string
	DataDir   string // raft/ below it holds the log and snapshots
	BindAddr  string // raft listen address, host:port
	Advertise string // defaults to BindAddr
	ServerTLS *tls.Config
	PeerTLS   *tls.Config
	FSM       raft.FSM
	Logger    *slog.Logger
	// Bootstrap makes a new one-node cluster when the data dir has no state.
	Bootstrap bool
	// Faults, when set, injects network partitions (tests only).
	Faults *Faults
	// Timing; zero values pick production defaults.
	HeartbeatTimeout time.Duration
	ElectionTimeout  time.Duration
	// SnapshotThreshold is how many logs between snapshots (default 8192).
	SnapshotThreshold uint64
}

func (c *Config) validate() error {
	switch {
	case c.NodeID == "":
		return errors.New("cluster: NodeID is required")
	case c.DataDir == "":
		return errors.New("cluster: DataDir is required")
	case c.BindAddr == "":
		return errors.New("cluster: BindAddr is required")
	case c.ServerTLS == nil || c.PeerTLS == nil:
		return errors.New("cluster: ServerTLS and PeerTLS are required")
	case c.FSM == nil:
		return errors.New("cluster: FSM is required")
	case c.Logger == nil:
		return errors.New("cluster: Logger is required")
	}
	if c.Advertise == "" {
		c.Advertise = c.BindAddr
	}
	return nil
}

// Node is one raft member.
type Node struct {
	cfg   Config
	raft  *raft.Raft
	trans *raft.NetworkTransport
	log   *logStore
	fsm   *trackedFSM
	batch *batcher
	// cache reads recent entries from memory, older ones from log.
	cache raft.LogStore
	reads *coalesce.Rounds[uint64]
}

// Open starts the raft member on its data dir, bootstrapping a new cluster
// if asked to and the data dir is empty. A restarted node resumes from its
// log and snapshots and rejoins by itself.
func Open(cfg Config) (*Node, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	dir := filepath.Join(cfg.DataDir, "raft")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	hlog := hclog.New(&hclog.LoggerOptions{Name: "raft", Level: hclog.Warn, Output: slogWriter{cfg.Logger}})
	logs, err := openLogStore(filepath.Join(dir, "log.db"))
	if err != nil {
		return nil, err
	}
	closeLogs := func() { logs.Close() }
	snaps, err := raft.NewFileSnapshotStoreWithLogger(dir, 2, hlog)
	if err != nil {
		closeLogs()
		return nil, fmt.Errorf("open snapshot store: %w", err)
	}
	ln, err := net.Listen("tcp", cfg.BindAddr)
	if err != nil {
		closeLogs()
		return nil, fmt.Errorf("raft listen %s: %w", cfg.BindAddr, err)
	}
	adv, err := net.ResolveTCPAddr("tcp", cfg.Advertise)
	if err != nil {
		ln.Close()
		closeLogs()
		return nil, fmt.Errorf("raft advertise address: %w", err)
	}
	if cfg.Faults != nil {
		cfg.Faults.Register(cfg.NodeID, cfg.Advertise)
	}
	stream := newStreamLayer(ln, adv, cfg.ServerTLS, cfg.PeerTLS, cfg.NodeID, cfg.Faults)
	trans := raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream: stream, MaxPool: 3, Timeout: 10 * time.Second, Logger: hlog,
	})
	rc := raftConfig(cfg, hlog)
	if cfg.Bootstrap {
		if err := bootstrap(rc, logs, snaps, trans); err != nil {
			trans.Close()
			closeLogs()
			return nil, err
		}
	}
	fsm := newTrackedFSM(cfg.FSM)
	// The leader reads every entry back once per follower to replicate
	// it; the cache serves those reads from memory instead of a bbolt
	// transaction and a copy each (entries enter it only once stored).
	cached, err := raft.NewLogCache(logCacheEntries, logs)
	if err != nil {
		trans.Close()
		closeLogs()
		return nil, err
	}
	r, err := raft.NewRaft(rc, fsm, cached, logs, snaps, trans)
	if err != nil {
		trans.Close()
		closeLogs()
		return nil, fmt.Errorf("start raft: %w", err)
	}
	node := &Node{cfg: cfg, raft: r, trans: trans, log: logs, fsm: fsm, cache: cached}
	node.batch = &batcher{n: node}
	node.reads = coalesce.New(node.readIndexRound)
	return node, nil
}

// raftConfig is hashicorp/raft's configuration for this node: its
// defaults, larger append batches, and the timings cfg overrides.
func raftConfig(cfg Config, hlog hclog.Logger) *raft.Config {
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(cfg.NodeID)
	rc.Logger = hlog
	rc.MaxAppendEntries = 512
	rc.BatchApplyCh = true
	if cfg.HeartbeatTimeout > 0 {
		rc.HeartbeatTimeout = cfg.HeartbeatTimeout
		rc.LeaderLeaseTimeout = cfg.HeartbeatTimeout / 2
	}
	if cfg.ElectionTimeout > 0 {
		rc.ElectionTimeout = cfg.ElectionTimeout
	}
	if cfg.SnapshotThreshold > 0 {
		rc.SnapshotThreshold = cfg.SnapshotThreshold
		rc.TrailingLogs = cfg.SnapshotThreshold
	}
	return rc
}

// bootstrap makes this node the single voter of a new cluster, unless
// its stores already hold raft state.
func bootstrap(rc *raft.Config, logs *logStore, snaps raft.SnapshotStore, trans raft.Transport) error {
	has, err := raft.HasExistingState(logs, logs, snaps)
	if err != nil || has {
		return err
	}
	conf := raft.Configuration{Servers: []raft.Server{{
		ID: rc.LocalID, Address: trans.LocalAddr(), Suffrage: raft.Voter,
	}}}
	if err := raft.BootstrapCluster(rc, logs, logs, snaps, trans, conf); err != nil {
		return fmt.Errorf("bootstrap raft: %w", err)
	}
	return nil
}

// ID is this node's raft server ID.
func (n *Node) ID() string { return n.cfg.NodeID }

// Addr is the advertised raft address.
func (n *Node) Addr() string { return n.cfg.Advertise }

// Raft exposes the raft instance for observers (metrics, leadership).
func (n *Node) Raft() *raft.Raft { return n.raft }

// IsLeader reports whether this node believes it leads.
func (n *Node) IsLeader() bool { return n.raft.State() == raft.Leader }

// Leader returns the current leader's ID and raft address, or ErrNoLeader.
func (n *Node) Leader() (id, addr string, err error) {
	a, i := n.raft.LeaderWithID()
	if i == "" {
		return "", "", ErrNoLeader
	}
	return string(i), string(a), nil
}

// Apply replicates cmd and returns the FSM's response once the leader has
// applied it. On a follower it returns ErrNotLeader: callers forward.
func (n *Node) Apply(ctx context.Context, cmd []byte) (any, uint64, error) {
	if n.raft.State() != raft.Leader {
		return nil, 0, ErrNotLeader
	}
	return n.batch.propose(ctx, cmd)
}

// AppliedIndex is the index of the last command applied to the local FSM.
func (n *Node) AppliedIndex() uint64 { return n.fsm.applied.Load() }

// LogMark names the log entry at index in its history, if the log still
// holds it (entries a snapshot has compacted are gone): its raft term and
// when the leader appended it, to the nanosecond. Two histories that
// diverged (a node restored from an older copy) differ there where they
// differ at all; the term alone does not tell them apart when both were
// restarted once from the same state.
func (n *Node) LogMark(index uint64) (string, bool) {
	var l raft.Log
	if index == 0 || n.log.GetLog(index, &l) != nil {
		return "", false
	}
	var at int64
	if !l.AppendedAt.IsZero() {
		at = l.AppendedAt.UnixNano()
	}
	return strconv.FormatUint(l.Term, 10) + "." + strconv.FormatInt(at, 10), true
}

// WaitApplied blocks until the local FSM has applied index, or ctx ends.
func (n *Node) WaitApplied(ctx context.Context, index uint64) error {
	return n.fsm.wait(ctx, index)
}

// Server is one member of the raft configuration.
type Server struct {
	ID      string
	Address string
	Voter   bool
}

// Servers returns the current raft configuration.
func (n *Node) Servers() ([]Server, error) {
	f := n.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return nil, mapRaftErr(err)
	}
	var out []Server
	for _, s := range f.Configuration().Servers {
		out = append(out, Server{ID: string(s.ID), Address: string(s.Address), Voter: s.Suffrage == raft.Voter})
	}
	return out, nil
}

// AddVoter adds (or re-addresses) a voting member. Leader only.
func (n *Node) AddVoter(ctx context.Context, id, addr string) error {
	if n.raft.State() != raft.Leader {
		return ErrNotLeader
	}
	return mapRaftErr(n.raft.AddVoter(raft.ServerID(id), raft.ServerAddress(addr), 0, timeoutOf(ctx, 30*time.Second)).Error())
}

// RemoveServer removes a member. Leader only.
func (n *Node) RemoveServer(ctx context.Context, id string) error {
	if n.raft.State() != raft.Leader {
		return ErrNotLeader
	}
	return mapRaftErr(n.raft.RemoveServer(raft.ServerID(id), 0, timeoutOf(ctx, 30*time.Second)).Error())
}

// LeaderCh delivers leadership changes of this node (true on gaining).
func (n *Node) LeaderCh() <-chan bool { return n.raft.LeaderCh() }

// Shutdown stops raft and closes the transport and log. Idempotent.
func (n *Node) Shutdown() error {
	err := n.raft.Shutdown().Error()
	n.trans.Close()
	if cerr := n.log.Close(); err == nil && cerr != nil {
		err = cerr
	}
	return err
}

func timeoutOf(ctx context.Context, def time.Duration) time.Duration {
	if d, ok := ctx.Deadline(); ok {
		if t := time.Until(d); t > 0 {
			return t
		}
		return time.Millisecond
	}
	return def
}

func mapRaftErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrLeadershipTransferInProgress):
		return fmt.Errorf("%w: %v", ErrNotLeader, err)
	case errors.Is(err, raft.ErrLeadershipLost):
		return fmt.Errorf("%w: %v", ErrUnknownOutcome, err)
	case errors.Is(err, raft.ErrRaftShutdown):
		return fmt.Errorf("%w: %v", ErrShutdown, err)
	}
	return err
}

// slogWriter sends hclog's output to slog, one record per line, at the
// line's own level and without hclog's time stamp and level tag.
type slogWriter struct{ l *slog.Logger }

func (w slogWriter) Write(p []byte) (int, error) {
	for line := range strings.SplitSeq(strings.TrimRight(string(p), "\n"), "\n") {
		level, msg := raftLine(line)
		w.l.Log(context.Background(), level, msg, "component", "raft")
	}
	return len(p), nil
}

// raftLine reads one line of hclog's text format, "TIME [LEVEL]  raft:
// message: key=value ...". The first election after a node starts (no
// leader known yet: an empty last-leader-addr) is how every start of a
// one-node controller goes, so it is information, not a warning; losing a
// known leader stays a warning.
func raftLine(line string) (slog.Level, string) {
	level, msg := slog.LevelWarn, line
	if _, rest, ok := strings.Cut(line, " ["); ok {
		if tag, text, ok := strings.Cut(rest, "]"); ok {
			switch tag {
			case "ERROR":
				level = slog.LevelError
			case "INFO":
				level = slog.LevelInfo
			case "DEBUG", "TRACE":
				level = slog.LevelDebug
			}
			msg = strings.TrimPrefix(strings.TrimSpace(text), "raft: ")
		}
	}
	if level == slog.LevelWarn && strings.HasPrefix(msg, "heartbeat timeout reached, starting election") &&
		strings.Contains(msg, "last-leader-addr= ") {
		level = slog.LevelInfo
	}
	return level, msg
}

var _ io.Writer = slogWriter{}
