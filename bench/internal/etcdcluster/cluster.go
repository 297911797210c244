// Package etcdcluster runs a real multi-member etcd cluster as child
// processes on loopback ports, as the reference point for Drover's commit
// benchmarks.
//
// Invariants: members keep etcd's default fsync behaviour (no
// --unsafe-no-fsync), so commits cost what they cost in production; Stop
// signals only the processes this package started, by their PIDs.
package etcdcluster

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/droverhq/drover/tests/testkit"
)

const (
	healthPoll  = 50 * time.Millisecond
	stopTimeout = 10 * time.Second
)

// ErrMemberExited means an etcd process ended while the cluster was running.
var ErrMemberExited = errors.New("etcdcluster: member exited")

// Config says which binary to run and where.
type Config struct {
	Binary  string // path to the etcd binary
	Dir     string // each member gets Dir/<name> for data and Dir/<name>.log
	Members int    // 0 means 3
}

func (c *Config) validate() error {
	if c.Members == 0 {
		c.Members = 3
	}
	var errs []error
	if c.Members < 1 {
		errs = append(errs, fmt.Errorf("members %d < 1", c.Members))
	}
	if c.Dir == "" {
		errs = append(errs, errors.New("no Dir"))
	}
	if fi, err := os.Stat(c.Binary); err != nil || fi.IsDir() {
		errs = append(errs, fmt.Errorf("etcd binary %q not found (build it: cd bench && go build -o bin/etcd go.etcd.io/etcd/server/v3)", c.Binary))
	}
	return errors.Join(errs...)
}

type member struct {
	name       string
	clientURL  string
	peerURL    string
	logPath    string
	cmd        *exec.Cmd
	done       chan struct{} // closed when the process has exited
	exitStatus error         // set before done is closed
}

// Cluster is a running etcd cluster and one client shared by all users.
type Cluster struct {
	members []*member
	client  *clientv3.Client
}

// Start launches the members, waits until every member reports the same
// leader, and returns the cluster. On failure everything started is stopped.
func Start(ctx context.Context, cfg Config) (*Cluster, error) {
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("etcdcluster: %w", err)
	}
	c := &Cluster{}
	for i := range cfg.Members {
		m, err := newMember(cfg.Dir, i)
		if err != nil {
			return nil, err
		}
		c.members = append(c.members, m)
	}
	var initial []string
	for _, m := range c.members {
		initial = append(initial, m.name+"="+m.peerURL)
	}
	for _, m := range c.members {
		if err := m.start(cfg.Binary, cfg.Dir, strings.Join(initial, ",")); err != nil {
			return nil, errors.Join(err, c.Stop())
		}
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return nil, errors.Join(fmt.Errorf("etcdcluster: client: %w", err), c.Stop())
	}
	c.client = cli
	if err := c.waitHealthy(ctx); err != nil {
		return nil, errors.Join(err, c.Stop())
	}
	return c, nil
}

func newMember(dir string, i int) (*member, error) {
	cport, err := testkit.ReservePort()
	if err != nil {
		return nil, err
	}
	pport, err := testkit.ReservePort()
	if err != nil {
		return nil, err
	}
	name := "m" + strconv.Itoa(i)
	return &member{
		name:      name,
		clientURL: (&url.URL{Scheme: "http", Host: "127.0.0.1:" + strconv.Itoa(cport)}).String(),
		peerURL:   (&url.URL{Scheme: "http", Host: "127.0.0.1:" + strconv.Itoa(pport)}).String(),
		logPath:   filepath.Join(dir, name+".log"),
		done:      make(chan struct{}),
	}, nil
}

