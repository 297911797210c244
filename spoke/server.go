package spoke

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime/pprof"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/internal/corkconn"
	"github.com/droverhq/drover/internal/pki"
	"github.com/droverhq/drover/internal/version"
	"github.com/droverhq/drover/spoke/internal/apiserver"
	"github.com/droverhq/drover/spoke/internal/blobs"
	"github.com/droverhq/drover/spoke/internal/cluster"
	"github.com/droverhq/drover/spoke/internal/hubtrust"
	"github.com/droverhq/drover/spoke/internal/peer"
	"github.com/droverhq/drover/spoke/internal/propose"
	"github.com/droverhq/drover/spoke/internal/state"
	"github.com/droverhq/drover/spoke/internal/state/stream"
	"github.com/droverhq/drover/spoke/internal/websession"
	"github.com/google/uuid"
)

// Version is the controller software version reported to clients.
const Version = version.Version

// Server is one controller node.
type Server struct {
	cfg    Config
	logger *slog.Logger
	ident  *identity
	ca     *pki.CA
	cert   tls.Certificate
	secret []byte

	fsm   *state.FSM
	node  *cluster.Node
	blobs *blobs.Store
	peers *peer.Client
	api   *apiserver.Server

	*propose.Proposer
	*blobSync
	// spawned reaps the nodes EnableHA started (ha.go).
	spawned spawned
	// joinAudit counts join tokens and admissions (join.go).
	joinAudit *joinAudit

	mu       sync.Mutex
	listener net.Listener
}

// Run starts the node and serves until ctx ends, then shuts down in order.
func Run(ctx context.Context, cfg Config) error {
	s, err := New(ctx, cfg)
	if err != nil {
		return err
	}
	return s.Serve(ctx)
}

// New prepares a node: it bootstraps or joins as configured, opens raft and
// binds the API listener. Serve runs it.
func New(ctx context.Context, cfg Config) (*Server, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, logger: cfg.Logger, joinAudit: newJoinAudit()}
	if t, _, ok := s.flagsTrust(); ok {
		if err := checkHubTrust(t); err != nil {
			return nil, fmt.Errorf("spoke: --hub-url/--hub-ca/--hub-jwks: %w", err)
		}
	}
	err := s.identify(ctx)
	if err != nil {
		return nil, err
	}
	s.logger = s.logger.With("node", s.ident.NodeID)
	s.peers = s.peerClient()

	if s.blobs, err = blobs.New(filepath.Join(cfg.DataDir, "blobs"), cfg.MaxCharmSize); err != nil {
		return nil, err
	}
	if s.fsm, err = state.NewFSM(state.FSMConfig{Logger: s.logger}); err != nil {
		return nil, err
	}
	// Every node holds the cluster secret, so a dashboard session begun
	// on one node is good on all (docs/decisions/0038-dashboard-sessions.md).
	sessionKey, err := websession.Key(s.secret)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", cfg.Listen, err)
	}
	s.listener = ln
	if cfg.Faults != nil {
		cfg.Faults.Register(s.ident.NodeID, cfg.Advertise)
	}
	if s.node, err = s.openRaft(); err != nil {
		ln.Close()
		return nil, err
	}
	s.Proposer = propose.New(s.node, s.fsm, s.peers)
	s.blobSync = &blobSync{self: s.ident.NodeID, node: s.node, fsm: s.fsm, blobs: s.blobs, peers: s.peers, logger: s.logger}
	// The hub the controller trusts is replicated state (the start flags
	// only propose it, see applyHubFlags); the follower verifies against
	// whatever it is at each request.
	hub := hubtrust.NewFollower(hubtrust.Config{Now: cfg.Now, ControllerCA: s.ca.Fingerprint()})
	s.api, err = apiserver.New(apiserver.Config{Backend: s, Logger: s.logger, Now: cfg.Now, MaxCharmSize: cfg.MaxCharmSize, MaxExportSize: cfg.MaxExportSize, Hub: hub,
		SessionKey:       sessionKey,
		MetricsElsewhere: cfg.MetricsListen != "",
		LogDir:           filepath.Join(cfg.DataDir, "logs"), KeepaliveInterval: cfg.KeepaliveInterval, HealthInterval: cfg.HealthInterval, ReadWait: cfg.ReadWait, Collectors: s.joinAudit.collectors()})
	if err != nil {
		ln.Close()
		s.node.Shutdown()
		return nil, err
	}
	return s, nil
}

