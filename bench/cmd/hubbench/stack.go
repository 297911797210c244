package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/droverhq/drover/bench/internal/hubstack"
	"github.com/droverhq/drover/hub"
)

// stack is the system under test: the hub (bench/internal/hubstack:
// a private PostgreSQL, and in this process embedded OpenFGA, the
// development issuer and the hub), and one real spoke that trusts it and
// is registered with it (in a process of its own with -spoke-process:
// spokeproc.go).
type stack struct {
	*hubstack.Hub
	spokeAddr string
	spokeCA   []byte
	spokeUUID string
	spokePID  int // the spoke's own process (-spoke-process), else 0
}

func (s *stack) close() {
	if err := s.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "hubbench: shutdown:", err)
	}
}

// startStack starts everything under root (which the postgres user must
// be able to traverse). On error, whatever started is stopped.
func startStack(ctx context.Context, root string, maxList uint32, spokeProcess bool) (_ *stack, err error) {
	start := time.Now()
	h, err := hubstack.Start(ctx, root, hubstack.Config{MaxList: maxList})
	if err != nil {
		return nil, err
	}
	s := &stack{Hub: h}
	defer func() {
		if err != nil {
			s.close()
		}
	}()
	spokeDir := filepath.Join(root, "spoke")
	if !spokeProcess {
		sp, err := h.StartSpoke(ctx, spokeDir, "real", nil) // units' machines stay pending: no agent processes
		if err != nil {
			return nil, err
		}
		s.spokeAddr, s.spokeCA, s.spokeUUID = sp.Addr, sp.CA, sp.UUID
		return s, nil
	}
	if s.spokeAddr, err = hubstack.Addr(); err != nil {
		return nil, err
	}
	raft, err := hubstack.Addr()
	if err != nil {
		return nil, err
	}
	logFile := filepath.Join(root, "spoke.log")
	set := spokeSettings{dataDir: spokeDir, listen: s.spokeAddr, raft: raft, hubURL: "https://" + h.Addr,
		hubCAFile: hub.CACertPath(h.Dir)}
	proc, stop, err := startSpokeProcess(set, logFile)
	if err != nil {
		return nil, fmt.Errorf("spoke process: %w", err)
	}
	h.OnClose(stop)
	s.spokePID = proc.Pid
	cred, err := hubstack.ReadCredential(ctx, spokeDir, logFile, start)
	if err != nil {
		return nil, err
	}
	s.spokeCA = []byte(cred.CACert)
	s.spokeUUID, err = h.Register(ctx, "real", "https://"+s.spokeAddr, cred.CACert, "real")
	return s, err
}