func (m *member) start(binary, dir, initialCluster string) error {
	logf, err := os.Create(m.logPath)
	if err != nil {
		return fmt.Errorf("etcdcluster: %w", err)
	}
	defer logf.Close() // the child has its own descriptor
	m.cmd = exec.Command(binary,
		"--name", m.name,
		"--data-dir", filepath.Join(dir, m.name),
		"--listen-client-urls", m.clientURL,
		"--advertise-client-urls", m.clientURL,
		"--listen-peer-urls", m.peerURL,
		"--initial-advertise-peer-urls", m.peerURL,
		"--initial-cluster", initialCluster,
		"--initial-cluster-state", "new",
		"--initial-cluster-token", "drover-bench",
		"--log-level", "warn",
	)
	m.cmd.Stdout, m.cmd.Stderr = logf, logf
	m.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // never outlive the benchmark
	if err := m.cmd.Start(); err != nil {
		return fmt.Errorf("etcdcluster: start %s: %w", m.name, err)
	}
	go func() { // the process's only waiter
		m.exitStatus = m.cmd.Wait()
		close(m.done)
	}()
	return nil
}

// waitHealthy polls every member's status until all agree on a leader.
func (c *Cluster) waitHealthy(ctx context.Context) error {
	var lastErr error
	for {
		if lastErr = c.healthy(ctx); lastErr == nil {
			return nil
		}
		for _, m := range c.members {
			select {
			case <-m.done:
				return fmt.Errorf("%w: %s (%v); see %s", ErrMemberExited, m.name, m.exitStatus, m.logPath)
			default:
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("etcdcluster: not healthy: %w (last: %v)", context.Cause(ctx), lastErr)
		case <-time.After(healthPoll):
		}
	}
}

func (c *Cluster) healthy(ctx context.Context) error {
	var leader uint64
	for _, m := range c.members {
		sctx, cancel := context.WithTimeout(ctx, time.Second)
		st, err := c.client.Status(sctx, m.clientURL)
		cancel()
		switch {
		case err != nil:
			return fmt.Errorf("%s: %w", m.name, err)
		case st.Leader == 0:
			return fmt.Errorf("%s: no leader", m.name)
		case leader != 0 && st.Leader != leader:
			return fmt.Errorf("%s: leader %x, others %x", m.name, st.Leader, leader)
		}
		leader = st.Leader
	}
	return nil
}

// Endpoints are the members' client URLs.
func (c *Cluster) Endpoints() []string {
	eps := make([]string, len(c.members))
	for i, m := range c.members {
		eps[i] = m.clientURL
	}
	return eps
}

// Client is the cluster's shared client; Stop closes it.
func (c *Cluster) Client() *clientv3.Client { return c.client }

// Stop closes the client and terminates each member process (SIGTERM, then
// SIGKILL after 10s), waiting for all of them.
func (c *Cluster) Stop() error {
	var errs []error
	if c.client != nil {
		errs = append(errs, c.client.Close())
		c.client = nil
	}
	for _, m := range c.members {
		if m.cmd != nil && m.cmd.Process != nil {
			errs = append(errs, m.stop())
		}
	}
	return errors.Join(errs...)
}

func (m *member) stop() error {
	select {
	case <-m.done:
		return nil
	default:
	}
	if err := m.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("etcdcluster: signal %s (pid %d): %w", m.name, m.cmd.Process.Pid, err)
	}
	select {
	case <-m.done:
		return nil
	case <-time.After(stopTimeout):
	}
	if err := m.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("etcdcluster: kill %s (pid %d): %w", m.name, m.cmd.Process.Pid, err)
	}
	<-m.done
	return nil
}

// Target adapts the cluster to load.Target: each Put is one linearizable
// etcd write through the shared client.
type Target struct{ c *Cluster }

// Target returns the benchmark adapter for this cluster.
func (c *Cluster) Target() *Target { return &Target{c: c} }

// Name is "etcd".
func (t *Target) Name() string { return "etcd" }

// Put writes key=value and returns once a quorum has committed it.
func (t *Target) Put(ctx context.Context, key, value string) error {
	_, err := t.c.client.Put(ctx, key, value)
	return err
}
