package status

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/cli/internal/modelcmd/modelcmdtest"
	"github.com/droverhq/drover/tests/testkit"
)

// TestWatchEndsSayingWhy: status --watch ends quietly when the watch
// carries the model's removal, and otherwise, when the model can no
// longer be watched, says it was destroyed or the access revoked (a
// controller or hub does not tell which), as an error.
func TestWatchEndsSayingWhy(t *testing.T) {
	const uuid = "6a1f0c2e-0000-4000-8000-000000000002"
	for _, c := range []struct {
		name    string
		removal bool
		err     string
		stderr  string
	}{
		{"destroyed", true, "", `Model "m" is gone: it was destroyed.`},
		{"refused", false, `model "m" can no longer be watched: it was destroyed, or your access to it was revoked`, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			var watches atomic.Int32
			mux := http.NewServeMux()
			mux.HandleFunc("GET /v1/models/"+uuid+"/watch", func(w http.ResponseWriter, r *http.Request) {
				if watches.Add(1) > 1 { // the resumed watch is refused
					modelcmdtest.AnswerError(w, http.StatusNotFound, api.CodeNotFound, "not found: model")
					return
				}
				conn, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
				if err != nil {
					return
				}
				defer conn.Close()
				_ = conn.WriteJSON(api.WatchFrame{Type: api.FrameReset, Index: 4, Status: &api.FullStatus{}})
				if c.removal {
					_ = conn.WriteJSON(api.WatchFrame{Type: api.FrameDelta, Index: 5, Deltas: []api.WatchDelta{{Kind: "model", Key: uuid, Op: "delete"}}})
					_, _, _ = conn.ReadMessage()
				} // else the stream just ends, as the hub ends a revoked caller's
			})
			a, _, errb, mc := atFakeModel(t, mux, uuid)
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			err := a.watchStatus(ctx, mc, nil, "tabular", statusOptions{})
			if gotErr := fmt.Sprint(err); (c.err == "" && err != nil) || (c.err != "" && gotErr != c.err) {
				t.Errorf("watch ended with %v, want %q", err, c.err)
			}
			if !strings.Contains(errb.String(), c.stderr) {
				t.Errorf("stderr %q, want %q", errb, c.stderr)
			}
		})
	}
}

// TestWatchWaitsOutAnUnavailableStatus: when the status a watch frame
// asks for is unavailable for a while (a hub whose database restarts, a
// controller electing a leader), status --watch says so once and carries
// on rather than ending with the error.
func TestWatchWaitsOutAnUnavailableStatus(t *testing.T) {
	const uuid = "6a1f0c2e-0000-4000-8000-000000000004"
	var fetches atomic.Int32
	served := make(chan struct{})
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models/"+uuid+"/status", func(w http.ResponseWriter, _ *http.Request) {
		switch n := fetches.Add(1); {
		case n <= 2:
			modelcmdtest.AnswerError(w, http.StatusServiceUnavailable, api.CodeUnavailable, "the hub's database is unavailable (try again shortly)")
		case n == 3:
			_ = json.NewEncoder(w).Encode(api.FullStatus{Applications: map[string]api.ApplicationStatus{"kvstore": {}}})
			close(served)
		}
	})
	mux.HandleFunc("GET /v1/models/"+uuid+"/watch", func(w http.ResponseWriter, r *http.Request) {
		conn, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer conn.Close()
		_ = conn.WriteJSON(api.WatchFrame{Type: api.FrameReset, Index: 4, Status: &api.FullStatus{}})
		_ = conn.WriteJSON(api.WatchFrame{Type: api.FrameDelta, Index: 5, Deltas: []api.WatchDelta{{Kind: "application", Key: "kvstore", Op: "put"}}})
		_, _, _ = conn.ReadMessage()
	})
	a, _, errb, mc := atFakeModel(t, mux, uuid)
	out := &testkit.SyncBuffer{}
	a.Stdout = out // read while the watch draws
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- a.watchStatus(ctx, mc, nil, "tabular", statusOptions{}) }()
	select {
	case <-served:
	case err := <-done:
		t.Fatalf("the watch ended before the status was available again: %v (stderr %q)", err, errb)
	}
	// The status served is drawn before the next frame is read; Ctrl-C
	// then ends the watch normally.
	testkit.EventuallyWithin(t, 5*time.Second, func() (bool, error) { return strings.Contains(out.String(), "kvstore"), nil })
	cancel()
	if err := <-done; err != nil {
		t.Errorf("the watch ended with %v", err)
	}
	want := "Status unavailable, retrying: the hub's database is unavailable (try again shortly)\nStatus available again.\n"
	if errb.String() != want {
		t.Errorf("stderr %q, want %q", errb, want)
	}
}

