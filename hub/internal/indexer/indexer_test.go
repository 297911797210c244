package indexer

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/droverhq/drover/api"
)

// TestNewRefusesAnIncompleteConfig: an indexer without its store, clock,
// logger or hooks, or with bounds that make no sense, is refused at
// construction.
func TestNewRefusesAnIncompleteConfig(t *testing.T) {
	for _, cfg := range []Config{
		{},
		{ResyncEvery: time.Hour, Poll: time.Second, MaxEventFrame: 1 << 20},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New accepted %+v", cfg)
		}
	}
}

// TestHealthKeepsTheSummary: the summary a follower records in a
// controller's health reads back from the stored health (JSON), so a hub
// that starts following keeps it; a health map without one gives none.
func TestHealthKeepsTheSummary(t *testing.T) {
	fs := &following{summary: &api.ControllerSummary{Version: "1.2.3", Nodes: []api.NodeInfo{
		{ID: "n1", APIAddress: "10.0.0.1:17070", Voter: true, Leader: true},
		{ID: "n2", APIAddress: "10.0.0.2:17070", Voter: true, Unreachable: true},
	}}}
	h := fs.health(map[string]any{"error": "gone"})
	b, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	var stored map[string]any
	if err := json.Unmarshal(b, &stored); err != nil {
		t.Fatal(err)
	}
	if stored["error"] != "gone" {
		t.Errorf("health lost its other keys: %v", stored)
	}
	if got := summaryOf(stored); !reflect.DeepEqual(got, fs.summary) {
		t.Errorf("read back %+v, want %+v", got, fs.summary)
	}
	if got := summaryOf(map[string]any{"error": "gone"}); got != nil {
		t.Errorf("summary from a health without one: %+v", got)
	}
	if h := (&following{}).health(nil); len(h) != 0 {
		t.Errorf("health of a controller that sent no summary: %v", h)
	}
}
