package api_test

import (
	"io"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/droverhq/drover/api"
)

// BenchmarkSetModelConfig measures the client's side of a config write
// (the commitbench write) against a server that answers at once, with
// RunParallel's goroutines sharing one client as commitbench's writers do.
// Allocations include the test server's.
func BenchmarkSetModelConfig(b *testing.B) {
	ca := newTestCA(b)
	var index atomic.Uint64
	srv := ca.serve(b, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set(api.HeaderIndex, "1")
		index.Add(1)
		_, _ = io.WriteString(w, `{"bench/00000001":"vvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvv"}`+"\n")
	}))
	c := newClient(b, api.ClientConfig{Addresses: []string{addr(srv)}, CACert: ca.pem, User: "admin", Password: "pw"})
	value := "vvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvv"
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := c.Model("m-uuid").SetConfig(b.Context(), api.ConfigChange{Set: map[string]any{"bench/00000001": value}}); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
