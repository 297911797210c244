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
	stored := roundTrip(t, fs.health(map[string]any{"error": "gone"}))
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

// FuzzSummaryOf: any stored health map reads back as no summary or as one
// that health records the same way again.
func FuzzSummaryOf(f *testing.F) {
	f.Add(`{"version":"1.0.0","nodes":[{"id":"n1","api-address":"a:1","voter":true,"leader":true}]}`)
	f.Add(`{"version":"1.0.0","nodes":null}`)
	f.Add(`{"version":2,"nodes":"x"}`)
	f.Add(`{"error":"gone"}`)
	f.Fuzz(func(t *testing.T, in string) {
		var h map[string]any
		if json.Unmarshal([]byte(in), &h) != nil {
			return
		}
		sum := summaryOf(h)
		if sum == nil {
			return
		}
		again := summaryOf(roundTrip(t, (&following{summary: sum}).health(nil)))
		if again == nil || again.Version != sum.Version || len(again.Nodes) != len(sum.Nodes) {
			t.Fatalf("%s: read %+v, then %+v", in, sum, again)
		}
	})
}

// roundTrip is h as PostgreSQL's jsonb gives it back.
func roundTrip(t *testing.T, h map[string]any) map[string]any {
	t.Helper()
	b, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}
