// Package drovercluster runs a real 3-node Drover spoke controller as child
// droverd processes on loopback ports, and adapts it to load.Target so
// commitbench can compare it with etcd.
//
// Invariants: node 1 bootstraps, the others join it with a join token each,
// one at a time, and Start returns only once ControllerInfo lists every node
// as a voter; Stop signals only the processes this package started, by their
// PIDs; benchmark writes go to the leader's API address through one client.
package drovercluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/spoke"
	"github.com/droverhq/drover/tests/testkit"
)

const (
	pollInterval = 50 * time.Millisecond
	stopTimeout  = 10 * time.Second
	// MaxConcurrency is the number of writes in flight the benchmark
	// client's connection pool is sized for.
	MaxConcurrency = 256
)

// ErrNodeExited means a droverd process ended while the cluster was running.
var ErrNodeExited = errors.New("drovercluster: node exited")

// Config says which binary to run and where.
type Config struct {
	Binary string // path to the droverd binary
	Dir    string // node i gets Dir/n<i> for data and Dir/n<i>.log
	Nodes  int    // 0 means 3
}

func (c *Config) validate() error {
	if c.Nodes == 0 {
		c.Nodes = 3
	}
	var errs []error
	if c.Nodes < 1 {
		errs = append(errs, fmt.Errorf("nodes %d < 1", c.Nodes))
	}
	if c.Dir == "" {
		errs = append(errs, errors.New("no Dir"))
	}
	if fi, err := os.Stat(c.Binary); err != nil || fi.IsDir() {
		errs = append(errs, fmt.Errorf("droverd binary %q not found (build it: go build -o bench/bin/droverd ./cmd/droverd)", c.Binary))
	}
	return errors.Join(errs...)
}

type node struct {
	name       string
	apiAddr    string
	raftAddr   string
	dataDir    string
	logPath    string
	cmd        *exec.Cmd
	done       chan struct{} // closed when the process has exited
	exitStatus error         // set before done is closed
}

// Cluster is a running Drover controller.
type Cluster struct {
	nodes  []*node
	admin  *api.Client // setup calls, against any node
	target *Target
}

// Start launches the nodes, waits until all are voters, creates the model
// the benchmark writes to and returns the cluster. On failure everything
// started is stopped.
func Start(ctx context.Context, cfg Config) (*Cluster, error) {
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("drovercluster: %w", err)
	}
	c := &Cluster{}
	for i := range cfg.Nodes {
		n, err := newNode(cfg.Dir, i)
		if err != nil {
			return nil, err
		}
		c.nodes = append(c.nodes, n)
	}
	if err := c.start(ctx, cfg); err != nil {
		return nil, errors.Join(err, c.Stop())
	}
	return c, nil
}

func (c *Cluster) start(ctx context.Context, cfg Config) error {
	first := c.nodes[0]
	if err := first.start(cfg.Binary, "--bootstrap"); err != nil {
		return err
	}
	var cred *spoke.AdminCredential
	err := c.poll(ctx, "node 1 ready", func() (err error) {
		if cred, err = spoke.ReadAdminCredential(first.dataDir); err != nil {
			return err
		}
		return readyz(ctx, first.apiAddr, []byte(cred.CACert))
	})
	if err != nil {
		return err
	}
	c.admin, err = api.NewClient(api.ClientConfig{Addresses: []string{first.apiAddr},
		CACert: []byte(cred.CACert), User: cred.User, Password: cred.Password, Timeout: 10 * time.Second})
	if err != nil {
		return err
	}
	var info *api.ControllerInfo
	for i, n := range c.nodes[1:] {
		tok, err := c.admin.CreateJoinToken(ctx, 0)
		if err != nil {
			return fmt.Errorf("drovercluster: join token: %w", err)
		}
		if err := n.start(cfg.Binary, "--join", first.apiAddr, "--join-token", tok.Token); err != nil {
			return err
		}
		err = c.poll(ctx, fmt.Sprintf("%d voters", i+2), func() (err error) {
			if info, err = c.admin.ControllerInfo(ctx); err != nil {
				return err
			}
			return checkVoters(info, i+2)
		})
		if err != nil {
			return err
		}
	}
	if info == nil { // a single node
		if info, err = c.admin.ControllerInfo(ctx); err != nil {
			return err
		}
	}
	c.target, err = NewTarget(ctx, info, api.ClientConfig{
		CACert: []byte(cred.CACert), User: cred.User, Password: cred.Password})
	return err
}

