package spoke

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/tests/testkit"
)

// A node that cannot reach the index a read names answers within
// ReadWait, and never from older state: cut off from the leader it says
// unavailable, so a client that knows other nodes reads its write there.
func TestLaggingNodeNeverAnswersOlderThanTheIndexAsked(t *testing.T) {
	c := newTestClusterWith(t, 3, func(cfg *Config) { cfg.ReadWait = 300 * time.Millisecond })
	ctx := t.Context()
	l := c.leader()
	lag, other := (l+1)%3, (l+2)%3
	c.isolate(lag)
	var m *api.Model
	testkit.EventuallyWithin(t, 30*time.Second, func() (bool, error) {
		var err error
		m, err = c.client(l, other).AddModel(ctx, api.AddModelRequest{Name: "fresh"})
		return err == nil || errors.Is(err, api.ErrAlreadyExists), nil
	}, "a write to the majority")
	if m == nil {
		t.Fatal("no model")
	}

	short, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	start := time.Now()
	_, err := c.client(lag).Model(m.UUID).Info(short, api.ReadOptions{Index: m.ModifyIndex})
	var ae *api.Error
	if !errors.As(err, &ae) || ae.Code != api.CodeUnavailable {
		t.Fatalf("read at index %d on the cut-off node: %v; want unavailable", m.ModifyIndex, err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("the cut-off node took %s to refuse; want about ReadWait", d)
	}

	// The same read through a client that knows another node fails over.
	got, err := c.client(lag, other).Model(m.UUID).Info(short, api.ReadOptions{Index: m.ModifyIndex})
	if err != nil || got.Name != "fresh" {
		t.Fatalf("read at index through the cut-off node then another: %+v, %v", got, err)
	}
}

// A follower that gets no log entries but still hears from its leader's
// API relays a read naming an index it has not applied to the leader,
// after ReadWait, and answers with the leader's state: the client never
// waits without end and never reads older than its write.
func TestLaggingFollowerRelaysReadToTheLeader(t *testing.T) {
	c := newTestClusterWith(t, 3, func(cfg *Config) {
		cfg.ReadWait = 200 * time.Millisecond
		// The follower cut from raft keeps its leader for the test's span.
		cfg.RaftHeartbeat, cfg.RaftElection = 3*time.Second, 3*time.Second
	})
	ctx := t.Context()
	l := c.leader()
	lag := (l + 1) % 3
	m, err := c.client(l).AddModel(ctx, api.AddModelRequest{Name: "relay"})
	if err != nil {
		t.Fatal(err)
	}
	c.faults.CutRaft(c.nodes[lag].srv.NodeID(), c.nodes[l].srv.NodeID())
	defer c.faults.Heal()
	cl := c.client(l)
	if _, err := cl.Model(m.UUID).SetConfig(ctx, api.ConfigChange{Set: map[string]any{"k": "relayed"}}); err != nil {
		t.Fatal(err)
	}
	want := cl.Index()
	if at, _ := c.nodes[lag].srv.WaitRead(ctx, 0, false); at >= want {
		t.Fatalf("the cut-off follower applied index %d already (want it behind %d)", at, want)
	}
	short, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	lc := c.client(lag)
	cfg, err := lc.Model(m.UUID).Config(short, api.ReadOptions{Index: want})
	if err != nil || cfg["k"] != "relayed" {
		t.Fatalf("read at index %d through the follower cut from raft: %v, %v", want, cfg, err)
	}
	if lc.Index() < want {
		t.Fatalf("the relayed read answered index %d; want at least %d", lc.Index(), want)
	}
	if at, _ := c.nodes[lag].srv.WaitRead(ctx, 0, false); at >= want {
		t.Fatalf("the follower caught up (at %d) instead of relaying", at)
	}
}

// An agent failing over to a follower that has not reached the index it
// resumes after is refused as unavailable (it tries another node), never
// given a state older than what it has seen; a node that has reached it
// serves it.
func TestAgentResumingAheadOfAFollowerIsRefused(t *testing.T) {
	c := newTestCluster(t, 3)
	ctx := t.Context()
	l := c.leader()
	lag, other := (l+1)%3, (l+2)%3
	cl := c.client(l)
	m, err := cl.AddModel(ctx, api.AddModelRequest{Name: "agents"})
	if err != nil {
		t.Fatal(err)
	}
	ch, err := cl.UploadCharm(ctx, bytes.NewReader(archive(t, "testdata/charms/kv")))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Model(m.UUID).Deploy(ctx, api.DeployRequest{Application: "kv", CharmSHA256: ch.SHA256, NumUnits: 1}); err != nil {
		t.Fatal(err)
	}
	if err := c.nodes[l].srv.SetAgentSecret(ctx, m.UUID, "0", "secret-0"); err != nil {
		t.Fatal(err)
	}
	for _, n := range c.nodes {
		if _, err := n.srv.WaitRead(ctx, 0, true); err != nil {
			t.Fatal(err)
		}
	}
	c.faults.CutRaft(c.nodes[lag].srv.NodeID(), c.nodes[l].srv.NodeID())
	defer c.faults.Heal()
	if _, err := cl.Model(m.UUID).SetConfig(ctx, api.ConfigChange{Set: map[string]any{"k": "later"}}); err != nil {
		t.Fatal(err)
	}
	since := cl.Index()
	tag, ca := "machine-"+m.UUID+"-0", []byte(c.cred.CACert)
	a, resp, err := dialAgent(ctx, c.nodes[lag].cfg.Listen, ca, tag, "secret-0", since)
	if err == nil {
		a.close()
		t.Fatalf("a follower cut from raft served an agent resuming after index %d", since)
	}
	if resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("agent resuming after %d on the cut-off follower: %v %v; want 503", since, err, resp)
	}
	a, _, err = dialAgent(ctx, c.nodes[other].cfg.Listen, ca, tag, "secret-0", since)
	if err != nil {
		t.Fatalf("agent resuming after %d on a current follower: %v", since, err)
	}
	a.close()
}
