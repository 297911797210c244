package cluster

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/droverhq/drover/internal/pki"
)

// BenchmarkReplicatedApply measures raw raft commits/s of a 3-node cluster
// (bbolt log, mutual TLS) with 256 concurrent proposers, below the API.
func BenchmarkReplicatedApply(b *testing.B) {
	ctx := context.Background()
	ca, _ := pki.NewCA("bench", time.Now())
	t := &testing.T{}
	_ = t
	nodes := make([]*testNode, 3)
	for i := range nodes {
		nodes[i] = &testNode{id: fmt.Sprintf("n%d", i), dir: b.TempDir(), addr: freeAddrB(b)}
	}
	startNodeB(b, ca, nodes[0], true)
	for _, n := range nodes {
		defer func() {
			if n.node != nil {
				n.node.Shutdown()
			}
		}()
	}
	leader := waitLeaderB(ctx, nodes[:1])
	for _, n := range nodes[1:] {
		startNodeB(b, ca, n, false)
		if err := leader.node.AddVoter(ctx, n.id, n.addr); err != nil {
			b.Fatal(err)
		}
	}
	var next atomic.Int64
	b.ResetTimer()
	var wg sync.WaitGroup
	start := time.Now()
	conc := 256
	if v, err := strconv.Atoi(os.Getenv("BENCH_CONC")); err == nil {
		conc = v
	}
	for w := 0; w < conc; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(b.N) {
				if err := apply(ctx, leader, fmt.Sprint(w), "v"); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "commits/s")
}
