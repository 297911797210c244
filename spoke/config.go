// Package spoke is the regional controller: a raft-replicated model store
// behind the /v1 API, serving clients, agents and the hub. One Server is one
// controller node; several nodes form an HA controller.
//
// Shutdown order (the only place it is written): stop accepting HTTP, stop
// node workers, shut raft down, close the blob store. Writes are
// acknowledged only after the raft leader applied them, so a node killed at
// any point loses no acknowledged write.
package spoke

import (
	"errors"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/droverhq/drover/spoke/internal/cluster"
	"github.com/droverhq/drover/spoke/provider/local"
)

// Config configures one controller node.
type Config struct {
	// DataDir holds the node's identity, TLS material, raft log, snapshots
	// and charm blobs.
	DataDir string
	// Listen is the HTTPS API address (host:port).
	Listen string
	// MetricsListen, if set, is a plain HTTP address (an internal one) that
	// alone serves /metrics; the API address then answers it 404. Without
	// it the API address serves /metrics to the node's machine alone.
	MetricsListen string
	// RaftListen is the raft address; default: Listen's port + 1.
	RaftListen string
	// Advertise is the API address other nodes and clients use; default
	// Listen.
	Advertise string
	// Name names a new controller at bootstrap (default "drover").
	Name string
	// Bootstrap makes a new one-node controller if DataDir is empty.
	Bootstrap bool
	// Join is the API address of a node of an existing controller, with
	// JoinToken from it, for a node with an empty DataDir.
	Join      string
	JoinToken string
	// Logger receives structured logs; required.
	Logger *slog.Logger
	// Now is the clock; default time.Now.
	Now func() time.Time
	// Executable is the droverd binary started for enable-ha; default
	// os.Executable().
	Executable string
	// MaxCharmSize bounds uploaded charm archives (default 256 MiB).
	MaxCharmSize int64
	// MaxExportSize bounds a model export a migration imports (default
	// and at most 40 MiB: the import is one raft command).
	MaxExportSize int64
	// KeepaliveInterval is how long a watch or event stream may stay
	// silent before it sends a keepalive frame (default 30 s).
	KeepaliveInterval time.Duration
	// HealthInterval is how often the hub's event stream checks the
	// controller's nodes (leader, reachability) for a change to report
	// (default 5 s).
	HealthInterval time.Duration
	// ReadWait bounds how long a read that names a raft index this node
	// has not applied waits for it before the node relays the read to the
	// leader (default 2 s; ADR 0028).
	ReadWait time.Duration
	// IdleTimeout closes a client's keep-alive connection left idle this
	// long (default 5 min: longer than a hub keeps an idle connection to a
	// controller, 90 s, so the hub closes first). Watches, event streams
	// and agents' websockets are not idle.
	IdleTimeout time.Duration
	// Faults injects network partitions (tests only; NewFaults).
	Faults *cluster.Faults
	// RaftTimeouts shortens raft's timers (tests only); zero: defaults.
	RaftHeartbeat time.Duration
	RaftElection  time.Duration
	// SnapshotThreshold: raft logs between snapshots (0: default).
	SnapshotThreshold uint64
	// Ready, if set, is closed once the node serves its API.
	Ready chan<- struct{}
	// AgentBinary is the drover-agent the local provisioner starts for each
	// machine; default: drover-agent next to the running executable.
	AgentBinary string
	// MachineDir holds the local machines' directories; default
	// local.DefaultDir(DataDir). Nodes on one host should share it, so a new raft
	// leader re-adopts the agents the old one started.
	MachineDir string
	// HubURL, if set, makes the controller trust that hub: it accepts
	// bearer tokens the hub signs (audience = this controller's UUID),
	// verified against the hub's JWKS (HubJWKSURL, default
	// HubURL/.well-known/jwks.json) fetched over TLS pinned to HubCACert.
	HubURL     string
	HubJWKSURL string
	HubCACert  []byte
	// NoProvisioner turns the local provisioner off (machines are then
	// provisioned by someone else, e.g. a benchmark or a test).
	NoProvisioner bool
}

// NewFaults is a fault injector for the Faults of in-process nodes
// (tests only, in other packages too: a hub test cuts a node of a
// controller behind it from raft): nodes given the same one can be cut
// apart (Cut, CutRaft, Isolate) and healed (Heal).
func NewFaults() *cluster.Faults { return cluster.NewFaults() }

func (c *Config) setDefaults() error {
	if c.DataDir == "" {
		return errors.New("spoke: DataDir is required")
	}
	if c.Listen == "" {
		return errors.New("spoke: Listen is required")
	}
	if c.Logger == nil {
		return errors.New("spoke: Logger is required")
	}
	if c.Bootstrap && c.Join != "" {
		return errors.New("spoke: --bootstrap and --join are exclusive")
	}
	if c.Join != "" && c.JoinToken == "" {
		return errors.New("spoke: --join needs --join-token")
	}
	if c.Name == "" {
		c.Name = "drover"
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.MaxCharmSize == 0 {
		c.MaxCharmSize = 256 << 20
	}
	if c.Advertise == "" {
		c.Advertise = c.Listen
	}
	if c.MachineDir == "" {
		c.MachineDir = local.DefaultDir(c.DataDir)
	}
	if c.AgentBinary == "" && !c.NoProvisioner {
		exe, err := os.Executable()
		if err != nil {
			return err
		}
		c.AgentBinary = filepath.Join(filepath.Dir(exe), "drover-agent")
	}
	if c.RaftListen == "" {
		p, err := nextPort(c.Listen)
		if err != nil {
			return err
		}
		c.RaftListen = p
	}
	return nil
}

func nextPort(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", err
	}
	p, err := net.LookupPort("tcp", port)
	if err != nil {
		return "", err
	}
	return net.JoinHostPort(host, strconv.Itoa(p+1)), nil
}
