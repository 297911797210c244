package spoke

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/api"
)

// TestStreamsResumedBeyondTheControllersHistoryReset: a client resuming
// the event stream (the hub's indexer) or a model's watch from an index
// the controller has never reached, as after the controller's state was
// restored from an older backup, gets a reset first. Before, the stream
// sent only events after that index, so every change up to it was lost to
// the client and the hub's index of the controller froze.
func TestStreamsResumedBeyondTheControllersHistoryReset(t *testing.T) {
	c := newTestCluster(t, 1)
	admin := c.client(0)
	ctx := t.Context()
	m, err := admin.AddModel(ctx, api.AddModelRequest{Name: "kept"})
	if err != nil {
		t.Fatal(err)
	}
	_, reset := dialEvents(t, c, 0)

	ws := dialEventsSince(t, c, 0, reset.Index+1000)
	ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	var f api.EventFrame
	if err := ws.ReadJSON(&f); err != nil || f.Type != api.EventFrameReset {
		t.Fatalf("first frame resuming beyond the controller's index: %+v, %v (want a reset)", f, err)
	}
	if f.Index != reset.Index || len(f.Models) != 1 || f.Models[0].UUID != m.UUID {
		t.Fatalf("reset %+v: want index %d and model %s", f, reset.Index, m.UUID)
	}

	w, err := admin.Model(m.UUID).Watch(ctx, reset.Index+1000)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	wf, err := w.Next(ctx)
	if err != nil || wf.Type != api.FrameReset || wf.Status == nil || wf.Status.Model.UUID != m.UUID {
		t.Fatalf("first watch frame resuming beyond the controller's index: %+v, %v (want a reset)", wf, err)
	}
}

// TestStreamsResumedJustAheadWaitForTheNode: an index a little ahead of
// the node (a node behind the one the client followed) is waited for, not
// taken for another history: the stream goes on from it with no reset.
func TestStreamsResumedJustAheadWaitForTheNode(t *testing.T) {
	c := newTestCluster(t, 1)
	admin := c.client(0)
	ctx := t.Context()
	_, reset := dialEvents(t, c, 0)

	ws := dialEventsSince(t, c, 0, reset.Index+1)
	first, err := admin.AddModel(ctx, api.AddModelRequest{Name: "first"})
	if err != nil {
		t.Fatal(err)
	}
	second, err := admin.AddModel(ctx, api.AddModelRequest{Name: "second"})
	if err != nil {
		t.Fatal(err)
	}
	ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		var f api.EventFrame
		if err := ws.ReadJSON(&f); err != nil {
			t.Fatalf("waiting for model %s (after %s): %v", second.UUID, first.UUID, err)
		}
		if f.Type == api.EventFrameReset {
			t.Fatalf("reset %+v resuming one index ahead of the node: want the stream to wait for it", f)
		}
		if len(f.Models) > 0 && f.Models[len(f.Models)-1].UUID == second.UUID {
			return
		}
	}
}

// TestStreamsResumedInAnotherHistoryReset: the event stream's frames carry
// the mark of the log entry at their index (its term and when it was
// appended), and a consumer resuming with an index and a mark that this
// controller's log does not hold there (its state was restored from an
// older copy, and went past the index again) gets a reset. With the right
// mark, or none (an older hub), it resumes. A model's watch likewise.
func TestStreamsResumedInAnotherHistoryReset(t *testing.T) {
	c := newTestCluster(t, 1)
	admin := c.client(0)
	ctx := t.Context()
	if _, err := admin.AddModel(ctx, api.AddModelRequest{Name: "shop"}); err != nil {
		t.Fatal(err)
	}
	_, reset := dialEvents(t, c, 0)
	if reset.Mark == "" {
		t.Fatalf("reset %+v has no mark", reset)
	}
	n := 0
	first := func(query string) api.EventFrame {
		t.Helper()
		ws := dialEventsQuery(t, c, 0, query)
		// A model added now shows whether the stream resumed: its frame
		// comes first, or a reset does.
		n++
		if _, err := admin.AddModel(ctx, api.AddModelRequest{Name: "m" + strconv.Itoa(n)}); err != nil {
			t.Fatal(err)
		}
		ws.SetReadDeadline(time.Now().Add(10 * time.Second))
		var f api.EventFrame
		if err := ws.ReadJSON(&f); err != nil {
			t.Fatalf("%s: %v", query, err)
		}
		ws.Close()
		return f
	}
	since := fmt.Sprintf("since=%d", reset.Index)
	term, _, _ := strings.Cut(reset.Mark, ".")
	// The same term, appended at another time: another history's entry.
	if f := first(since + "&mark=" + term + ".1"); f.Type != api.EventFrameReset {
		t.Errorf("resumed with another history's mark: first frame %+v, want a reset", f)
	}
	for _, q := range []string{since + "&mark=" + url.QueryEscape(reset.Mark), since} {
		if f := first(q); f.Type != api.EventFrameModels || f.Mark == "" {
			t.Errorf("resumed with %s: first frame %+v, want the new model's, with its mark", q, f)
		}
	}

	// A model's watch (drover status --watch) likewise.
	m, err := admin.AddModel(ctx, api.AddModelRequest{Name: "watched"})
	if err != nil {
		t.Fatal(err)
	}
	watchFirst := func(query string) api.WatchFrame {
		t.Helper()
		ws := dialStream(t, c, 0, "/v1/models/"+m.UUID+"/watch?"+query)
		if _, err := admin.Model(m.UUID).SetConfig(ctx, api.ConfigChange{Set: map[string]any{"n": len(query)}}); err != nil {
			t.Fatal(err)
		}
		ws.SetReadDeadline(time.Now().Add(10 * time.Second))
		var f api.WatchFrame
		if err := ws.ReadJSON(&f); err != nil {
			t.Fatalf("%s: %v", query, err)
		}
		ws.Close()
		return f
	}
	f1 := watchFirst(fmt.Sprintf("since=%d", admin.Index()))
	if f1.Type != api.FrameDelta || f1.Mark == "" {
		t.Fatalf("a watch resumed with no mark: first frame %s at %d, mark %q (want a delta, with its mark)", f1.Type, f1.Index, f1.Mark)
	}
	if f := watchFirst(fmt.Sprintf("since=%d&mark=%s", f1.Index, url.QueryEscape(f1.Mark))); f.Type != api.FrameDelta {
		t.Errorf("a watch resumed with its mark: first frame %s at %d, want a delta", f.Type, f.Index)
	}
	if f := watchFirst(fmt.Sprintf("since=%d&mark=%s", f1.Index, url.QueryEscape(term+".1"))); f.Type != api.FrameReset {
		t.Errorf("a watch resumed with another history's mark: first frame %s at %d, want a reset", f.Type, f.Index)
	}
}
