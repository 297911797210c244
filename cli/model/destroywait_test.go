package model

import (
	"context"
	"encoding/json"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/droverhq/drover/api"
)

// TestDestroyWaitEndsWithTheModel: waiting for a destroyed model ends
// when the watch carries the model's removal, even while the model is
// still listed (a hub's index a moment behind its controller) and no
// frame follows, instead of waiting out its whole --timeout.
func TestDestroyWaitEndsWithTheModel(t *testing.T) {
	const uuid = "6a1f0c2e-0000-4000-8000-000000000001"
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models/"+uuid, func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(api.Model{UUID: uuid, Name: "m", Life: api.Dying})
	})
	mux.HandleFunc("GET /v1/models/"+uuid+"/status", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(api.FullStatus{Machines: map[string]api.MachineStatus{"0": {}}})
	})
	mux.HandleFunc("GET /v1/models/"+uuid+"/watch", func(w http.ResponseWriter, r *http.Request) {
		c, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		_ = c.WriteJSON(api.WatchFrame{Type: api.FrameReset, Index: 4, Status: &api.FullStatus{}})
		_ = c.WriteJSON(api.WatchFrame{Type: api.FrameDelta, Index: 5, Deltas: []api.WatchDelta{
			{Kind: "machine", Key: "0", Op: "delete"}, {Kind: "model", Key: uuid, Op: "delete"}}})
		_, _, _ = c.ReadMessage() // then nothing more, until the client goes
	})
	a, _, _, mc := atFakeModel(t, mux, uuid)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	var left modelLeft
	if err := a.waitModelGone(ctx, mc, a.NewProgress("destroying"), &left); err != nil {
		t.Fatalf("waiting for a model whose removal the watch carried: %v (left: %s)", err, left)
	}
}

// TestDestroyWaitsForTheHubsIndex: at a hub, destroy-model's wait goes on
// until the hub's index no longer lists the model its controller removed,
// so a 'drover models' right after does not show it dying; at a
// controller nothing is asked.
func TestDestroyWaitsForTheHubsIndex(t *testing.T) {
	const uuid = "6a1f0c2e-0000-4000-8000-000000000009"
	var asked atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models/"+uuid, func(w http.ResponseWriter, _ *http.Request) {
		if asked.Add(1) <= 3 { // the index a moment behind
			_ = json.NewEncoder(w).Encode(api.Model{UUID: uuid, Name: "m", Life: api.Dying})
			return
		}
		w.WriteHeader(http.StatusNotFound)
		_ = json.NewEncoder(w).Encode(api.Error{Code: api.CodeNotFound, Message: "model not found"})
	})
	_, _, _, mc := atFakeModel(t, mux, uuid)
	waitUnindexed(t.Context(), mc) // a controller: its answer is the index
	if n := asked.Load(); n != 0 {
		t.Fatalf("a controller's model asked %d times", n)
	}
	mc.Details.Hub = true
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	waitUnindexed(ctx, mc)
	if n := asked.Load(); n != 4 || ctx.Err() != nil {
		t.Fatalf("asked %d times (want until the fourth answered 404), %v", n, ctx.Err())
	}
	// A hub that never drops it (it lost the controller's stream) is not
	// waited on past unindexedWait, whatever --timeout says.
	defer func(d time.Duration) { unindexedWait = d }(unindexedWait)
	unindexedWait = 200 * time.Millisecond
	asked.Store(-1_000_000)
	waitUnindexed(ctx, mc)
	if ctx.Err() != nil || asked.Load() >= 0 {
		t.Fatalf("waited %d calls, ctx %v", asked.Load(), ctx.Err())
	}
}

// TestModelLeftCounts: destroy-model's progress says "1 machine", not
// "1 machines".
func TestModelLeftCounts(t *testing.T) {
	if got, want := (modelLeft{apps: 0, units: 1, machines: 2}).String(), "0 applications, 1 unit, 2 machines"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
}
