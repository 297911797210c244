package spoke

import (
	"fmt"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/droverhq/drover/api"
)

// BenchmarkAPIWrites measures replicated writes/s through the public API
// of an in-process 3-node controller with 256 concurrent writers.
func BenchmarkAPIWrites(b *testing.B) {
	defer func(d time.Duration) { testRaftTimeout = d }(testRaftTimeout)
	testRaftTimeout = 0
	c := newTestCluster(b, 3)
	l := c.leader()
	cl := c.client(l)
	m, err := cl.AddModel(b.Context(), api.AddModelRequest{Name: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	var next atomic.Int64
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	conc := 256
	if v, err := strconv.Atoi(os.Getenv("BENCH_CONC")); err == nil {
		conc = v
	}
	for w := 0; w < conc; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1); i <= int64(b.N); i = next.Add(1) {
				if _, err := cl.Model(m.UUID).SetConfig(b.Context(), api.ConfigChange{Set: map[string]any{fmt.Sprint(i % 64): "v"}}); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	el := time.Since(start)
	dumpMetrics(b, c.nodes[l].srv)
	b.Logf("client: %d ops in %v, mean latency %v", b.N, el, el*time.Duration(conc)/time.Duration(b.N))
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "commits/s")
}

func dumpMetrics(b *testing.B, s *Server) {
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("GET", "/metrics", nil)
	req.RemoteAddr = "127.0.0.1:1234" // the metrics are the machine's own (internal/loopback)
	s.api.ServeHTTP(rec, req)
	for _, line := range strings.Split(rec.Body.String(), "\n") {
		if strings.Contains(line, "config") && (strings.Contains(line, "_sum") || strings.Contains(line, "_count")) {
			b.Log(line)
		}
	}
}
