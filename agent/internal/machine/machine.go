// Package machine is the machine agent: it reads agent.conf, keeps the
// controller connection (with failover), and runs one uniter per unit on
// the machine, starting uniters for new units and stopping them for units
// that are gone; it runs the machine's own tasks (juju exec --machine)
// outside any unit, as the machine's user, in the machine's directory.
//
// Invariants:
//   - Every controller address the controller announces is persisted in
//     <data-dir>/controllers.json, so a restarted agent can reach a
//     controller even if the ones in agent.conf are gone.
//   - One uniter per unit; a uniter that fails is restarted with backoff; a
//     uniter whose unit finished its teardown has its directory removed and
//     is never started again by this process.
//   - Hooks are serialised machine-wide by one in-process lock.
//   - While the model migrates, no operation starts on the machine (the
//     fortress); the minion reports on each phase and, at SUCCESS or when
//     a login is redirected, moves the agent to the model's new controller
//     (minion.go, switch.go).
package machine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/droverhq/drover/agent/internal/apiconn"
	"github.com/droverhq/drover/agent/internal/fortress"
	"github.com/droverhq/drover/agent/internal/hooktools"
	"github.com/droverhq/drover/agent/internal/uniter"
	"github.com/droverhq/drover/api"
)

// Config holds the machine agent's dependencies.
type Config struct {
	ConfigPath  string
	AgentBinary string // the drover-agent executable the tool symlinks point at
	Logger      *slog.Logger
}

// Agent is a running machine agent.
type Agent struct {
	cfg     Config
	conf    api.AgentConfig
	dataDir string
	conn    *apiconn.Conn
	locks   *locks
	gate    *fortress.Fortress
	log     *slog.Logger
	// moveMu serialises moves to another controller (moveTo).
	moveMu sync.Mutex
	// stop ends Run's context; rebooting says why (juju-reboot).
	stop      context.CancelFunc
	rebooting atomic.Bool
}

// LoadConfig reads agent.conf.
func LoadConfig(path string) (api.AgentConfig, error) {
	var c api.AgentConfig
	data, err := os.ReadFile(path)
	if err != nil {
		return c, err
	}
	if err := json.Unmarshal(data, &c); err != nil {
		return c, fmt.Errorf("agent config %s: %w", path, err)
	}
	if c.Tag == "" || len(c.ControllerAddresses) == 0 {
		return c, fmt.Errorf("agent config %s: tag and controller-addresses are required", path)
	}
	return c, nil
}

// New loads the config and prepares the agent.
func New(cfg Config) (*Agent, error) {
	if cfg.Logger == nil || cfg.ConfigPath == "" || cfg.AgentBinary == "" {
		return nil, errors.New("machine: ConfigPath, AgentBinary and Logger are required")
	}
	conf, err := LoadConfig(cfg.ConfigPath)
	if err != nil {
		return nil, err
	}
	a := &Agent{cfg: cfg, conf: conf, dataDir: conf.DataDir, locks: newLocks(),
		log: cfg.Logger.With("machine", conf.Machine)}
	if a.dataDir == "" {
		a.dataDir = filepath.Dir(cfg.ConfigPath)
	}
	addrs := conf.ControllerAddresses
	if saved, err := a.loadAddresses(); err != nil {
		a.log.Warn("ignoring saved controller addresses", "err", err)
	} else if len(saved) > 0 {
		addrs = append(saved, addrs...) // saved first; agent.conf as the fallback
	}
	a.conn, err = apiconn.New(apiconn.Config{Addresses: dedupe(addrs), CACert: []byte(conf.CACert), Tag: conf.Tag,
		Secret: conf.Secret, Logger: a.log.With("component", "apiconn"), OnAddresses: a.saveAddresses, OnRedirect: a.redirected})
	if err != nil {
		return nil, err
	}
	a.gate = fortress.New(a.conn.State)
	return a, nil
}

// bootID identifies the machine's current boot, for the uniters' reboot
// detection: the boot-id file a provider that runs machines as process
// trees keeps in the agent's data directory (the local provider starts a
// new one at each power-on), else the kernel's boot id; "" if neither can
// be read.
func bootID(dataDir string) string {
	for _, path := range []string{filepath.Join(dataDir, "boot-id"), "/proc/sys/kernel/random/boot_id"} {
		if b, err := os.ReadFile(path); err == nil {
			if f := strings.Fields(string(b)); len(f) > 0 {
				return f[0]
			}
		}
	}
	return ""
}

