package local

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/spoke/internal/state"
	"github.com/droverhq/drover/spoke/internal/state/stream"
)

// applyAll applies commands to a new FSM, as raft would.
func applyAll(t *testing.T, f *state.FSM, from uint64, cmds ...func() (state.MessageType, any)) {
	t.Helper()
	for i, c := range cmds {
		typ, req := c()
		b, err := state.Encode(typ, req)
		if err != nil {
			t.Fatal(err)
		}
		if res := f.Apply(&raft.Log{Index: from + uint64(i), Type: raft.LogCommand, Data: b}).(state.ApplyResult); res.Err != nil {
			t.Fatalf("%v: %v", typ, res.Err)
		}
	}
}

func newFSM(t *testing.T) *state.FSM {
	t.Helper()
	f, err := state.NewFSM(state.FSMConfig{Logger: slog.New(slog.DiscardHandler), EventBufferSize: 16})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestProvisionerLeavesAModelBeingImported: on a migration's target, the
// machines of a model being imported are neither provisioned (their agents
// run under the source controller) nor torn down as orphans.
func TestProvisionerLeavesAModelBeingImported(t *testing.T) {
	const model = "0d5e3c2b-1a0f-4e9d-8c7b-6a5f4e3d2c1b"
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	src := newFSM(t)
	charm := api.Charm{SHA256: strings.Repeat("c0", 32), Name: "app", MetadataYAML: "name: app\n"}
	applyAll(t, src, 1,
		func() (state.MessageType, any) {
			return state.AddModelType, &state.AddModelRequest{UUID: model, Name: "m", Owner: "admin", Now: t0}
		},
		func() (state.MessageType, any) { return state.AddCharmType, &state.AddCharmRequest{Charm: charm} },
		func() (state.MessageType, any) {
			return state.AddApplicationType, &state.AddApplicationRequest{ModelUUID: model, Name: "app", CharmSHA256: charm.SHA256, NumUnits: 1, Now: t0}
		})
	var export bytes.Buffer
	if _, err := state.ExportModel(src.Store().Snapshot(), model, "source", 3, &export); err != nil {
		t.Fatal(err)
	}
	dst := newFSM(t)
	applyAll(t, dst, 1, func() (state.MessageType, any) {
		return state.ImportModelType, &state.ImportModelRequest{MigrationID: "mig-1", Export: export.Bytes(), Now: t0}
	})

	root, err := os.MkdirTemp("", "drover-importing-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	if err := os.Chmod(root, 0o755); err != nil { // reachable, as a machine root must be
		t.Fatal(err)
	}
	bin := filepath.Join(root, "drover-agent")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	reconcile := func(dir string) int32 {
		t.Helper()
		var proposed atomic.Int32
		p, err := New(Config{Store: dst.Store(), Events: stream.NewBroker(16), Dir: dir, AgentBinary: bin,
			Logger: slog.New(slog.DiscardHandler),
			Propose: func(context.Context, state.MessageType, any) (any, uint64, error) {
				proposed.Add(1)
				return nil, 0, nil
			}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { pl := p.ownPlace(model, "0"); p.stop(pl); _ = p.removeArea(pl) })
		if err := p.reconcile(t.Context()); err != nil {
			t.Fatal(err)
		}
		return proposed.Load()
	}

	// Nothing is provisioned.
	fresh := filepath.Join(root, "fresh")
	if n := reconcile(fresh); n != 0 {
		t.Errorf("the provisioner proposed %d commands for a model being imported", n)
	}
	if _, err := os.Stat(filepath.Join(fresh, model)); !os.IsNotExist(err) {
		t.Errorf("the provisioner made a directory for a model being imported: %v", err)
	}

	// A directory the model's machine has is no orphan.
	kept := filepath.Join(root, "kept")
	conf := filepath.Join(kept, model, "0", "agent.conf")
	if err := os.MkdirAll(filepath.Dir(conf), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(conf, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	reconcile(kept)
	if _, err := os.Stat(conf); err != nil {
		t.Errorf("the machine directory of a model being imported was torn down: %v", err)
	}
}
