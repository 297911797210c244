package tests

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/tests/testkit"
)

// TestReadYourWritesRandomized writes through one node and reads through
// another, picked at random, as a client that keeps its last index between
// calls (as the CLI does across invocations) and starts each call with a
// new connection. Meanwhile a node joins (and is read from at once, while
// it catches up) and a node is killed and restarted. Every read must show
// the client's last write.
func TestReadYourWritesRandomized(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed>>1))
	c := startProcCluster(t, 2)
	ctx := t.Context()
	m, err := c.client(0, 1).AddModel(ctx, api.AddModelRequest{Name: "ryw"})
	if err != nil {
		t.Fatal(err)
	}
	last := m.ModifyIndex
	// call runs fn with a fresh client that reaches node first, the
	// others after it, and keeps the highest index it saw.
	call := func(first int, fn func(cl *api.Client) error) error {
		addrs := []string{c.nodes[first].listen}
		for i, n := range c.nodes {
			if i != first {
				addrs = append(addrs, n.listen)
			}
		}
		cl, err := api.NewClient(api.ClientConfig{Addresses: addrs, CACert: []byte(c.cred.CACert),
			User: c.cred.User, Password: c.cred.Password, Timeout: 30 * time.Second,
			ReadYourWrites: true, Index: last})
		if err != nil {
			return err
		}
		defer cl.Close()
		err = fn(cl)
		last = max(last, cl.Index())
		return err
	}

	const steps = 160
	joinAt, restartAt := 40+rng.IntN(20), 90+rng.IntN(30)
	want := ""
	for step := range steps {
		switch step {
		case joinAt:
			tok, err := c.client(0).CreateJoinToken(ctx, 5*time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			p := &proc{t: t, dir: filepath.Join(filepath.Dir(c.nodes[0].dir), "node2"), listen: testkit.FreeAddr(t), raft: testkit.FreeAddr(t),
				args: []string{"--join", c.nodes[0].listen, "--join-token", tok.Token}}
			c.nodes = append(c.nodes, p)
			startProc(t, p)
			t.Logf("step %d: node 2 joins", step)
		case restartAt:
			i := rng.IntN(len(c.nodes))
			c.restart(i)
			t.Logf("step %d: node %d restarted", step, i)
		}
		w, r := rng.IntN(len(c.nodes)), rng.IntN(len(c.nodes))
		if rng.IntN(3) == 0 {
			want = fmt.Sprintf("v%d", step)
			err := call(w, func(cl *api.Client) error {
				_, err := cl.Model(m.UUID).SetConfig(ctx, api.ConfigChange{Set: map[string]any{"k": want}})
				return err
			})
			if err != nil {
				t.Fatalf("step %d: write k=%s through node %d: %v", step, want, w, err)
			}
		}
		var got any
		err := call(r, func(cl *api.Client) error {
			cfg, err := cl.Model(m.UUID).Config(ctx)
			got = cfg["k"]
			return err
		})
		if err != nil {
			t.Fatalf("step %d: read through node %d (index %d): %v", step, r, last, err)
		}
		if want != "" && got != want {
			t.Fatalf("step %d: read through node %d at index %d: k = %v; want the last write, %s", step, r, last, got, want)
		}
	}
}
