package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/droverhq/drover/internal/gcpolicy"
	"github.com/droverhq/drover/spoke"
)

// With -spoke-process the spoke runs in a process of its own, as a
// controller does in production: hubbench starts itself again with
// spokeChildEnv set, and that process runs only the spoke. The spoke's
// garbage collection (status allocates about 120 KB per call) then pauses
// the spoke alone, on both paths alike, as it would on a real controller,
// rather than the hub and the client it shares a process with.

// spokeChildEnv carries the child spoke's settings, as KEY=VALUE pairs
// separated by newlines; its presence makes hubbench a spoke.
const spokeChildEnv = "HUBBENCH_SPOKE"

type spokeSettings struct {
	dataDir, listen, raft, hubURL, hubCAFile string
}

func (s spokeSettings) encode() string {
	return strings.Join([]string{"data-dir=" + s.dataDir, "listen=" + s.listen, "raft=" + s.raft,
		"hub-url=" + s.hubURL, "hub-ca=" + s.hubCAFile}, "\n")
}

func decodeSpokeSettings(v string) (spokeSettings, error) {
	var s spokeSettings
	for line := range strings.Lines(v) {
		k, val, _ := strings.Cut(strings.TrimSpace(line), "=")
		switch k {
		case "data-dir":
			s.dataDir = val
		case "listen":
			s.listen = val
		case "raft":
			s.raft = val
		case "hub-url":
			s.hubURL = val
		case "hub-ca":
			s.hubCAFile = val
		default:
			return s, fmt.Errorf("%s: unknown setting %q", spokeChildEnv, k)
		}
	}
	return s, nil
}

// runSpokeChild is the child process: the spoke, until SIGTERM.
func runSpokeChild(v string) error {
	set, err := decodeSpokeSettings(v)
	if err != nil {
		return err
	}
	if err := gcpolicy.Apply(); err != nil {
		return err
	}
	ca, err := os.ReadFile(set.hubCAFile)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	quiet := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	sp, err := spoke.New(ctx, spoke.Config{DataDir: set.dataDir, Listen: set.listen, RaftListen: set.raft, Name: "real",
		Bootstrap: true, Logger: quiet, HubURL: set.hubURL, HubCACert: ca,
		NoProvisioner: true}) // units' machines stay pending: no agent processes
	if err != nil {
		return err
	}
	if err := sp.Serve(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// startSpokeProcess starts the child spoke and returns its process and
// the function that stops it (SIGTERM, then SIGKILL after 10 s).
func startSpokeProcess(set spokeSettings, logFile string) (*os.Process, func(), error) {
	self, err := os.Executable()
	if err != nil {
		return nil, nil, err
	}
	log, err := os.Create(logFile)
	if err != nil {
		return nil, nil, err
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), spokeChildEnv+"="+set.encode())
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, nil, err
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); log.Close(); close(done) }()
	stop := func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}
	return cmd.Process, stop, nil
}

// processCPU is the CPU time (user and system) process pid has used, from
// /proc (in clock ticks of 10 ms: exact over many calls, not for one).
func processCPU(pid int) time.Duration {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0
	}
	// Fields after the command (in parentheses, which may hold spaces):
	// state is field 3, utime 14, stime 15.
	rest := string(b[strings.LastIndexByte(string(b), ')')+2:])
	f := strings.Fields(rest)
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	const tick = 10 * time.Millisecond // USER_HZ is 100 on Linux
	return time.Duration(ut+st) * tick
}
