package apiserver

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/droverhq/drover/internal/corkconn"
	"github.com/droverhq/drover/spoke/internal/reply"
	"github.com/droverhq/drover/tests/testkit"
)

// TestJSONAnswerLeavesInOneWrite: behind the instrumenting middleware, a
// JSON answer (a 13 KB status, say) leaves the controller in one write, so
// its reader (a client, or the hub relaying it) is woken once and finds it
// whole.
func TestJSONAnswerLeavesInOneWrite(t *testing.T) {
	s := &Server{base: &base{log: slog.New(slog.DiscardHandler)}, metrics: &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "requests"}, []string{"route", "method", "code"}),
		latency:  prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "latency"}, []string{"route", "method"}),
	}}
	answer := map[string]string{"applications": strings.Repeat("a", 13<<10)}
	r := chi.NewRouter()
	r.Use(s.instrument)
	r.Get("/status", func(w http.ResponseWriter, _ *http.Request) { reply.JSON(w, http.StatusOK, answer) })
	srv := httptest.NewUnstartedServer(r)
	counted, writes := testkit.CountWrites(srv.Listener)
	srv.Listener = corkconn.Listener{Listener: counted}
	srv.Config.ConnContext = corkconn.ConnContext
	srv.StartTLS()
	defer srv.Close()
	get := func() int64 {
		t.Helper()
		before := writes.Load()
		resp, err := srv.Client().Get(srv.URL + "/status")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var got map[string]string
		if b, _ := io.ReadAll(resp.Body); json.Unmarshal(b, &got) != nil || got["applications"] != answer["applications"] {
			t.Fatalf("answer of %d bytes does not decode to what was written", len(b))
		}
		return writes.Load() - before
	}
	get() // the TLS handshake
	if n := get(); n != 1 {
		t.Errorf("the answer left in %d writes, want 1", n)
	}
}