func newNode(dir string, i int) (*node, error) {
	ports := make([]int, 2)
	for j := range ports {
		p, err := testkit.ReservePort()
		if err != nil {
			return nil, err
		}
		ports[j] = p
	}
	name := "n" + strconv.Itoa(i+1)
	return &node{
		name:     name,
		apiAddr:  "127.0.0.1:" + strconv.Itoa(ports[0]),
		raftAddr: "127.0.0.1:" + strconv.Itoa(ports[1]),
		dataDir:  filepath.Join(dir, name),
		logPath:  filepath.Join(dir, name+".log"),
		done:     make(chan struct{}),
	}, nil
}

func (n *node) start(binary string, extra ...string) error {
	logf, err := os.Create(n.logPath)
	if err != nil {
		return fmt.Errorf("drovercluster: %w", err)
	}
	defer logf.Close() // the child has its own descriptor
	args := append([]string{"spoke", "--data-dir", n.dataDir, "--listen", n.apiAddr,
		"--raft-listen", n.raftAddr, "--log-level", "warn"}, extra...)
	n.cmd = exec.Command(binary, args...)
	n.cmd.Stdout, n.cmd.Stderr = logf, logf
	n.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // never outlive the benchmark
	if err := n.cmd.Start(); err != nil {
		return fmt.Errorf("drovercluster: start %s: %w", n.name, err)
	}
	go func() { // the process's only waiter
		n.exitStatus = n.cmd.Wait()
		close(n.done)
	}()
	return nil
}

// poll calls cond every pollInterval until it succeeds, a node exits or ctx
// ends.
func (c *Cluster) poll(ctx context.Context, what string, cond func() error) error {
	for {
		lastErr := cond()
		if lastErr == nil {
			return nil
		}
		for _, n := range c.nodes {
			select {
			case <-n.done:
				return fmt.Errorf("%w: %s (%v); see %s", ErrNodeExited, n.name, n.exitStatus, n.logPath)
			default:
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("drovercluster: waiting for %s: %w (last: %v)", what, context.Cause(ctx), lastErr)
		case <-time.After(pollInterval):
		}
	}
}

// readyz is nil once GET https://addr/readyz answers 200.
func readyz(ctx context.Context, addr string, caPEM []byte) error {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return errors.New("no CA certificate in controller.json")
	}
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}
	defer tr.CloseIdleConnections()
	rctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, "https://"+addr+"/readyz", nil)
	if err != nil {
		return err
	}
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("readyz: %s", resp.Status)
	}
	return nil
}

// checkVoters is nil when info lists n voters, one of them the leader.
func checkVoters(info *api.ControllerInfo, n int) error {
	voters, leaders := 0, 0
	for _, nd := range info.Nodes {
		if nd.Voter {
			voters++
		}
		if nd.Leader {
			leaders++
		}
	}
	if voters != n || leaders != 1 {
		return fmt.Errorf("%d voters and %d leaders, want %d and 1", voters, leaders, n)
	}
	return nil
}

// Target returns the benchmark adapter.
func (c *Cluster) Target() *Target { return c.target }

// Stop closes the clients and terminates each node (SIGTERM, then SIGKILL
// after 10s), waiting for all of them.
func (c *Cluster) Stop() error {
	if c.target != nil {
		c.target.Close()
	}
	if c.admin != nil {
		c.admin.Close()
	}
	errs := make(chan error, len(c.nodes))
	for _, n := range c.nodes {
		go func() { errs <- n.stop() }()
	}
	var all []error
	for range c.nodes {
		all = append(all, <-errs)
	}
	return errors.Join(all...)
}

func (n *node) stop() error {
	if n.cmd == nil || n.cmd.Process == nil {
		return nil
	}
	select {
	case <-n.done:
		return nil
	default:
	}
	if err := n.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("drovercluster: signal %s (pid %d): %w", n.name, n.cmd.Process.Pid, err)
	}
	select {
	case <-n.done:
		return nil
	case <-time.After(stopTimeout):
	}
	if err := n.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("drovercluster: kill %s (pid %d): %w", n.name, n.cmd.Process.Pid, err)
	}
	<-n.done
	return nil
}
