package api_test

import (
	"encoding/json"
	"maps"
	"net/http"
	"strconv"
	"sync"
	"testing"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/tests/testkit"
)

// fakeHub relays the calls of models on two controllers, each with its
// own raft index (a write raises its controller's), and answers its own
// routes (the model listing, a model's entry) with no index, as a hub
// does. It records every request.
type fakeHub struct {
	mu      sync.Mutex
	index   map[string]uint64 // by controller UUID
	placed  map[string]string // model UUID -> controller UUID
	calls   []call
	handler *http.ServeMux
}

func newFakeHub() *fakeHub {
	h := &fakeHub{index: map[string]uint64{"ctl-a": 100, "ctl-b": 5},
		placed: map[string]string{"m-a": "ctl-a", "m-b": "ctl-b", "m-c": "ctl-a"}, handler: http.NewServeMux()}
	h.handler.HandleFunc("GET /v1/models", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 0, map[string]any{"models": []map[string]string{
			{"uuid": "m-a", "name": "a", "controller-uuid": "ctl-a"}, {"uuid": "m-b", "name": "b", "controller-uuid": "ctl-b"}}})
	})
	h.handler.HandleFunc("POST /v1/models", func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		h.placed["m-new"] = "ctl-b"
		h.mu.Unlock()
		// The hub's entry, and the index at which the controller created it.
		writeJSON(w, h.at("m-new", true), map[string]string{"uuid": "m-new", "name": "new", "controller-uuid": "ctl-b"})
	})
	h.handler.HandleFunc("GET /v1/models/{model}", func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		ctl := h.placed[r.PathValue("model")]
		h.mu.Unlock()
		writeJSON(w, 0, map[string]string{"uuid": r.PathValue("model"), "controller-uuid": ctl})
	})
	h.handler.HandleFunc("GET /v1/models/{model}/applications", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, h.at(r.PathValue("model"), false), []api.Application{})
	})
	h.handler.HandleFunc("POST /v1/models/{model}/applications", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, h.at(r.PathValue("model"), true), api.DeployResult{})
	})
	return h
}

// at is the index of model's controller, raised first for a write.
func (h *fakeHub) at(model string, write bool) uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	ctl := h.placed[model]
	if write {
		h.index[ctl]++
	}
	return h.index[ctl]
}

func (h *fakeHub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	h.calls = append(h.calls, call{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery})
	h.mu.Unlock()
	h.handler.ServeHTTP(w, r)
}

func (h *fakeHub) received() []call {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]call(nil), h.calls...)
}

// writeJSON answers v, with X-Drover-Index idx unless it is 0.
func writeJSON(w http.ResponseWriter, idx uint64, v any) {
	if idx > 0 {
		w.Header().Set(api.HeaderIndex, strconv.FormatUint(idx, 10))
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// TestPlacedModelsKeepTheirControllersIndex: through a hub, a model's calls
// send and raise the index of the controller the model is placed on, and
// no other: an index from controller A never reaches B, the hub's own
// routes get none, and a model not placed keeps the client-wide behaviour.
func TestPlacedModelsKeepTheirControllersIndex(t *testing.T) {
	testkit.CheckLeaks(t)
	ca := newTestCA(t)
	hub := newFakeHub()
	srv := ca.serve(t, hub)
	c := newClient(t, api.ClientConfig{Addresses: []string{addr(srv)}, CACert: ca.pem, ServerKind: "hub",
		Indexes: map[string]uint64{"ctl-b": 3}})
	ctx := t.Context()

	models, err := c.Models(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range models {
		c.PlaceModel(m.UUID, m.Index.ControllerUUID)
	}
	c.PlaceModel("m-c", "ctl-a")
	steps := []struct {
		do    func() error
		query string
	}{
		{func() error { _, err := c.Model("m-b").Applications(ctx); return err }, "index=3"},
		{func() error { _, err := c.Model("m-a").Deploy(ctx, api.DeployRequest{Application: "kv"}); return err }, ""},
		{func() error { _, err := c.Model("m-a").Applications(ctx); return err }, "index=101"},
		{func() error { _, err := c.Model("m-c").Applications(ctx); return err }, "index=101"}, // the same controller
		{func() error { _, err := c.Model("m-b").Applications(ctx); return err }, "index=5"},
		{func() error { _, err := c.Models(ctx); return err }, ""},
		{func() error { _, err := c.Model("m-a").Info(ctx); return err }, ""},
		{func() error { _, err := c.Model("m-b").Applications(ctx, api.ReadOptions{Index: 4}); return err }, "index=5"},
		// A model added through the hub is placed where the hub says,
		// at the index its controller created it.
		{func() error { _, err := c.AddModel(ctx, api.AddModelRequest{Name: "new"}); return err }, ""},
		{func() error { _, err := c.Model("m-new").Applications(ctx); return err }, "index=6"},
		{func() error { _, err := c.Model("m-a").Applications(ctx); return err }, "index=101"},
	}
	for i, s := range steps {
		if err := s.do(); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	got := hub.received()[1:] // after the first listing
	for i, s := range steps {
		if got[i].Query != s.query {
			t.Errorf("step %d (%s %s): query %q, want %q", i, got[i].Method, got[i].Path, got[i].Query, s.query)
		}
	}
	if want := map[string]uint64{"ctl-a": 101, "ctl-b": 6}; !maps.Equal(c.Indexes(), want) {
		t.Errorf("Indexes() = %v, want %v", c.Indexes(), want)
	}
	if c.Index() != 6 { // the add-model answer's, the hub's own route
		t.Errorf("the client-wide index is %d, want 6: a placed model's answer raised it", c.Index())
	}

	// A model placed on no controller the client knows of is the
	// client-wide index's, which a hub client (ReadYourWrites off) never
	// sends.
	hub.mu.Lock()
	hub.placed["m-d"], hub.index["ctl-d"] = "ctl-d", 900
	hub.mu.Unlock()
	for range 2 {
		if _, err := c.Model("m-d").Applications(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if last := hub.received()[len(got)+1:]; last[0].Query != "" || last[1].Query != "" {
		t.Errorf("an unplaced model's reads through a hub sent %q, %q; want no index", last[0].Query, last[1].Query)
	}
	if c.Index() != 900 || c.Indexes()["ctl-a"] != 101 {
		t.Errorf("after an unplaced model's read: Index() %d, Indexes() %v; want 900 and ctl-a unchanged", c.Index(), c.Indexes())
	}
}
