package main

import (
	"context"
	"fmt"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/droverhq/drover/bench/internal/agentsim"
	"github.com/droverhq/drover/bench/internal/hubstack"
)

// connect logs every machine's agent in to the source, conc at a time,
// and waits until each holds its initial state.
func connect(ctx context.Context, src *hubstack.Spoke, m *agentsim.Model, conc int) ([]*minion, error) {
	d := agentsim.WSDialer(src.CA)
	mins := make([]*minion, len(m.Machines))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(conc)
	for i, id := range m.Machines {
		g.Go(func() error {
			mn := &minion{tag: agentsim.TagOf(m.UUID, id), secret: agentsim.SecretOf(id)}
			c, err := agentsim.Dial(gctx, &d, src.Addr, mn.tag, mn.secret)
			if err != nil {
				return err
			}
			mn.src = c
			mins[i] = mn
			select {
			case <-c.Initial:
				return nil
			case <-c.Done:
				return fmt.Errorf("%s: the source closed the stream before the first state", mn.tag)
			case <-time.After(time.Minute):
				return fmt.Errorf("%s: no state from the source within a minute", mn.tag)
			}
		})
	}
	err := g.Wait()
	if err != nil {
		closeAll(mins)
	}
	return mins, err
}

// closeAll closes every agent's streams.
func closeAll(mins []*minion) {
	for _, mn := range mins {
		if mn == nil {
			continue
		}
		if mn.src != nil {
			mn.src.WS.Close()
		}
		if mn.dst != nil {
			mn.dst.WS.Close()
		}
	}
}
