// Package hubstack starts the hub the benchmarks run against, on
// 127.0.0.1: a private PostgreSQL from the system binaries, and in this
// process embedded OpenFGA, the development issuer and one hub; and real
// controllers (spokes) in this process that trust the hub and are
// registered with it.
package hubstack

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/droverhq/drover/authz/embedded"
	"github.com/droverhq/drover/hub"
	"github.com/droverhq/drover/hub/devidp"
	"github.com/droverhq/drover/spoke"
	"github.com/droverhq/drover/tests/testkit"
)

// Hub is a running hub and what it depends on. Close stops everything it
// started, the spokes included.
type Hub struct {
	Server *hub.Server
	Addr   string // host:port of its HTTPS API
	CA     []byte // its CA certificate (PEM)
	Dir    string // its state directory
	Issuer string // the development issuer's URL

	stops  []func()
	g      *errgroup.Group
	gctx   context.Context
	cancel context.CancelFunc
}

// Config is what Start needs; zero values take defaults.
type Config struct {
	// MaxList raises OpenFGA's ListObjectsMaxResults (the listing of a
	// user who sees every model).
	MaxList uint32
	// MigrationAgentWait is the hub's wait for a migrating model's agents
	// (hub.Config.MigrationAgentWait; default the hub's).
	MigrationAgentWait time.Duration
	Logger             *slog.Logger // default: errors to stderr
}

// Start starts PostgreSQL, OpenFGA, the development issuer and the hub
// under root (which the postgres user must be able to traverse), and waits
// until the hub serves. On error, whatever started is stopped.
func Start(ctx context.Context, root string, cfg Config) (_ *Hub, err error) {
	if cfg.Logger == nil {
		cfg.Logger = QuietLogger()
	}
	rctx, cancel := context.WithCancel(ctx)
	g, gctx := errgroup.WithContext(rctx)
	h := &Hub{g: g, gctx: gctx, cancel: cancel, Dir: filepath.Join(root, "hub")}
	defer func() {
		if err != nil {
			h.Close()
		}
	}()
	pg, err := testkit.StartPostgresServer(ctx, filepath.Join(root, "postgres"))
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	h.OnClose(func() { _ = pg.Stop() })
	fga, err := embedded.Start(ctx, embedded.Config{ListObjectsMaxResults: cfg.MaxList})
	if err != nil {
		return nil, fmt.Errorf("openfga: %w", err)
	}
	h.OnClose(func() { _ = fga.Stop() })
	idp, err := devidp.Start(ctx, devidp.Config{})
	if err != nil {
		return nil, err
	}
	h.Issuer = idp.URL()
	h.OnClose(func() { _ = idp.Stop() })
	if h.Addr, err = Addr(); err != nil {
		return nil, err
	}
	ready := make(chan struct{})
	// The hub migrates the instance's postgres database (throwaway).
	h.Server, err = hub.New(ctx, hub.Config{DSN: pg.DSN("postgres"), OpenFGAURL: fga.URL(), OIDCIssuer: idp.URL(),
		OIDCClientID: devidp.HubClientID, Listen: h.Addr, PublicURL: "https://" + h.Addr, StateDir: h.Dir,
		DefaultOrg: "bench", Logger: cfg.Logger, Ready: ready, SessionTTL: time.Hour,
		MigrationAgentWait: cfg.MigrationAgentWait})
	if err != nil {
		return nil, fmt.Errorf("hub: %w", err)
	}
	h.OnClose(h.Server.Close)
	h.Go(h.Server.Run)
	if err := Wait(gctx, ready); err != nil {
		return nil, err
	}
	h.CA, err = os.ReadFile(hub.CACertPath(h.Dir))
	return h, err
}

// Go runs f until Close, with a context Close cancels; its error other
// than cancellation is Close's.
func (h *Hub) Go(f func(ctx context.Context) error) { h.g.Go(func() error { return f(h.gctx) }) }

// OnClose has Close call stop, in the reverse order of the calls.
func (h *Hub) OnClose(stop func()) { h.stops = append(h.stops, stop) }

// Close cancels what runs under Go, waits for it, and runs the OnClose
// functions; it returns what ended with an error other than cancellation.
func (h *Hub) Close() error {
	h.cancel()
	err := h.g.Wait()
	if errors.Is(err, context.Canceled) {
		err = nil
	}
	for i := len(h.stops) - 1; i >= 0; i-- {
		h.stops[i]()
	}
	return err
}

