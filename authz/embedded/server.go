// Package embedded runs a real OpenFGA server inside the current process,
// for `droverd dev` and for tests. It is the same server an external
// deployment runs (github.com/openfga/openfga/cmd/run), listening on
// loopback only, so callers talk to it with the ordinary HTTP client.
//
// Invariants:
//   - A Server listens on 127.0.0.1 only, on ports chosen at start; it never
//     binds the OpenFGA defaults (8080/8081/2112) or serves metrics,
//     profiling or the playground.
//   - Start returns only once GET /healthz answers SERVING, and Stop returns
//     only once the server's Run has returned, so nothing outlives Stop.
//   - Several Servers may run in one process. OpenFGA's Run installs a
//     process-wide no-op tracer and a per-call signal handler; both are
//     harmless when repeated.
package embedded

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/openfga/openfga/cmd/run"
	"github.com/openfga/openfga/pkg/logger"
	serverconfig "github.com/openfga/openfga/pkg/server/config"
	"github.com/openfga/openfga/pkg/storage/migrate"
)

// Datastore engines understood by Config.Engine.
const (
	EngineMemory   = "memory"
	EnginePostgres = "postgres"
)

// ErrNotHealthy is returned by Start when the server did not report
// SERVING within Config.StartTimeout.
var ErrNotHealthy = errors.New("embedded openfga: not healthy")

// Config selects the datastore and bounds. The zero value is a memory
// datastore with a 30 s start timeout.
type Config struct {
	// Engine is EngineMemory (default) or EnginePostgres.
	Engine string
	// URI is the datastore URI; required for postgres, e.g.
	// postgres://user@127.0.0.1:5432/openfga?sslmode=disable. Migrations
	// are applied before the server starts, by one Start at a time among
	// those sharing the database (a PostgreSQL advisory lock), so replicas
	// may start together.
	URI string
	// Schema, for postgres, is the schema of URI's database that holds
	// OpenFGA's tables, created if missing; empty leaves them where URI's
	// search_path puts them. URI must then be a URL (DatastoreURI).
	Schema string
	// MaxOpenConns bounds the postgres connection pool (OpenFGA's default,
	// 30, when 0).
	MaxOpenConns int
	// LogLevel is OpenFGA's log level ("none", "error", "warn", ...).
	// Default "none": tests and `droverd dev` log through their own logger.
	LogLevel string
	// StartTimeout bounds migrations plus the wait for /healthz.
	StartTimeout time.Duration
	// ListObjectsMaxResults overrides OpenFGA's default cap (1000) on
	// ListObjects results; 0 keeps the default.
	ListObjectsMaxResults uint32
}

func (c Config) withDefaults() (Config, error) {
	if c.Engine == "" {
		c.Engine = EngineMemory
	}
	if c.LogLevel == "" {
		c.LogLevel = "none"
	}
	if c.StartTimeout <= 0 {
		c.StartTimeout = 30 * time.Second
	}
	switch c.Engine {
	case EngineMemory:
	case EnginePostgres:
		if c.URI == "" {
			return c, errors.New("embedded openfga: postgres engine needs a URI")
		}
	default:
		return c, fmt.Errorf("embedded openfga: unsupported engine %q", c.Engine)
	}
	return c, nil
}

// Server is a running embedded OpenFGA server.
type Server struct {
	url      string
	grpcAddr string
	cancel   context.CancelFunc
	done     chan struct{}
	err      error // Run's result; read only after done is closed
}

// Start starts a server and waits until it is healthy. ctx bounds only the
// start; the server runs until Stop.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	ctx, cancelStart := context.WithTimeout(ctx, cfg.StartTimeout)
	defer cancelStart()

	if cfg.Engine == EnginePostgres {
		unlock, err := lockDatastore(ctx, cfg.URI, cfg.Schema)
		if err != nil {
			return nil, err
		}
		defer unlock()
		if cfg.Schema != "" {
			if cfg.URI, err = DatastoreURI(cfg.URI, cfg.Schema); err != nil {
				return nil, err
			}
		}
		err = migrate.RunMigrations(migrate.MigrationConfig{
			Engine:      cfg.Engine,
			URI:         cfg.URI,
			Timeout:     cfg.StartTimeout,
			PingTimeout: 5 * time.Second, // 0 fails at once
			Logger:      logger.NewNoopLogger(),
		})
		if err != nil {
			return nil, fmt.Errorf("embedded openfga: migrate: %w", err)
		}
	}

	var errs []error
	for range startAttempts {
		s, err := start(ctx, cfg)
		if err == nil {
			return s, nil
		}
		errs = append(errs, err)
		// Only an early exit (a reserved port taken in the meantime) is
		// worth another attempt; a timeout or a bad datastore is not.
		if !errors.Is(err, errExited) || ctx.Err() != nil {
			break
		}
	}
	return nil, errors.Join(errs...)
}

