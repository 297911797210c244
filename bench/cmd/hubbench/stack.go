package main

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

// stack is the system under test: a private PostgreSQL, and in this
// process embedded OpenFGA, the development issuer, one hub, and one real
// spoke that trusts it and is registered with it (in a process of its own
// with -spoke-process: spokeproc.go).
type stack struct {
	hub       *hub.Server
	hubAddr   string
	hubCA     []byte
	spokeAddr string
	spokeCA   []byte
	spokeUUID string
	spokePID  int // the spoke's own process (-spoke-process), else 0
	issuer    string
	stops     []func()
	g         *errgroup.Group
	cancel    context.CancelFunc
}

func (s *stack) close() {
	s.cancel()
	if err := s.g.Wait(); err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(os.Stderr, "hubbench: shutdown:", err)
	}
	for i := len(s.stops) - 1; i >= 0; i-- {
		s.stops[i]()
	}
}

func addr() (string, error) {
	p, err := testkit.ReservePort()
	return fmt.Sprintf("127.0.0.1:%d", p), err
}

// startStack starts everything under root (which the postgres user must
// be able to traverse). On error, whatever started is stopped.
func startStack(ctx context.Context, root string, maxList uint32, spokeProcess bool) (_ *stack, err error) {
	start := time.Now()
	rctx, cancel := context.WithCancel(ctx)
	g, gctx := errgroup.WithContext(rctx)
	s := &stack{g: g, cancel: cancel}
	defer func() {
		if err != nil {
			s.close()
		}
	}()
	quiet := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	if err := s.startHub(ctx, gctx, root, maxList, quiet); err != nil {
		return nil, err
	}
	spokeDir := filepath.Join(root, "spoke")
	if err := s.startSpoke(ctx, gctx, root, spokeDir, spokeProcess, quiet); err != nil {
		return nil, err
	}
	cred, err := readSpokeCredential(ctx, spokeDir, filepath.Join(root, "spoke.log"), start)
	if err != nil {
		return nil, err
	}
	s.spokeCA = []byte(cred.CACert)
	if err := s.registerSpoke(ctx, cred); err != nil {
		return nil, err
	}
	return s, nil
}

// startHub starts PostgreSQL, OpenFGA, the development issuer and the hub
// under root, and waits until the hub serves.
func (s *stack) startHub(ctx, gctx context.Context, root string, maxList uint32, logger *slog.Logger) error {
	pg, err := testkit.StartPostgresServer(ctx, filepath.Join(root, "postgres"))
	if err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	s.stops = append(s.stops, func() { _ = pg.Stop() })
	fga, err := embedded.Start(ctx, embedded.Config{ListObjectsMaxResults: maxList})
	if err != nil {
		return fmt.Errorf("openfga: %w", err)
	}
	s.stops = append(s.stops, func() { _ = fga.Stop() })
	idp, err := devidp.Start(ctx, devidp.Config{})
	if err != nil {
		return err
	}
	s.issuer = idp.URL()
	s.stops = append(s.stops, func() { _ = idp.Stop() })
	if s.hubAddr, err = addr(); err != nil {
		return err
	}
	hubDir := filepath.Join(root, "hub")
	ready := make(chan struct{})
	// The hub migrates the instance's postgres database (throwaway).
	s.hub, err = hub.New(ctx, hub.Config{DSN: pg.DSN("postgres"), OpenFGAURL: fga.URL(), OIDCIssuer: idp.URL(),
		OIDCClientID: devidp.HubClientID, Listen: s.hubAddr, PublicURL: "https://" + s.hubAddr, StateDir: hubDir,
		DefaultOrg: "bench", Logger: logger, Ready: ready, SessionTTL: time.Hour})
	if err != nil {
		return fmt.Errorf("hub: %w", err)
	}
	s.stops = append(s.stops, s.hub.Close)
	s.g.Go(func() error { return s.hub.Run(gctx) })
	if err := wait(gctx, ready); err != nil {
		return err
	}
	s.hubCA, err = os.ReadFile(hub.CACertPath(hubDir))
	return err
}

// startSpoke starts the spoke that trusts the hub, in a process of its own
// with spokeProcess, else in this one.
func (s *stack) startSpoke(ctx, gctx context.Context, root, spokeDir string, spokeProcess bool, logger *slog.Logger) error {
	var err error
	if s.spokeAddr, err = addr(); err != nil {
		return err
	}
	raft, err := addr()
	if err != nil {
		return err
	}
	if spokeProcess {
		set := spokeSettings{dataDir: spokeDir, listen: s.spokeAddr, raft: raft, hubURL: "https://" + s.hubAddr,
			hubCAFile: hub.CACertPath(filepath.Join(root, "hub"))}
		proc, stop, err := startSpokeProcess(set, filepath.Join(root, "spoke.log"))
		if err != nil {
			return fmt.Errorf("spoke process: %w", err)
		}
		s.stops = append(s.stops, stop)
		s.spokePID = proc.Pid
		return nil
	}
	sready := make(chan struct{})
	sp, err := spoke.New(ctx, spoke.Config{DataDir: spokeDir, Listen: s.spokeAddr, RaftListen: raft, Name: "real",
		Bootstrap: true, Ready: sready, Logger: logger, HubURL: "https://" + s.hubAddr, HubCACert: s.hubCA,
		NoProvisioner: true}) // units' machines stay pending: no agent processes
	if err != nil {
		return fmt.Errorf("spoke: %w", err)
	}
	s.g.Go(func() error { return sp.Serve(gctx) })
	return wait(gctx, sready)
}

// readSpokeCredential waits for the spoke's admin credential, which the
// spoke writes once bootstrapped, for up to a minute after start.
func readSpokeCredential(ctx context.Context, spokeDir, logFile string, start time.Time) (*spoke.AdminCredential, error) {
	for delay := 50 * time.Millisecond; ; delay = min(2*delay, time.Second) {
		cred, err := spoke.ReadAdminCredential(spokeDir)
		if err == nil {
			return cred, nil
		}
		if time.Since(start) > time.Minute {
			return nil, fmt.Errorf("the spoke's admin credential: %w (see %s)", err, logFile)
		}
		if err := sleepCtx(ctx, delay); err != nil {
			return nil, err
		}
	}
}

// registerSpoke registers the spoke with the hub, retrying for a minute
// while the spoke finishes bootstrapping its identity.
func (s *stack) registerSpoke(ctx context.Context, cred *spoke.AdminCredential) error {
	req := hub.AddControllerRequest{Name: "real", URL: "https://" + s.spokeAddr, CACert: cred.CACert, Region: "real", Cloud: "localhost"}
	deadline := time.Now().Add(time.Minute)
	for delay := 50 * time.Millisecond; ; delay = min(2*delay, time.Second) {
		c, err := s.hub.RegisterController(ctx, req, true)
		if err == nil {
			s.spokeUUID = c.UUID
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("register the spoke: %w", err)
		}
		if err := sleepCtx(ctx, delay); err != nil {
			return err
		}
	}
}

func wait(ctx context.Context, ready <-chan struct{}) error {
	select {
	case <-ready:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// sleepCtx is the registration retry's backoff (the spoke finishes
// bootstrapping its identity), not a wait for correctness.
func sleepCtx(ctx context.Context, d time.Duration) error {
	select {
	case <-time.After(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
