package spoke

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/tests/testkit"
)

// The linearizability test drives a 3-node controller through its public
// API with concurrent clients while a nemesis isolates, kills and restarts
// nodes, records every operation, and checks the history with porcupine.
// Model config keys are the registers: a write is PATCH config, a read is
// a consistent GET config. A write that failed may or may not have taken
// effect, so it is recorded as never returning; a read that failed is
// dropped. Final reads after healing make any lost acknowledged write a
// violation.

type regInput struct {
	write bool
	key   string
	value string
}

var registerModel = porcupine.Model{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[string][]porcupine.Operation{}
		var keys []string
		for _, op := range history {
			k := op.Input.(regInput).key
			if _, ok := byKey[k]; !ok {
				keys = append(keys, k)
			}
			byKey[k] = append(byKey[k], op)
		}
		sort.Strings(keys)
		out := make([][]porcupine.Operation, 0, len(keys))
		for _, k := range keys {
			out = append(out, byKey[k])
		}
		return out
	},
	Init: func() any { return "" },
	Step: func(state, input, output any) (bool, any) {
		in := input.(regInput)
		if in.write {
			return true, in.value
		}
		return output.(string) == state.(string), state
	},
	DescribeOperation: func(input, output any) string {
		in := input.(regInput)
		if in.write {
			return fmt.Sprintf("put(%s, %s)", in.key, in.value)
		}
		return fmt.Sprintf("get(%s) -> %q", in.key, output)
	},
}

type history struct {
	mu    sync.Mutex
	start time.Time
	ops   []porcupine.Operation
}

func (h *history) now() int64 { return time.Since(h.start).Nanoseconds() }

func (h *history) add(op porcupine.Operation) {
	h.mu.Lock()
	h.ops = append(h.ops, op)
	h.mu.Unlock()
}

func TestLinearizableUnderFaults(t *testing.T) {
	// Long histories with many unknown-outcome writes are expensive to
	// check, so the soak runs many shorter rounds rather than a few long
	// ones (porcupine answers Unknown when its time runs out).
	duration, rounds := 8*time.Second, 1
	if os.Getenv("DROVER_SOAK") != "" {
		duration, rounds = 30*time.Second, 10
	}
	for r := 0; r < rounds; r++ {
		t.Run(fmt.Sprintf("round%d", r), func(t *testing.T) { linearizabilityRound(t, duration) })
	}
}

func linearizabilityRound(t *testing.T, duration time.Duration) {
	c := newTestCluster(t, 3)
	ctx := t.Context()
	m, err := c.client(0, 1, 2).AddModel(ctx, api.AddModelRequest{Name: "lin"})
	if err != nil {
		t.Fatal(err)
	}
	keys := []string{"k0", "k1", "k2", "k3", "k4", "k5", "k6", "k7", "k8", "k9", "k10", "k11", "k12", "k13", "k14", "k15"}
	h := &history{start: time.Now()}
	runCtx, stop := context.WithTimeout(ctx, duration)
	defer stop()

	var wg sync.WaitGroup
	const clients = 8
	acked := 0
	var ackMu sync.Mutex
	for id := 0; id < clients; id++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			first := id % 3
			cl := c.client(first, (first+1)%3, (first+2)%3)
			rng := rand.New(rand.NewPCG(uint64(id), 7))
			for seq := 0; runCtx.Err() == nil; seq++ {
				key := keys[rng.IntN(len(keys))]
				opCtx, cancel := context.WithTimeout(runCtx, 3*time.Second)
				if rng.IntN(2) == 0 {
					val := strconv.Itoa(id) + "-" + strconv.Itoa(seq)
					call := h.now()
					_, err := cl.Model(m.UUID).SetConfig(opCtx, api.ConfigChange{Set: map[string]any{key: val}})
					ret := h.now()
					if err != nil {
						ret = math.MaxInt64 // outcome unknown
					} else {
						ackMu.Lock()
						acked++
						ackMu.Unlock()
					}
					h.add(porcupine.Operation{ClientId: id, Input: regInput{write: true, key: key, value: val}, Call: call, Output: "", Return: ret})
				} else {
					call := h.now()
					cfg, err := cl.Model(m.UUID).Config(opCtx, api.ReadOptions{Consistent: true})
					ret := h.now()
					if err == nil {
						v, _ := cfg[key].(string)
						h.add(porcupine.Operation{ClientId: id, Input: regInput{key: key}, Call: call, Output: v, Return: ret})
					}
				}
				cancel()
			}
		}()
	}

	// The nemesis: isolate the leader, heal, kill a node, restart it.
	rng := rand.New(rand.NewPCG(42, 1))
	faults := 0
	for runCtx.Err() == nil {
		select {
		case <-runCtx.Done():
		case <-time.After(time.Duration(800+rng.IntN(700)) * time.Millisecond):
		}
		if runCtx.Err() != nil {
			break
		}
		switch faults % 4 {
		case 0:
			c.isolate(c.leader())
		case 1, 3:
			c.faults.Heal()
		case 2:
			victim := rng.IntN(3)
			c.stop(victim)
			c.start(victim)
		}
		faults++
	}
	wg.Wait()
	c.faults.Heal()

	// Final reads, after every node is back: they must reflect every
	// acknowledged write.
	final := c.client(0, 1, 2)
	testkit.EventuallyWithin(t, 30*time.Second, func() (bool, error) {
		call := h.now()
		cfg, err := final.Model(m.UUID).Config(ctx, api.ReadOptions{Consistent: true})
		ret := h.now()
		if err != nil {
			return false, nil
		}
		for _, k := range keys {
			v, _ := cfg[k].(string)
			h.add(porcupine.Operation{ClientId: clients, Input: regInput{key: k}, Call: call, Output: v, Return: ret})
		}
		return true, nil
	}, "final reads")

	res := porcupine.CheckOperationsTimeout(registerModel, h.ops, 5*time.Minute)
	t.Logf("%d operations (%d acknowledged writes) under %d faults: %v", len(h.ops), acked, faults, res)
	if acked < 20 {
		t.Fatalf("only %d writes were acknowledged: the cluster made too little progress to test", acked)
	}
	switch res {
	case porcupine.Ok:
	case porcupine.Unknown:
		t.Fatalf("the checker ran out of time on %d operations: inconclusive (shorten the round or add keys)", len(h.ops))
	default:
		t.Fatalf("history is not linearizable: %v", res)
	}
}
