package agentsim

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sync/errgroup"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/bench/internal/hubstack"
	"github.com/droverhq/drover/charm"
)

// benchCharm is the application's charm: metadata alone (no agent runs
// its hooks).
const benchCharm = "name: web\nsummary: web\ndescription: web\n"

// Model is one model on the controller with its simulated agents' credentials.
type Model struct {
	UUID, Name string
	Machines   []string // machine IDs
}

// Deploy creates a model named name on src through the hub (cl, as an
// administrator of the organization) with one application of n units,
// each on a machine of its own; records every machine provisioned (a
// manual machine, "manual:bench:<id>") and gives its agent a secret,
// conc proposals at a time.
func Deploy(ctx context.Context, cl *api.Client, src *hubstack.Spoke, dir, name string, n, conc int) (*Model, error) {
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
	out := &Model{UUID: m.UUID, Name: name}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(conc)
	for _, machine := range ms {
		out.Machines = append(out.Machines, machine.ID)
		g.Go(func() error {
			if err := src.Server.SetMachineProvider(gctx, m.UUID, machine.ID, "manual:bench:"+machine.ID); err != nil {
				return err
			}
			return src.Server.SetAgentSecret(gctx, m.UUID, machine.ID, SecretOf(machine.ID))
		})
	}
	return out, g.Wait()
}

// TagOf is the agent tag of machine in model.
func TagOf(model, machine string) string { return "machine-" + model + "-" + machine }

// SecretOf is the agent secret Deploy gives machine.
func SecretOf(machine string) string { return "bench-secret-" + machine }
