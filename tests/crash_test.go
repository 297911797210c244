package tests

import (
	"context"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/tests/testkit"
)

// TestKill9LosesNoAcknowledgedWrite runs a 3-node controller as real
// processes, writes continuously through all nodes, and SIGKILLs nodes at
// random moments (leaders included), restarting them on their data dirs.
// Every write the API acknowledged must be there at the end.
func TestKill9LosesNoAcknowledgedWrite(t *testing.T) {
	duration := 10 * time.Second
	if os.Getenv("DROVER_SOAK") != "" {
		duration = 2 * time.Minute
	}
	c := startProcCluster(t, 3)
	ctx := t.Context()
	m, err := c.client(0, 1, 2).AddModel(ctx, api.AddModelRequest{Name: "crash"})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithTimeout(ctx, duration)
	defer stop()

	var mu sync.Mutex
	acked := map[string]string{} // key -> value of an acknowledged write
	var wg sync.WaitGroup
	for w := 0; w < 6; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl := c.client(w%3, (w+1)%3, (w+2)%3)
			for i := 0; runCtx.Err() == nil; i++ {
				// Each key is written once, so its value identifies the write.
				key := "w" + strconv.Itoa(w) + "-" + strconv.Itoa(i)
				wctx, cancel := context.WithTimeout(runCtx, 5*time.Second)
				_, err := cl.Model(m.UUID).SetConfig(wctx, api.ConfigChange{Set: map[string]any{key: "v"}})
				cancel()
				if err == nil {
					mu.Lock()
					acked[key] = "v"
					mu.Unlock()
				}
			}
		}()
	}
	rng := rand.New(rand.NewPCG(9, 9))
	kills := 0
	for runCtx.Err() == nil {
		select {
		case <-runCtx.Done():
			continue
		case <-time.After(time.Duration(300+rng.IntN(900)) * time.Millisecond):
		}
		c.restart(rng.IntN(3)) // SIGKILL, then start again
		kills++
	}
	wg.Wait()

	var cfg map[string]any
	testkit.EventuallyWithin(t, 60*time.Second, func() (bool, error) {
		cfg, err = c.client(0, 1, 2).Model(m.UUID).Config(ctx, api.ReadOptions{Consistent: true})
		return err == nil, nil
	}, "final read")
	lost := 0
	for k := range acked {
		if cfg[k] != "v" {
			lost++
			if lost < 5 {
				t.Errorf("acknowledged write %s lost", k)
			}
		}
	}
	t.Logf("%d acknowledged writes across %d SIGKILLs; %d lost", len(acked), kills, lost)
	if len(acked) < 50 {
		t.Fatalf("only %d writes acknowledged: too little progress to test", len(acked))
	}
	if lost > 0 {
		t.Fatalf("%d acknowledged writes lost", lost)
	}
}