// Spoke is a controller node running in this process, registered with
// the hub.
type Spoke struct {
	Server *spoke.Server
	Name   string
	Addr   string // host:port of its HTTPS API
	CA     []byte
	Cred   *spoke.AdminCredential
	UUID   string // the controller's UUID, as the hub registered it
}

// StartSpoke bootstraps a one-node controller named name under dir, in
// this process, trusting the hub, and registers it with the hub in region
// name. With no provisioner, its machines stay pending unless a caller
// records them provisioned (spoke.Server.SetMachineProvider).
func (h *Hub) StartSpoke(ctx context.Context, dir, name string, logger *slog.Logger) (*Spoke, error) {
	if logger == nil {
		logger = QuietLogger()
	}
	start := time.Now()
	sp := &Spoke{Name: name}
	var err error
	if sp.Addr, err = Addr(); err != nil {
		return nil, err
	}
	raft, err := Addr()
	if err != nil {
		return nil, err
	}
	ready := make(chan struct{})
	sp.Server, err = spoke.New(ctx, spoke.Config{DataDir: dir, Listen: sp.Addr, RaftListen: raft, Name: name,
		Bootstrap: true, Ready: ready, Logger: logger, HubURL: "https://" + h.Addr, HubCACert: h.CA,
		NoProvisioner: true})
	if err != nil {
		return nil, fmt.Errorf("spoke %s: %w", name, err)
	}
	h.Go(sp.Server.Serve)
	if err := Wait(h.gctx, ready); err != nil {
		return nil, err
	}
	if sp.Cred, err = ReadCredential(ctx, dir, "the spoke's log", start); err != nil {
		return nil, err
	}
	sp.CA = []byte(sp.Cred.CACert)
	if sp.UUID, err = h.Register(ctx, name, "https://"+sp.Addr, sp.Cred.CACert, name); err != nil {
		return nil, err
	}
	return sp, nil
}

// ReadCredential waits for a spoke's admin credential, which the spoke
// writes once bootstrapped, for up to a minute after start; logFile names
// where to look when it does not come.
func ReadCredential(ctx context.Context, spokeDir, logFile string, start time.Time) (*spoke.AdminCredential, error) {
	for delay := 50 * time.Millisecond; ; delay = min(2*delay, time.Second) {
		cred, err := spoke.ReadAdminCredential(spokeDir)
		if err == nil {
			return cred, nil
		}
		if time.Since(start) > time.Minute {
			return nil, fmt.Errorf("the spoke's admin credential: %w (see %s)", err, logFile)
		}
		if err := Sleep(ctx, delay); err != nil {
			return nil, err
		}
	}
}

// Register registers a controller with the hub, retrying for a minute
// while the controller finishes bootstrapping its identity; it returns
// the controller's UUID.
func (h *Hub) Register(ctx context.Context, name, url, caCert, region string) (string, error) {
	req := hub.AddControllerRequest{Name: name, URL: url, CACert: caCert, Region: region, Cloud: "localhost"}
	deadline := time.Now().Add(time.Minute)
	for delay := 50 * time.Millisecond; ; delay = min(2*delay, time.Second) {
		c, err := h.Server.RegisterController(ctx, req, true)
		if err == nil {
			return c.UUID, nil
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("register the spoke %s: %w", name, err)
		}
		if err := Sleep(ctx, delay); err != nil {
			return "", err
		}
	}
}

// QuietLogger logs errors alone, to stderr.
func QuietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
}

// Addr is a free 127.0.0.1 address.
func Addr() (string, error) {
	p, err := testkit.ReservePort()
	return fmt.Sprintf("127.0.0.1:%d", p), err
}

// Wait waits until ready is closed or ctx ends.
func Wait(ctx context.Context, ready <-chan struct{}) error {
	select {
	case <-ready:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Sleep is a retry's backoff, not a wait for correctness.
func Sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-time.After(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Root makes a benchmark's temporary directory, /tmp/<prefix>-*,
// traversable by others (PostgreSQL runs as the postgres user), and the
// function that removes it (which keeps it when keep is set).
func Root(prefix string, keep bool) (string, func(), error) {
	root, err := os.MkdirTemp("/tmp", prefix+"-")
	if err != nil {
		return "", nil, err
	}
	remove := func() {
		if !keep {
			os.RemoveAll(root)
		}
	}
	if err := os.Chmod(root, 0o755); err != nil {
		remove()
		return "", nil, err
	}
	return root, remove, nil
}