func dedupe(in []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

func (a *Agent) addressesFile() string { return filepath.Join(a.dataDir, "controllers.json") }

func (a *Agent) loadAddresses() ([]string, error) {
	data, err := os.ReadFile(a.addressesFile())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var addrs []string
	return addrs, json.Unmarshal(data, &addrs)
}

func (a *Agent) saveAddresses(addrs []string) {
	data, _ := json.Marshal(addrs)
	if err := uniter.WriteFileAtomic(a.addressesFile(), data, 0o600); err != nil {
		a.log.Warn("cannot save controller addresses", "err", err)
	}
}

// Run runs the agent until ctx ends, or until a hook asked for a reboot:
// then it powers the machine off and returns ErrRebooted.
func (a *Agent) Run(ctx context.Context) error {
	ctx, a.stop = context.WithCancel(ctx)
	defer a.stop()
	toolsDir := filepath.Join(a.dataDir, "tools")
	if err := hooktools.InstallSymlinks(toolsDir, a.cfg.AgentBinary); err != nil {
		return err
	}
	a.log.Info("machine agent started", "tag", a.conf.Tag, "controllers", a.conn.Addresses())
	mx, err := newMachineExec(execConfig{Machine: a.conf.Machine, Dir: a.dataDir, Env: os.Environ(), Caller: a.conn,
		States: a.conn.State, Lock: a.locks, Gate: a.gate, Logger: a.log.With("component", "exec")})
	if err != nil {
		return err
	}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return a.conn.Run(gctx) })
	g.Go(func() error { return a.supervise(gctx, toolsDir) })
	g.Go(func() error { return mx.Run(gctx) })
	mn := &minion{conn: a.conn, move: a.moveTo, dataDir: a.dataDir, tag: a.conf.Tag, secret: a.conf.Secret,
		gate: a.gate, retry: defaultValidateRetry, log: a.log.With("component", "migration-minion")}
	g.Go(func() error { return mn.run(gctx) })
	err = g.Wait()
	if a.rebooting.Load() {
		return a.powerOff()
	}
	return err
}

// running is one uniter under supervision.
type running struct {
	u      *uniter.Uniter
	cancel context.CancelFunc
	done   chan error
}

// supervise keeps one uniter per unit in the machine state.
func (a *Agent) supervise(ctx context.Context, toolsDir string) error {
	units := map[string]*running{}
	finished := map[string]bool{}
	retryAt := map[string]time.Time{}
	exited := make(chan string, 64)
	defer func() {
		for _, r := range units {
			r.cancel()
			<-r.done
		}
	}()
	for {
		ms, changed := a.conn.State()
		var wake <-chan time.Time
		if ms != nil {
			for name := range ms.Units {
				if units[name] != nil || finished[name] {
					continue
				}
				if t, ok := retryAt[name]; ok && time.Now().Before(t) {
					wake = time.After(time.Until(t))
					continue
				}
				r, err := a.startUniter(ctx, name, toolsDir, exited)
				if err != nil {
					a.log.Error("cannot start uniter", "unit", name, "err", err)
					retryAt[name] = time.Now().Add(time.Second)
					continue
				}
				units[name] = r
			}
			for name, r := range units {
				if _, ok := ms.Units[name]; !ok {
					r.cancel() // the unit is gone; its exit is handled below
				}
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
		case <-wake:
		case name := <-exited:
			r := units[name]
			err := <-r.done
			delete(units, name)
			switch {
			case r.u.Finished():
				finished[name] = true
				if rmErr := os.RemoveAll(a.unitDir(name)); rmErr != nil {
					a.log.Warn("cannot remove unit directory", "unit", name, "err", rmErr)
				}
				a.log.Info("unit removed", "unit", name)
			case ctx.Err() == nil && err != nil:
				a.log.Error("uniter failed; restarting", "unit", name, "err", err)
				retryAt[name] = time.Now().Add(2 * time.Second)
			}
		}
	}
}

func (a *Agent) unitDir(unit string) string {
	return filepath.Join(a.dataDir, "agents", "unit-"+strings.ReplaceAll(unit, "/", "-"))
}

func (a *Agent) startUniter(ctx context.Context, name, toolsDir string, exited chan<- string) (*running, error) {
	dir := a.unitDir(name)
	sum := sha256.Sum256([]byte(dir))
	u, err := uniter.New(uniter.Config{Unit: name, Dir: dir, ToolsDir: toolsDir, Caller: a.conn,
		Download: a.conn.Download, DownloadResource: a.conn.DownloadResource, States: a.conn.State, APIAddresses: a.conn.Addresses, Lock: a.locks,
		Logger: a.log, SocketAddress: "@drover-agent-" + hex.EncodeToString(sum[:10]) + "-" + filepath.Base(dir),
		BootID: bootID(a.dataDir), Reboot: a.rebootFunc(), Gate: a.gate})
	if err != nil {
		return nil, err
	}
	uctx, cancel := context.WithCancel(ctx)
	r := &running{u: u, cancel: cancel, done: make(chan error, 1)}
	go func() { // supervised: joined through done
		r.done <- u.Run(uctx)
		exited <- name
	}()
	a.log.Info("uniter started", "unit", name)
	return r, nil
}
