package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/bench/internal/hubstack"
	"github.com/droverhq/drover/charm"
)

// benchCharm is the application's charm: metadata alone (no agent runs
// its hooks).
const benchCharm = "name: web\nsummary: web\ndescription: web\n"

// model is one model on the source with its simulated agents' credentials.
type model struct {
	uuid, name string
	machines   []string // machine IDs
}

// deploy creates a model named name on src through the hub (cl, as an
// administrator of the organization) with one application of n units,
// each on a machine of its own; records every machine provisioned (a
// manual machine, "manual:bench:<id>") and gives its agent a secret,
// conc proposals at a time.
func deploy(ctx context.Context, cl *api.Client, src *hubstack.Spoke, dir, name string, n, conc int) (*model, error) {
	m, err := cl.AddModel(ctx, api.AddModelRequest{Name: name, Controller: src.Name})
	if err != nil {
		return nil, fmt.Errorf("add model %s on %s through the hub: %w", name, src.Name, err)
	}
	cdir := filepath.Join(dir, "charm")
	if err := os.MkdirAll(cdir, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(cdir, "metadata.yaml"), []byte(benchCharm), 0o644); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := charm.ArchiveDir(cdir, &buf); err != nil {
		return nil, err
	}
	mc := cl.Model(m.UUID)
	ch, err := mc.UploadCharm(ctx, &buf)
	if err != nil {
		return nil, fmt.Errorf("upload the charm through the hub: %w", err)
	}
	if _, err := mc.Deploy(ctx, api.DeployRequest{Application: "web", CharmSHA256: ch.SHA256, NumUnits: n}); err != nil {
		return nil, fmt.Errorf("deploy through the hub: %w", err)
	}
	ms, err := mc.Machines(ctx, api.ReadOptions{Consistent: true})
	if err != nil {
		return nil, fmt.Errorf("list the machines: %w", err)
	}
	if len(ms) != n {
		return nil, fmt.Errorf("the model has %d machines, want %d", len(ms), n)
	}
	out := &model{uuid: m.UUID, name: name}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(conc)
	for _, machine := range ms {
		out.machines = append(out.machines, machine.ID)
		g.Go(func() error {
			if err := src.Server.SetMachineProvider(gctx, m.UUID, machine.ID, "manual:bench:"+machine.ID); err != nil {
				return err
			}
			return src.Server.SetAgentSecret(gctx, m.UUID, machine.ID, secretOf(machine.ID))
		})
	}
	return out, g.Wait()
}

func tagOf(model, machine string) string { return "machine-" + model + "-" + machine }

func secretOf(machine string) string { return "bench-secret-" + machine }

// connect logs every machine's agent in to the source, conc at a time,
// and waits until each holds its initial state.
func connect(ctx context.Context, src *hubstack.Spoke, m *model, conc int) ([]*minion, error) {
	d := wsDialer(src.CA)
	mins := make([]*minion, len(m.machines))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(conc)
	for i, id := range m.machines {
		g.Go(func() error {
			mn := &minion{tag: tagOf(m.uuid, id), secret: secretOf(id)}
			c, err := dial(gctx, &d, src.Addr, mn.tag, mn.secret)
			if err != nil {
				return err
			}
			mn.src = c
			mins[i] = mn
			select {
			case <-c.initial:
				return nil
			case <-c.done:
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
			mn.src.ws.Close()
		}
		if mn.dst != nil {
			mn.dst.ws.Close()
		}
	}
}
