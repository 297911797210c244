package spoke

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/spoke/internal/cluster"
	"github.com/droverhq/drover/tests/testkit"
)

// testCluster is an in-process controller of several nodes on loopback,
// with real raft over mutual TLS, real HTTPS, and fault injection.
type testCluster struct {
	t      testing.TB
	faults *cluster.Faults
	nodes  []*testNode
	cred   *AdminCredential
	root   string        // the nodes' data dirs are under it
	adjust func(*Config) // applied to each node's config before it starts
}

type testNode struct {
	cfg    Config
	srv    *Server
	cancel context.CancelFunc
	done   chan error
}

func testLogger(t testing.TB) *slog.Logger {
	if os.Getenv("DROVER_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// testRaftTimeout shortens raft's timers so failover tests run fast;
// benchmarks use production timers (0).
var testRaftTimeout = 400 * time.Millisecond

// newTestCluster bootstraps node 0 and joins n-1 more through the API.
func newTestCluster(t testing.TB, n int) *testCluster {
	t.Helper()
	return newTestClusterWith(t, n, nil)
}

// newTestClusterWith is newTestCluster with a hook that adjusts each node's
// config before it starts.
func newTestClusterWith(t testing.TB, n int, adjust func(*Config)) *testCluster {
	t.Helper()
	c := &testCluster{t: t, faults: cluster.NewFaults(), root: t.TempDir(), adjust: adjust}
	t.Cleanup(c.stopAll)
	for range n {
		c.addNode()
	}
	return c
}

// addNode starts one more node: the first bootstraps the controller, the
// others join it with a join token from node 0. It waits until it votes.
func (c *testCluster) addNode() {
	t := c.t
	t.Helper()
	i := len(c.nodes)
	cfg := Config{
		DataDir:       filepath.Join(c.root, fmt.Sprintf("node%d", i)),
		Listen:        testkit.FreeAddr(t),
		RaftListen:    testkit.FreeAddr(t),
		Name:          "test",
		Logger:        testLogger(t).With("test-node", i),
		Faults:        c.faults,
		RaftHeartbeat: testRaftTimeout,
		RaftElection:  testRaftTimeout,
		NoProvisioner: true,
	}
	if i == 0 {
		cfg.Bootstrap = true
	} else {
		tok, err := c.client(0).CreateJoinToken(t.Context(), time.Minute)
		if err != nil {
			t.Fatalf("join token: %v", err)
		}
		cfg.Join, cfg.JoinToken = c.nodes[0].cfg.Listen, tok.Token
	}
	if c.adjust != nil {
		c.adjust(&cfg)
	}
	c.nodes = append(c.nodes, &testNode{cfg: cfg})
	c.start(i)
	if i == 0 {
		cred, err := ReadAdminCredential(cfg.DataDir)
		if err != nil {
			t.Fatal(err)
		}
		c.cred = cred
	}
	c.waitVoters(i + 1)
}

func (c *testCluster) start(i int) {
	c.t.Helper()
	nd := c.nodes[i]
	ready := make(chan struct{})
	cfg := nd.cfg
	cfg.Ready = ready
	srv, err := New(c.t.Context(), cfg)
	if err != nil {
		c.t.Fatalf("node %d: %v", i, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	nd.srv, nd.cancel, nd.done = srv, cancel, make(chan error, 1)
	go func() { nd.done <- srv.Serve(ctx) }()
	<-ready
	// The first node must finish bootstrapping before anyone can log in.
	if i == 0 && nd.cfg.Bootstrap {
		testkit.EventuallyWithin(c.t, 20*time.Second, func() (bool, error) {
			_, err := c.client(0).WhoAmI(c.t.Context())
			return err == nil, nil
		}, "bootstrap")
	}
}

// stop ends a node as abruptly as an in-process node can: raft stops
// without a final snapshot, connections drop.
func (c *testCluster) stop(i int) {
	nd := c.nodes[i]
	if nd.cancel == nil {
		return
	}
	nd.cancel()
	if err := <-nd.done; err != nil && !errors.Is(err, context.Canceled) {
		c.t.Logf("node %d stopped with %v", i, err)
	}
	nd.cancel, nd.srv = nil, nil
}

func (c *testCluster) stopAll() {
	for i := range c.nodes {
		c.stop(i)
	}
}

func (c *testCluster) restart(i int) {
	c.stop(i)
	c.start(i)
}

func (c *testCluster) client(i int, more ...int) *api.Client {
	c.t.Helper()
	addrs := []string{c.nodes[i].cfg.Listen}
	for _, j := range more {
		addrs = append(addrs, c.nodes[j].cfg.Listen)
	}
	pw, user, ca := "", "", []byte(nil)
	if c.cred != nil {
		pw, user, ca = c.cred.Password, c.cred.User, []byte(c.cred.CACert)
	} else {
		cred, err := ReadAdminCredential(c.nodes[0].cfg.DataDir)
		if err != nil {
			c.t.Fatal(err)
		}
		pw, user, ca = cred.Password, cred.User, []byte(cred.CACert)
	}
	cl, err := api.NewClient(api.ClientConfig{Addresses: addrs, CACert: ca, User: user, Password: pw, Timeout: 10 * time.Second})
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(cl.Close)
	return cl
}

func (c *testCluster) nodeIDs() []string {
	var ids []string
	for _, n := range c.nodes {
		if n.srv != nil {
			ids = append(ids, n.srv.NodeID())
		}
	}
	return ids
}

// leader waits for a node that believes it leads and returns its index.
func (c *testCluster) leader() int {
	c.t.Helper()
	var idx int
	testkit.EventuallyWithin(c.t, 20*time.Second, func() (bool, error) {
		for i, n := range c.nodes {
			if n.srv != nil && n.srv.IsLeader() {
				idx = i
				return true, nil
			}
		}
		return false, nil
	}, "raft leader")
	return idx
}

func (c *testCluster) waitVoters(n int) {
	c.t.Helper()
	testkit.EventuallyWithin(c.t, 30*time.Second, func() (bool, error) {
		info, err := c.client(0).ControllerInfo(c.t.Context(), api.ReadOptions{Consistent: true})
		if err != nil {
			return false, nil
		}
		v := 0
		for _, nd := range info.Nodes {
			if nd.Voter {
				v++
			}
		}
		return v >= n && len(info.APIAddresses) >= n, nil
	}, "voters")
}

// isolate cuts node i off from every other node.
func (c *testCluster) isolate(i int) {
	c.faults.Isolate(c.nodes[i].srv.NodeID(), c.nodeIDs()...)
}
