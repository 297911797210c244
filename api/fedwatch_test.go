package api_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/gorilla/websocket"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/tests/testkit"
)

// fedNode serves GET /v1/watch: each connection is handed to script with
// the since it asked for.
type fedNode struct {
	t      *testing.T
	sinces chan int64
	script func(conn *websocket.Conn, since int64)
}

func (n *fedNode) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/watch" {
		http.Error(w, `{"code":"not-found","message":"no such route"}`, http.StatusNotFound)
		return
	}
	since, err := strconv.ParseInt(r.URL.Query().Get("since"), 10, 64)
	if err != nil {
		http.Error(w, `{"code":"bad-request","message":"since"}`, http.StatusBadRequest)
		return
	}
	conn, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
	if err != nil {
		n.t.Errorf("upgrade: %v", err)
		return
	}
	n.sinces <- since
	n.script(conn, since)
}

// TestWatchFederationResumes: the federation watcher hands resets and
// deltas to its caller, keeps keepalives to itself (they only advance its
// index), and resumes a dropped stream with since=<the last index>.
func TestWatchFederationResumes(t *testing.T) {
	testkit.CheckLeaks(t)
	ca := newTestCA(t)
	sinces := make(chan int64, 4)
	var served atomic.Int32
	n := &fedNode{t: t, sinces: sinces}
	n.script = func(conn *websocket.Conn, since int64) {
		write := func(f api.FederationFrame) {
			if err := conn.WriteJSON(f); err != nil {
				t.Errorf("write: %v", err)
			}
		}
		if served.Add(1) == 1 {
			write(api.FederationFrame{Type: api.FederationFrameReset, Index: 5, Models: []json.RawMessage{json.RawMessage(`{"uuid":"a"}`)}})
			write(api.FederationFrame{Type: api.FederationFrameKeepalive, Index: 7})
			_ = conn.Close() // dropped without a close frame
			return
		}
		write(api.FederationFrame{Type: api.FederationFrameDelta, Index: since + 1,
			Removed: []api.FederationKey{{Kind: "model", ID: "a"}}})
		drain(conn)
	}
	srv := ca.serve(t, n)
	c := newClient(t, api.ClientConfig{Addresses: []string{addr(srv)}, CACert: ca.pem})
	w, err := c.WatchFederation(t.Context(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var got []int64
	for range 2 {
		f, err := w.Next(t.Context())
		if err != nil {
			t.Fatalf("next after %v: %v", got, err)
		}
		if f.Type == api.FederationFrameKeepalive {
			t.Fatal("keepalive handed to the caller")
		}
		got = append(got, f.Index)
	}
	if want := []int64{5, 8}; !slices.Equal(got, want) {
		t.Fatalf("frame indexes %v, want %v", got, want)
	}
	if s1, s2 := <-sinces, <-sinces; s1 != 0 || s2 != 7 {
		t.Fatalf("connections asked since=%d then since=%d, want 0 then 7", s1, s2)
	}
	if w.Index() != 8 {
		t.Fatalf("watcher index %d, want 8", w.Index())
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Next(t.Context()); !errors.Is(err, api.ErrWatcherClosed) {
		t.Fatalf("next after close: %v", err)
	}
}