// TestFollowedLogEndsSayingWhy: debug-log whose model is refused after it
// was followed says it was destroyed or the access revoked, not a bare
// "not found" with the model's UUID.
func TestFollowedLogEndsSayingWhy(t *testing.T) {
	const uuid = "6a1f0c2e-0000-4000-8000-000000000003"
	var follows atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models/"+uuid+"/logs", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("follow") == "true" && follows.Add(1) > 1 { // the resumed stream is refused
			modelcmdtest.AnswerError(w, http.StatusNotFound, api.CodeNotFound, "not found: model:"+uuid)
			return
		}
		w.Header().Set("Content-Type", "application/x-ndjson")
		_ = json.NewEncoder(w).Encode(api.LogRecord{Seq: 1, Entity: "unit-kv-0", Level: "INFO", Message: "hello"})
	})
	a, out, _, mc := atFakeModel(t, mux, uuid)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	err := a.streamLogs(ctx, mc, debugLogOptions{lines: 10, format: logFormat{loc: time.UTC}})
	want := `model "m" can no longer be followed: it was destroyed, or your access to it was revoked`
	if fmt.Sprint(err) != want || !strings.Contains(out.String(), "hello") {
		t.Errorf("debug-log ended with %v after %q; want %q", err, out, want)
	}
}

// TestWatchSaysItIsInterrupted: status --watch whose controller goes away
// says so once, naming the model as the user does (not by its UUID), and
// says when the watch resumed, rather than going quiet.
func TestWatchSaysItIsInterrupted(t *testing.T) {
	const uuid = "6a1f0c2e-0000-4000-8000-000000000005"
	var watches, refused atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models/"+uuid+"/status", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(api.FullStatus{Applications: map[string]api.ApplicationStatus{"kvstore": {}}})
	})
	mux.HandleFunc("GET /v1/models/"+uuid+"/watch", func(w http.ResponseWriter, r *http.Request) {
		n := watches.Add(1)
		if n == 2 || n == 3 { // the controller is away for two tries
			refused.Add(1)
			modelcmdtest.AnswerError(w, http.StatusBadGateway, api.CodeUnavailable, "controller lab12 is unavailable behind the hub")
			return
		}
		conn, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer conn.Close()
		if n == 1 {
			_ = conn.WriteJSON(api.WatchFrame{Type: api.FrameReset, Index: 4, Status: &api.FullStatus{}})
			return // the connection drops
		}
		_ = conn.WriteJSON(api.WatchFrame{Type: api.FrameDelta, Index: 5, Deltas: []api.WatchDelta{{Kind: "application", Key: "kvstore", Op: "put"}}})
		_, _, _ = conn.ReadMessage()
	})
	a, _, errb, mc := atFakeModel(t, mux, uuid)
	out := &testkit.SyncBuffer{}
	a.Stdout = out
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- a.watchStatus(ctx, mc, nil, "tabular", statusOptions{}) }()
	testkit.EventuallyWithin(t, 10*time.Second, func() (bool, error) { return strings.Contains(out.String(), "kvstore"), nil })
	cancel()
	if err := <-done; err != nil {
		t.Errorf("the watch ended with %v", err)
	}
	got := errb.String()
	if !strings.HasPrefix(got, "Watch interrupted, retrying: cannot watch model m at ") || !strings.Contains(got, ": controller lab12 is unavailable behind the hub\nWatch resumed.\n") || strings.Contains(got, uuid) ||
		strings.Count(got, "interrupted") != 1 || refused.Load() != 2 {
		t.Errorf("stderr %q (%d refusals)", got, refused.Load())
	}
}
