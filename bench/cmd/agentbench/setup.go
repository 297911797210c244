package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/charm"
	"github.com/droverhq/drover/spoke"
)

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

func startSpoke(ctx context.Context, dir string) (*spoke.Server, *api.Client, *spoke.AdminCredential, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, nil, nil, err
	}
	raftAddr, err := freeAddr()
	if err != nil {
		return nil, nil, nil, err
	}
	ready := make(chan struct{})
	srv, err := spoke.New(ctx, spoke.Config{DataDir: filepath.Join(dir, "node"), Listen: addr, RaftListen: raftAddr,
		Bootstrap: true, Name: "bench", Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		NoProvisioner: true, Ready: ready})
	if err != nil {
		return nil, nil, nil, err
	}
	go srv.Serve(ctx) // ends with ctx
	<-ready
	cred, err := spoke.ReadAdminCredential(filepath.Join(dir, "node"))
	if err != nil {
		return nil, nil, nil, err
	}
	cl, err := api.NewClient(api.ClientConfig{Addresses: []string{addr}, CACert: []byte(cred.CACert),
		User: cred.User, Password: cred.Password, Timeout: 60 * time.Second})
	if err != nil {
		return nil, nil, nil, err
	}
	for deadline := time.Now().Add(30 * time.Second); ; {
		if _, err := cl.WhoAmI(ctx); err == nil {
			break
		} else if time.Now().After(deadline) {
			return nil, nil, nil, fmt.Errorf("bootstrap: %w", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return srv, cl, cred, nil
}

// deploy creates kv (1 unit, machine 0) and web (n units, machines 1..n)
// related web:db–kv:db (relation 0).
func deploy(ctx context.Context, cl *api.Client, dir string, n int) (string, error) {
	m, err := cl.AddModel(ctx, api.AddModelRequest{Name: "bench"})
	if err != nil {
		return "", err
	}
	for _, c := range []struct {
		name, meta string
		units      int
	}{
		{"kv", "name: kv\nsummary: kv\ndescription: kv\nprovides:\n  db:\n    interface: kv\n", 1},
		{"web", "name: web\nsummary: web\ndescription: web\nrequires:\n  db:\n    interface: kv\n", n},
	} {
		cdir := filepath.Join(dir, "charms", c.name)
		if err := os.MkdirAll(cdir, 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(cdir, "metadata.yaml"), []byte(c.meta), 0o644); err != nil {
			return "", err
		}
		var buf bytes.Buffer
		if err := charm.ArchiveDir(cdir, &buf); err != nil {
			return "", err
		}
		ch, err := cl.UploadCharm(ctx, &buf)
		if err != nil {
			return "", err
		}
		if _, err := cl.Model(m.UUID).Deploy(ctx, api.DeployRequest{Application: c.name, CharmSHA256: ch.SHA256, NumUnits: c.units}); err != nil {
			return "", err
		}
	}
	if _, err := cl.Model(m.UUID).Integrate(ctx, "web:db", "kv:db"); err != nil {
		return "", err
	}
	return m.UUID, nil
}
