package drovercluster

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"net/http"
	"os"
	"slices"
	"sync/atomic"

	"github.com/droverhq/drover/api"
)

// Target adapts a Drover controller to load.Target: each Put sets one key of
// a model's config through the public API, on the leader, and returns once
// the leader has applied the raft-committed write. Keys are spread over
// Models models (by a hash of the key), as a controller's writes spread
// over its models: a model's config is one stored object, so piling the
// whole keyspace into one model would measure copying a 10,000-key map,
// not commits.
type Target struct {
	client  *api.Client   // leader first; setup and the leader-only mode
	clients []*api.Client // one per node, for spreading writes
	next    atomic.Uint64
	models  []string
}

// Spread sends writes round-robin to every node (as etcd's client does with
// several endpoints) instead of only to the leader. Off by default: the
// followers' forwarding costs more CPU on this 2-core machine than it
// spreads (measured 0.56x etcd spread versus 0.94x leader-only in one
// run); DROVER_BENCH_SPREAD=1 turns it on.
var Spread = os.Getenv("DROVER_BENCH_SPREAD") != ""

// Models is how many models the benchmark keys are spread over.
const Models = 64

// NewTarget makes one client for every benchmark write, its address list
// led by the node info marks as leader (as a client does after discovering
// it), with a connection pool for MaxConcurrency writes in flight, and
// creates the model the writes go to. cfg supplies the CA and credentials.
func NewTarget(ctx context.Context, info *api.ControllerInfo, cfg api.ClientConfig) (*Target, error) {
	addrs, err := leaderFirst(info)
	if err != nil {
		return nil, err
	}
	cfg.Addresses = addrs
	cfg.HTTPClient = &http.Client{Transport: poolTransport(MaxConcurrency)}
	client, err := api.NewClient(cfg)
	if err != nil {
		return nil, err
	}
	t := &Target{client: client}
	if Spread {
		// Like etcd's clientv3 with every endpoint: requests go round-robin
		// to all nodes, and followers forward writes to the leader.
		for i := range addrs {
			c := cfg
			c.Addresses = append(append([]string{}, addrs[i:]...), addrs[:i]...)
			c.HTTPClient = &http.Client{Transport: poolTransport(MaxConcurrency)}
			nc, err := api.NewClient(c)
			if err != nil {
				client.Close()
				return nil, err
			}
			t.clients = append(t.clients, nc)
		}
	}
	for i := 0; i < Models; i++ {
		m, err := client.AddModel(ctx, api.AddModelRequest{Name: fmt.Sprintf("commitbench-%d", i)})
		if err != nil {
			client.Close()
			return nil, fmt.Errorf("drovercluster: add model: %w", err)
		}
		t.models = append(t.models, m.UUID)
	}
	return t, nil
}

// poolTransport keeps up to n connections per host open and idle between
// requests, so n concurrent writers never redial (HTTP/1.1) and HTTP/2 may
// open more connections when one reaches its stream limit.
func poolTransport(n int) *http.Transport {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil
	tr.MaxIdleConns = n
	tr.MaxIdleConnsPerHost = n
	tr.MaxConnsPerHost = n
	return tr
}

// leaderFirst lists the nodes' API addresses, the leader's first.
func leaderFirst(info *api.ControllerInfo) ([]string, error) {
	var addrs []string
	leader := -1
	for _, n := range info.Nodes {
		if n.APIAddress == "" {
			continue
		}
		if n.Leader {
			leader = len(addrs)
		}
		addrs = append(addrs, n.APIAddress)
	}
	if leader < 0 {
		return nil, errors.New("drovercluster: no node is marked leader")
	}
	addrs[0], addrs[leader] = addrs[leader], addrs[0]
	return slices.Clip(addrs), nil
}

// Name is "drover".
func (t *Target) Name() string { return "drover" }

// Model is the UUID of the model key's writes go to.
func (t *Target) Model(key string) string {
	h := fnv.New32a()
	h.Write([]byte(key))
	return t.models[h.Sum32()%uint32(len(t.models))]
}

// Put sets model config key=value.
func (t *Target) Put(ctx context.Context, key, value string) error {
	c := t.client
	if len(t.clients) > 0 {
		c = t.clients[t.next.Add(1)%uint64(len(t.clients))]
	}
	_, err := c.Model(t.Model(key)).SetConfig(ctx, api.ConfigChange{Set: map[string]any{key: value}})
	return err
}

// Close releases the client's idle connections.
func (t *Target) Close() {
	t.client.Close()
	for _, c := range t.clients {
		c.Close()
	}
}
