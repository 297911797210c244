package spoke

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/droverhq/drover/api"
)

// TestEventStreamSummarizesTheController: the hub's event stream carries the
// controller's version and nodes in its reset frame, and again whenever they
// change: a node joins (an event announces it), a node stops (nothing
// does: the stream's periodic check finds it unreachable), and leadership
// moves.
func TestEventStreamSummarizesTheController(t *testing.T) {
	c := newTestClusterWith(t, 2, func(cfg *Config) { cfg.HealthInterval = 200 * time.Millisecond })
	ws, reset := dialEvents(t, c, 0)
	sum := reset.Controller
	if sum == nil || sum.Version != Version {
		t.Fatalf("reset frame's controller summary %+v, want version %s", sum, Version)
	}
	if bad := nodesDiffer(sum, c, 0, 1); bad != "" {
		t.Fatal(bad)
	}

	// It joins as a non-voter and is then promoted: a summary follows each.
	c.addNode()
	nextSummary(t, ws, "node 2 joined", func(s *api.ControllerSummary) bool { return nodesDiffer(s, c, 0, 1, 2) == "" })

	// Stop a node the stream is not read from; if it led, another leads.
	stopped := 2
	id := c.nodes[stopped].srv.NodeID()
	c.stop(stopped)
	sum = nextSummary(t, ws, "node 2 stopped", func(s *api.ControllerSummary) bool {
		for _, n := range s.Nodes {
			if n.ID == id {
				return n.Unreachable && !n.Leader
			}
		}
		return false
	})
	leaders := 0
	for _, n := range sum.Nodes {
		if n.Leader {
			leaders++
		}
		if n.ID != id && n.Unreachable {
			t.Errorf("node %s unreachable, only %s stopped: %+v", n.ID, id, sum.Nodes)
		}
	}
	if leaders > 1 {
		t.Errorf("%d leaders: %+v", leaders, sum.Nodes)
	}

	c.start(stopped)
	nextSummary(t, ws, "node 2 back", func(s *api.ControllerSummary) bool {
		for _, n := range s.Nodes {
			if n.ID == id {
				return !n.Unreachable
			}
		}
		return false
	})
}

// nodesDiffer says how sum fails to name the nodes of c numbered want, each
// voting and reachable with its API address, and one leader among them (""
// when it does not).
func nodesDiffer(sum *api.ControllerSummary, c *testCluster, want ...int) string {
	var ids, gotIDs []string
	for _, i := range want {
		ids = append(ids, c.nodes[i].srv.NodeID())
	}
	leaders := 0
	for _, n := range sum.Nodes {
		gotIDs = append(gotIDs, n.ID)
		if i := slices.Index(ids, n.ID); i < 0 || n.APIAddress != c.nodes[want[i]].cfg.Listen || !n.Voter || n.Unreachable {
			return fmt.Sprintf("node %+v: want one of %v, voting, reachable, with its API address", n, ids)
		}
		if n.Leader {
			leaders++
		}
	}
	slices.Sort(ids)
	slices.Sort(gotIDs)
	if !slices.Equal(ids, gotIDs) || leaders != 1 {
		return fmt.Sprintf("summary names nodes %v (%d leaders), want %v and one leader", gotIDs, leaders, ids)
	}
	return ""
}

// nextSummary reads ws until a frame carries a controller summary for which
// ok holds; each summary must come in a "models" frame.
func nextSummary(t *testing.T, ws *websocket.Conn, what string, ok func(*api.ControllerSummary) bool) *api.ControllerSummary {
	t.Helper()
	ws.SetReadDeadline(time.Now().Add(30 * time.Second))
	for {
		var f api.EventFrame
		if err := ws.ReadJSON(&f); err != nil {
			t.Fatalf("%s: no frame said so: %v", what, err)
		}
		if f.Controller == nil {
			continue
		}
		if f.Type != api.EventFrameModels {
			t.Fatalf("%s: the summary came in a %q frame", what, f.Type)
		}
		if ok(f.Controller) {
			return f.Controller
		}
	}
}