// identify loads this node's identity and TLS material from its data
// dir, or creates them: a new controller (--bootstrap) or a node admitted
// to one (--join).
func (s *Server) identify(ctx context.Context) error {
	ident, ok, err := loadIdentity(s.cfg.DataDir)
	if err != nil {
		return err
	}
	tlsFiles := pki.Files{Dir: filepath.Join(s.cfg.DataDir, "tls")}
	switch {
	case ok:
		s.ident = ident
		if s.ca, s.cert, err = tlsFiles.Load(); err != nil {
			return err
		}
		if s.secret, err = os.ReadFile(filepath.Join(tlsFiles.Dir, "cluster.secret")); err != nil {
			return err
		}
	case s.cfg.Bootstrap:
		if err := s.initBootstrap(tlsFiles); err != nil {
			return err
		}
	case s.cfg.Join != "":
		if err := s.admit(ctx, tlsFiles); err != nil {
			return err
		}
	default:
		return fmt.Errorf("spoke: %s has no controller state: pass --bootstrap or --join", s.cfg.DataDir)
	}
	return nil
}

// openRaft opens this node's raft member over its data dir.
func (s *Server) openRaft() (*cluster.Node, error) {
	return cluster.Open(cluster.Config{
		NodeID:            s.ident.NodeID,
		DataDir:           s.cfg.DataDir,
		BindAddr:          s.cfg.RaftListen,
		ServerTLS:         pki.MutualConfig(s.ca, s.cert),
		PeerTLS:           pki.PeerConfig(s.ca, s.cert),
		FSM:               s.fsm,
		Logger:            s.logger,
		Bootstrap:         s.cfg.Bootstrap,
		Faults:            s.cfg.Faults,
		HeartbeatTimeout:  s.cfg.RaftHeartbeat,
		ElectionTimeout:   s.cfg.RaftElection,
		SnapshotThreshold: s.cfg.SnapshotThreshold,
	})
}

// Serve runs the API and the node's workers until ctx ends.
func (s *Server) Serve(ctx context.Context) error {
	var mln net.Listener
	if s.cfg.MetricsListen != "" {
		var err error
		if mln, err = net.Listen("tcp", s.cfg.MetricsListen); err != nil {
			return fmt.Errorf("spoke: metrics listen: %w", err)
		}
	}
	srv := &http.Server{
		Handler:           s.api,
		ConnContext:       corkconn.ConnContext, // answers leave in one write (internal/corkconn)
		TLSConfig:         pki.ServerConfig(s.ca, s.cert),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       cmp.Or(s.cfg.IdleTimeout, 5*time.Minute),
		ErrorLog:          slog.NewLogLogger(s.logger.Handler(), slog.LevelDebug),
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) {
		// Connection goroutines inherit the label: CPU profiles of a
		// process running several servers (tests, benchmarks) tell them apart.
		pprof.Do(gctx, pprof.Labels("server", "spoke"), func(context.Context) {
			err = srv.ServeTLS(corkconn.Listener{Listener: s.listener}, "", "")
		})
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return err
	})
	g.Go(func() error { return s.runWorkers(gctx) })
	g.Go(func() error { return s.spawned.run(gctx) })
	g.Go(func() error {
		<-gctx.Done()
		// Shutdown order: HTTP first so no request sees raft gone.
		// gctx is done: the shutdown gets its own bound.
		sctx, cancel := context.WithTimeout(context.WithoutCancel(gctx), 5*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
		return nil
	})
	if mln != nil {
		s.serveMetrics(gctx, g, mln)
	}
	if s.cfg.Ready != nil {
		close(s.cfg.Ready)
	}
	s.logger.Info("controller node serving", "api", s.cfg.Advertise, "raft", s.cfg.RaftListen,
		"controller", s.ident.ControllerName)
	err := g.Wait()
	s.api.Close()
	if serr := s.node.Shutdown(); err == nil && serr != nil && !errors.Is(serr, cluster.ErrShutdown) {
		err = serr
	}
	if errors.Is(err, context.Canceled) {
		err = nil
	}
	return err
}

// serveMetrics serves /metrics alone, over plain HTTP, on ln
// (MetricsListen, an internal address), in g until ctx ends.
func (s *Server) serveMetrics(ctx context.Context, g *errgroup.Group, ln net.Listener) {
	metrics := s.api.Metrics()
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		metrics.ServeHTTP(w, r)
	}), ReadHeaderTimeout: 10 * time.Second}
	g.Go(func() error {
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	})
	g.Go(func() error {
		<-ctx.Done()
		return srv.Close()
	})
	s.logger.Info("controller node metrics", "addr", ln.Addr().String())
}

// Store is the node's local replica of the model state.
func (s *Server) Store() *state.Store { return s.fsm.Store() }

// Events is the node's event broker.
func (s *Server) Events() *stream.Broker { return s.fsm.Events() }

// LogMark names the node's raft log entry at index in its history, if the
// log still holds it.
func (s *Server) LogMark(index uint64) (string, bool) { return s.node.LogMark(index) }

// Blobs is the node's charm blob store.
func (s *Server) Blobs() *blobs.Store { return s.blobs }

