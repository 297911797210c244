package spoke

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/tests/testkit"
)

// TestEventStreamKeepsAliveThroughFilteredEvents: a controller busy with
// changes its event stream leaves out (here model config, which changes no
// summary; in life, agents renewing leases) still sends a keepalive every
// interval, carrying the latest index. Before, each such change restarted
// the idle timer, so a busy controller's stream fell silent and the hub's
// indexer timed it out and showed it disconnected.
func TestEventStreamKeepsAliveThroughFilteredEvents(t *testing.T) {
	const interval = 300 * time.Millisecond
	c := newTestClusterWith(t, 1, func(cfg *Config) { cfg.KeepaliveInterval = interval })
	admin := c.client(0)
	ctx := t.Context()
	m, err := admin.AddModel(ctx, api.AddModelRequest{Name: "busy"})
	if err != nil {
		t.Fatal(err)
	}
	ws, reset := dialEvents(t, c, 0)

	// Change the model's config every 50 ms for 12 intervals.
	busy, stop := context.WithTimeout(ctx, 12*interval)
	defer stop()
	changed := make(chan uint64, 1)
	go func() {
		var last uint64
		defer func() { changed <- last }()
		for n := 0; busy.Err() == nil; n++ {
			if _, err := admin.Model(m.UUID).SetConfig(busy, api.ConfigChange{Set: map[string]any{"n": n}}); err == nil {
				last = max(last, admin.Index())
			}
			select {
			case <-busy.Done():
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	// Four keepalives are due while the changes go on (at 1 to 4 intervals).
	var keepalives []uint64
	deadline, _ := busy.Deadline()
	ws.SetReadDeadline(deadline)
	for len(keepalives) < 4 {
		var f api.EventFrame
		if err := ws.ReadJSON(&f); err != nil {
			t.Fatalf("%d keepalives while the model's config changed for %v (%v): want 4", len(keepalives), 12*interval, err)
		}
		if f.Type == api.EventFrameKeepalive {
			keepalives = append(keepalives, f.Index)
		}
	}
	stop()
	last := <-changed
	// A change cut off by the end of the busy period may have been made
	// all the same: a read says how far the controller got.
	if _, err := admin.Model(m.UUID).Info(ctx); err != nil {
		t.Fatal(err)
	}
	last = max(last, admin.Index())
	if keepalives[0] <= reset.Index || keepalives[3] <= keepalives[0] || keepalives[3] > last {
		t.Errorf("keepalive indexes %v after a reset at %d, changes up to %d: want them to follow the changes", keepalives, reset.Index, last)
	}
}

// TestIdleConnectionsClose: a client's keep-alive connection left idle is
// closed after the controller's idle timeout; until then it carries
// requests.
func TestIdleConnectionsClose(t *testing.T) {
	const idle = 300 * time.Millisecond
	c := newTestClusterWith(t, 1, func(cfg *Config) { cfg.IdleTimeout = idle })
	testkit.WaitIdleClose(t, c.nodes[0].cfg.Listen, c.cred.CACert, "/healthz", idle)
}

// dialEvents opens node i's event stream (the hub's) as the controller's
// admin and reads its first frame, which must be a reset.
func dialEvents(t *testing.T, c *testCluster, i int) (*websocket.Conn, api.EventFrame) {
	t.Helper()
	ws := dialEventsSince(t, c, i, 0)
	var reset api.EventFrame
	if err := ws.ReadJSON(&reset); err != nil || reset.Type != api.EventFrameReset {
		t.Fatalf("first frame %+v, %v", reset, err)
	}
	return ws, reset
}

// dialEventsSince opens node i's event stream as its administrator,
// resuming after index since.
func dialEventsSince(t *testing.T, c *testCluster, i int, since uint64) *websocket.Conn {
	t.Helper()
	return dialEventsQuery(t, c, i, "since="+strconv.FormatUint(since, 10))
}

// dialEventsQuery opens node i's event stream with query.
func dialEventsQuery(t *testing.T, c *testCluster, i int, query string) *websocket.Conn {
	t.Helper()
	return dialStream(t, c, i, "/v1/events?"+query)
}

// dialStream opens the websocket at path (and query) on node i as the
// controller's administrator.
func dialStream(t *testing.T, c *testCluster, i int, path string) *websocket.Conn {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM([]byte(c.cred.CACert))
	d := websocket.Dialer{TLSClientConfig: &tls.Config{RootCAs: pool}, HandshakeTimeout: 10 * time.Second}
	req, _ := http.NewRequest(http.MethodGet, "https://x", nil)
	req.SetBasicAuth(c.cred.User, c.cred.Password)
	u := "wss://" + c.nodes[i].cfg.Listen + path
	ws, _, err := d.DialContext(t.Context(), u, http.Header{"Authorization": req.Header["Authorization"]})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	return ws
}

// TestEventStreamNamesTheNodes: the hub learns a controller's nodes from
// its event stream, in the reset frame (every node's API address) and in a
// frame sent when a node joins.
func TestEventStreamNamesTheNodes(t *testing.T) {
	c := newTestCluster(t, 2)
	ws, reset := dialEvents(t, c, 1)
	want := []string{c.nodes[0].cfg.Listen, c.nodes[1].cfg.Listen}
	slices.Sort(want)
	if got := slices.Sorted(slices.Values(reset.APIAddresses)); !slices.Equal(got, want) {
		t.Fatalf("reset frame names the nodes %v, want %v", got, want)
	}
	c.addNode()
	want = append(want, c.nodes[2].cfg.Listen)
	slices.Sort(want)
	ws.SetReadDeadline(time.Now().Add(30 * time.Second))
	for {
		var f api.EventFrame
		if err := ws.ReadJSON(&f); err != nil {
			t.Fatalf("no frame named the joined node: %v", err)
		}
		if f.APIAddresses != nil && slices.Equal(slices.Sorted(slices.Values(f.APIAddresses)), want) {
			if f.Type != api.EventFrameModels {
				t.Fatalf("the nodes came in a %q frame", f.Type)
			}
			return
		}
	}
}
