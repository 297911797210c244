package pgserver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/droverhq/drover/internal/freeport"
)

// Timeouts for one server's life; generous because CI machines are small.
const (
	pgStopTimeout  = 10 * time.Second
	pgRetryEvery   = 10 * time.Millisecond
	unixSocketPort = 5432 // each server has its own socket dir, so no clash
)

// ErrPostgresExited means the server process ended before it was stopped.
var ErrPostgresExited = errors.New("pgserver: postgres exited")

// Server is a private PostgreSQL server running as a child process.
type Server struct {
	dir  string // holds data/, the socket and postgres.log
	host string // the socket dir, or 127.0.0.1 with TCP
	port int
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited
	err  error         // the process's exit status, set before done closes
	// stopSignal asks the server to stop: SIGQUIT (immediate, for
	// throwaway servers) or, for a durable one, SIGINT (fast: a
	// checkpoint, so the next start needs no recovery).
	stopSignal syscall.Signal
}

// Option configures a server started by Start.
type Option func(*options)

type options struct {
	tcp     bool // also listen on 127.0.0.1
	tcpPort int  // 0: pick a free port
	durable bool // keep fsync and full-page writes on
}

// Durable keeps the server's crash safety: a test's server runs without
// fsync, synchronous commit and full-page writes (fast, and thrown away),
// which a crash of the host can leave corrupt; a server whose data is kept
// (droverd's embedded one in its state dir) must not.
func Durable() Option {
	return func(o *options) { o.durable = true }
}

// WithTCP makes the server also listen on 127.0.0.1:port; port 0 picks a
// free port. DSN then uses TCP.
func WithTCP(port int) Option {
	return func(o *options) { o.tcp, o.tcpPort = true, port }
}

// Start starts a server whose data lives in dir/data. An
// existing data directory is reused, so a dev server keeps its data across
// restarts; otherwise the cached initdb template is copied in. A dir the
// server's user cannot enter is an *AccessError at once. The caller must
// call Stop; dir is left in place.
func Start(ctx context.Context, dir string, opts ...Option) (*Server, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	pg, err := findInstall()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("pgserver: %w", err)
	}
	if err := pg.chown(dir); err != nil {
		return nil, err
	}
	if err := pg.checkAccess(dir); err != nil {
		return nil, err
	}
	data := filepath.Join(dir, "data")
	if _, err := os.Stat(filepath.Join(data, "PG_VERSION")); err != nil {
		tmpl, err := templateDataDir(pg)
		if err != nil {
			return nil, err
		}
		if err := copyDataDir(tmpl, data); err != nil {
			return nil, err
		}
	}

	p := &Server{dir: dir, host: dir, port: unixSocketPort, done: make(chan struct{})}
	listen := ""
	if o.tcp {
		port := o.tcpPort
		if port == 0 {
			if port, err = freeport.Reserve(); err != nil {
				return nil, err
			}
		}
		p.host, p.port, listen = "127.0.0.1", port, "127.0.0.1"
	}
	if err := p.start(pg, data, listen, o.durable); err != nil {
		return nil, err
	}
	if err := p.waitReady(ctx); err != nil {
		return nil, errors.Join(err, p.Stop())
	}
	return p, nil
}

func (p *Server) start(pg *pgInstall, data, listen string, durable bool) error {
	logf, err := os.OpenFile(p.LogPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("pgserver: postgres log: %w", err)
	}
	defer logf.Close() // the child holds its own descriptor
	args := []string{"-D", data, "-k", p.dir, "-p", strconv.Itoa(p.port), "-c", "listen_addresses=" + listen}
	if !durable {
		args = append(args, "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off")
	}
	p.stopSignal = syscall.SIGQUIT
	if durable {
		p.stopSignal = syscall.SIGINT
	}
	p.cmd = pg.command("postgres", args...)
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	if err := p.cmd.Start(); err != nil {
		return fmt.Errorf("pgserver: start postgres: %w", err)
	}
	// The process's only waiter: it records the exit so readiness polling
	// and Stop can both observe it.
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	return nil
}

// waitReady connects every 10ms until the server answers a query.
func (p *Server) waitReady(ctx context.Context) error {
	var lastErr error
	for {
		conn, err := pgx.Connect(ctx, p.DSN("postgres"))
		if err == nil {
			_, err = conn.Exec(ctx, "SELECT 1")
			err = errors.Join(err, conn.Close(ctx))
			if err == nil {
				return nil
			}
		}
		lastErr = err
		select {
		case <-p.done:
			return fmt.Errorf("%w before ready (%v); log %s:\n%s", ErrPostgresExited, p.err, p.LogPath(), p.logTail())
		case <-ctx.Done():
			return fmt.Errorf("pgserver: postgres not ready: %w (last error: %v); log %s:\n%s",
				context.Cause(ctx), lastErr, p.LogPath(), p.logTail())
		case <-time.After(pgRetryEvery):
		}
	}
}

// Stop shuts the server down and waits for it to exit, killing it if it
// does not: immediately (SIGQUIT), when crash recovery on the next start
// replays anything not yet flushed; a durable server (Durable) with a
// fast shutdown (SIGINT), which ends the sessions and checkpoints. The
// data directory stays.
func (p *Server) Stop() error {
	select {
	case <-p.done:
		return nil
	default:
	}
	if err := p.cmd.Process.Signal(p.stopSignal); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("pgserver: signal postgres: %w", err)
	}
	select {
	case <-p.done:
		return nil
	case <-time.After(pgStopTimeout):
	}
	if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("pgserver: kill postgres: %w", err)
	}
	<-p.done
	return fmt.Errorf("pgserver: postgres ignored %v for %v and was killed", p.stopSignal, pgStopTimeout)
}

// Exited is closed once the server's process has exited, by Stop or
// otherwise; ExitErr then says how.
func (p *Server) Exited() <-chan struct{} { return p.done }

// ExitErr is the server process's exit status, once Exited is closed.
func (p *Server) ExitErr() error {
	<-p.done
	return p.err
}

// PID is the server's (the postmaster's) process id.
func (p *Server) PID() int { return p.cmd.Process.Pid }

// Dir is the server's directory (data, socket, log).
func (p *Server) Dir() string { return p.dir }

// Host is the socket directory, or 127.0.0.1 when listening on TCP.
func (p *Server) Host() string { return p.host }

// Port is the server's port (the socket's name suffix for unix sockets).
func (p *Server) Port() int { return p.port }

// LogPath is where the server's output goes.
func (p *Server) LogPath() string { return filepath.Join(p.dir, "postgres.log") }

func (p *Server) logTail() string {
	b, err := os.ReadFile(p.LogPath())
	if err != nil {
		return err.Error()
	}
	const keep = 4000
	if len(b) > keep {
		b = b[len(b)-keep:]
	}
	return string(b)
}
