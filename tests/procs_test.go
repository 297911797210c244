// Package tests holds end-to-end tests that run the real binaries as
// separate processes.
package tests

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/spoke"
	"github.com/droverhq/drover/spoke/provider/local"
	"github.com/droverhq/drover/tests/testkit"
)

var (
	buildOnce sync.Once
	binDir    string
	buildErr  error
)

// binaries builds the server, client and agent binaries once per test
// binary, side by side (drover bootstrap finds droverd next to itself).
func binaries(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "drover-e2e-bin-")
		if buildErr != nil {
			return
		}
		// drover-agent sits next to droverd, where the local provisioner
		// looks for it; drover bootstrap finds droverd next to itself.
		cmd := exec.Command("go", "build", "-o", binDir+"/", "github.com/droverhq/drover/cmd/droverd",
			"github.com/droverhq/drover/cmd/drover", "github.com/droverhq/drover/cmd/drover-agent")
		out, err := cmd.CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binDir
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// proc is one droverd spoke node run as a real process.
type proc struct {
	t       *testing.T
	dir     string
	listen  string
	raft    string
	args    []string
	extra   []string // flags kept across restarts
	cmd     *exec.Cmd
	exited  chan struct{}
	logFile *os.File
}

func startProc(t *testing.T, p *proc) {
	t.Helper()
	bin := filepath.Join(binaries(t), "droverd")
	args := append([]string{"spoke", "--data-dir", p.dir, "--listen", p.listen, "--raft-listen", p.raft, "--log-level", "warn"}, p.args...)
	cmd := exec.Command(bin, args...)
	if p.logFile == nil {
		f, err := os.OpenFile(filepath.Join(filepath.Dir(p.dir), filepath.Base(p.dir)+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		p.logFile = f
		t.Cleanup(func() { f.Close() })
	}
	cmd.Stdout, cmd.Stderr = p.logFile, p.logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p.cmd, p.exited = cmd, make(chan struct{})
	go func() { cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() { p.kill() })
}

// kill sends SIGKILL: no shutdown code runs.
func (p *proc) kill() {
	if p.cmd == nil || p.cmd.Process == nil {
		return
	}
	select {
	case <-p.exited:
		return
	default:
	}
	p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
}

type procCluster struct {
	t     *testing.T
	nodes []*proc
	cred  *spoke.AdminCredential
}

func (c *procCluster) client(idx ...int) *api.Client {
	c.t.Helper()
	return c.clientWithin(10*time.Second, idx...)
}

// clientWithin is client with a per-call timeout of its own.
func (c *procCluster) clientWithin(timeout time.Duration, idx ...int) *api.Client {
	c.t.Helper()
	var addrs []string
	for _, i := range idx {
		addrs = append(addrs, c.nodes[i].listen)
	}
	cl, err := api.NewClient(api.ClientConfig{Addresses: addrs, CACert: []byte(c.cred.CACert), User: c.cred.User, Password: c.cred.Password, Timeout: timeout})
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(cl.Close)
	return cl
}

// startProcCluster bootstraps one node and joins n-1 more.
func startProcCluster(t *testing.T, n int) *procCluster {
	t.Helper()
	return startProcClusterWith(t, n, nil)
}

// startProcClusterWith is startProcCluster with extra droverd flags for
// every node.
func startProcClusterWith(t *testing.T, n int, extra []string) *procCluster {
	t.Helper()
	root := t.TempDir()
	c := &procCluster{t: t}
	// Registered before the nodes start, so it runs after they are killed:
	// the local machines in the nodes' default machine directories (outside
	// the data directory as root) go with their users.
	t.Cleanup(func() {
		for i := 0; i < n; i++ {
			if err := local.DestroyMachines(local.DefaultDir(filepath.Join(root, "node"+strconv.Itoa(i))), 10*time.Second); err != nil {
				t.Error(err)
			}
		}
	})
	for i := 0; i < n; i++ {
		p := &proc{t: t, dir: filepath.Join(root, "node"+strconv.Itoa(i)), listen: testkit.FreeAddr(t), raft: testkit.FreeAddr(t)}
		if i == 0 {
			p.args = []string{"--bootstrap", "--name", "e2e"}
		} else {
			tok, err := c.client(0).CreateJoinToken(t.Context(), 5*time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			p.args = []string{"--join", c.nodes[0].listen, "--join-token", tok.Token}
		}
		p.args = append(p.args, extra...)
		p.extra = extra
		c.nodes = append(c.nodes, p)
		startProc(t, p)
		if i == 0 {
			testkit.EventuallyWithin(t, 30*time.Second, func() (bool, error) {
				cred, err := spoke.ReadAdminCredential(p.dir)
				if err != nil {
					return false, nil
				}
				c.cred = cred
				_, err = c.client(0).WhoAmI(t.Context())
				return err == nil, nil
			}, "bootstrap node ready")
		}
		want := i + 1
		testkit.EventuallyWithin(t, 30*time.Second, func() (bool, error) {
			info, err := c.client(0).ControllerInfo(t.Context(), api.ReadOptions{Consistent: true})
			return err == nil && len(info.Nodes) >= want, nil
		}, "node joined")
	}
	return c
}

// restart starts a killed node again on its data dir. A joined node needs
// no join flags any more: its data dir says who it is.
func (c *procCluster) restart(i int) {
	p := c.nodes[i]
	p.kill()
	if i != 0 {
		p.args = p.extra
	}
	startProc(c.t, p)
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}