// peerClient calls other nodes with this node's certificate.
func (s *Server) peerClient() *peer.Client {
	var dial peer.DialFunc
	if s.cfg.Faults != nil {
		dial = s.cfg.Faults.DialContext(s.ident.NodeID, &net.Dialer{Timeout: 3 * time.Second})
	}
	return peer.NewClient(pki.PeerConfig(s.ca, s.cert), dial)
}

// NodeID is this node's raft ID.
func (s *Server) NodeID() string { return s.ident.NodeID }

// APIAddr is the advertised API address.
func (s *Server) APIAddr() string { return s.cfg.Advertise }

// CACert is the controller CA in PEM.
func (s *Server) CACert() []byte { return s.ca.CertPEM }

// IsLeader reports whether this node leads the raft cluster.
func (s *Server) IsLeader() bool { return s.node.IsLeader() }

// PeerTransport presents this node's certificate to another node.
func (s *Server) PeerTransport() http.RoundTripper { return s.peers.Transport() }

func (s *Server) initBootstrap(files pki.Files) error {
	now := s.cfg.Now()
	ca, err := pki.NewCA(s.cfg.Name, now)
	if err != nil {
		return err
	}
	id := &identity{NodeID: "node-" + randomHex(4), ControllerUUID: uuid.NewString(), ControllerName: s.cfg.Name}
	cert, certPEM, keyPEM, err := ca.Issue(id.NodeID, hostsOf(s.cfg.Advertise, s.cfg.Listen), now)
	if err != nil {
		return err
	}
	if err := files.Save(ca, certPEM, keyPEM); err != nil {
		return err
	}
	secret := []byte(randomHex(32))
	if err := os.WriteFile(filepath.Join(files.Dir, "cluster.secret"), secret, 0o600); err != nil {
		return err
	}
	cred := &AdminCredential{
		ControllerName: s.cfg.Name, ControllerUUID: id.ControllerUUID,
		APIAddresses: []string{s.cfg.Advertise}, CACert: string(ca.CertPEM),
		User: "admin", Password: randomHex(24),
	}
	if err := writeJSON(filepath.Join(s.cfg.DataDir, AdminCredentialFile), cred); err != nil {
		return err
	}
	// The identity is written last: a crash before this point leaves a data
	// dir that bootstraps afresh.
	if err := saveIdentity(s.cfg.DataDir, id); err != nil {
		return err
	}
	s.ident, s.ca, s.cert, s.secret = id, ca, cert, secret
	return nil
}

func hostsOf(addrs ...string) []string {
	var out []string
	for _, a := range addrs {
		if h, _, err := net.SplitHostPort(a); err == nil && h != "" {
			out = append(out, h)
		}
	}
	if hn, err := os.Hostname(); err == nil {
		out = append(out, hn)
	}
	return out
}

// controllerInfo answers GET /v1/controller.
func (s *Server) ControllerInfo(ctx context.Context) (*api.ControllerInfo, error) {
	snap := s.fsm.Store().Snapshot()
	ctl, err := snap.Controller()
	if err != nil {
		return nil, err
	}
	if ctl == nil {
		return nil, api.Errorf(api.CodeUnavailable, "controller not initialised yet")
	}
	nodes, err := snap.ListControllerNodes()
	if err != nil {
		return nil, err
	}
	servers, _ := s.node.Servers()
	voter := map[string]bool{}
	for _, sv := range servers {
		voter[sv.ID] = sv.Voter
	}
	leaderID, _, _ := s.node.Leader()
	info := &api.ControllerInfo{UUID: ctl.UUID, Name: ctl.Name, CACert: ctl.CACert, Version: Version, Cloud: ctl.Cloud, Region: ctl.Region}
	for _, n := range nodes {
		ni := api.NodeInfo{ID: n.ID, APIAddress: n.APIAddr, RaftAddress: n.RaftAddr, Voter: voter[n.ID], Leader: n.ID == leaderID}
		if n.ID == s.ident.NodeID {
			ni.AppliedIndex = s.node.AppliedIndex()
		}
		info.Nodes = append(info.Nodes, ni)
		info.APIAddresses = append(info.APIAddresses, n.APIAddr)
	}
	return info, nil
}

// Routes lists every route of the controller API ("GET /v1/whoami", ...).
func Routes() []string {
	var out []string
	for _, r := range apiserver.Routes() {
		out = append(out, r.Method+" "+r.Pattern)
	}
	return out
}

// ModelRoutes lists the controller API's model routes ("GET
// /v1/models/{model}/status", ...): the hub forwards each of them.
func ModelRoutes() []string {
	var out []string
	for _, r := range apiserver.ModelRoutes() {
		out = append(out, r.Method+" "+r.Pattern)
	}
	return out
}