// startAttempts bounds retries after the server exits during start.
const startAttempts = 3

// errExited marks a server whose Run returned before it became healthy.
var errExited = errors.New("server exited")

func start(ctx context.Context, cfg Config) (*Server, error) {
	ports, err := freePorts(2)
	if err != nil {
		return nil, err
	}
	sc := serverconfig.DefaultConfig()
	sc.Datastore.Engine, sc.Datastore.URI = cfg.Engine, cfg.URI
	sc.Datastore.Metrics.Enabled = false
	if cfg.MaxOpenConns > 0 {
		sc.Datastore.MaxOpenConns = cfg.MaxOpenConns
		sc.Datastore.MaxIdleConns = min(sc.Datastore.MaxIdleConns, cfg.MaxOpenConns)
	}
	sc.GRPC.Addr = fmt.Sprintf("127.0.0.1:%d", ports[0])
	sc.HTTP.Addr = fmt.Sprintf("127.0.0.1:%d", ports[1])
	sc.Metrics.Enabled = false
	sc.Playground.Enabled = false
	sc.Profiler.Enabled = false
	// With level "none" Verify prints a warning to stdout; the config's
	// level is cosmetic anyway, since Run logs through the logger below.
	sc.Log.Level = "error"
	if cfg.ListObjectsMaxResults > 0 {
		sc.ListObjectsMaxResults = cfg.ListObjectsMaxResults
	}
	if err := sc.Verify(); err != nil {
		return nil, fmt.Errorf("embedded openfga: config: %w", err)
	}

	log, err := newLogger(cfg.LogLevel)
	if err != nil {
		return nil, err
	}
	// The server's lifetime is Stop's business, not the start context's.
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s := &Server{
		url:      "http://" + sc.HTTP.Addr,
		grpcAddr: sc.GRPC.Addr,
		cancel:   cancel,
		done:     make(chan struct{}),
	}
	go func() {
		defer close(s.done)
		s.err = (&run.ServerContext{Logger: log}).Run(runCtx, sc)
	}()

	if err := s.waitHealthy(ctx); err != nil {
		stopErr := s.Stop()
		return nil, errors.Join(err, stopErr)
	}
	return s, nil
}

// URL is the base URL of the HTTP API, e.g. http://127.0.0.1:41234.
func (s *Server) URL() string { return s.url }

// GRPCAddr is the host:port of the gRPC API.
func (s *Server) GRPCAddr() string { return s.grpcAddr }

// Stop shuts the server down and waits for it to exit. It is safe to call
// more than once.
func (s *Server) Stop() error {
	s.cancel()
	<-s.done
	if s.err != nil {
		return fmt.Errorf("embedded openfga: run: %w", s.err)
	}
	return nil
}

// waitHealthy polls /healthz until it reports SERVING, the server exits, or
// ctx ends. The poll interval is bounded by a ticker, not a sleep, so the
// loop also wakes when Run fails early (port taken, bad datastore).
func (s *Server) waitHealthy(ctx context.Context) error {
	client := &http.Client{Timeout: time.Second}
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		if ok, err := s.healthy(ctx, client); ok {
			return nil
		} else if err != nil {
			last = err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: %w (last: %v)", ErrNotHealthy, ctx.Err(), last)
		case <-s.done:
			return fmt.Errorf("%w: %w: %v", ErrNotHealthy, errExited, s.err)
		case <-tick.C:
		}
	}
}

func (s *Server) healthy(ctx context.Context, client *http.Client) (bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url+"/healthz", nil)
	if err != nil {
		return false, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	var body struct {
		Status string `json:"status"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return false, err
	}
	return resp.StatusCode == http.StatusOK && body.Status == "SERVING", nil
}

func newLogger(level string) (logger.Logger, error) {
	if level == "none" {
		return logger.NewNoopLogger(), nil
	}
	l, err := logger.NewLogger(logger.WithFormat("text"), logger.WithLevel(level))
	if err != nil {
		return nil, fmt.Errorf("embedded openfga: logger: %w", err)
	}
	return l, nil
}

// freePorts reserves n distinct loopback ports by listening on :0, then
// releases them for Run, which takes addresses rather than listeners. The
// window in which another process could take a port is small; if it does,
// Run fails and Start reports it.
func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("embedded openfga: reserve port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
