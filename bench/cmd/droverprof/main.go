// Command droverprof runs a 3-node Drover controller in-process (spoke.New
// and Serve) under the commitbench write load and writes a CPU profile of
// the measured phase, for `go tool pprof`. The client shares the process, so
// its work (TLS, HTTP/2, JSON) is in the profile too.
//
//	cd bench && go run ./cmd/droverprof -c 256 -duration 10s -cpuprofile /tmp/drover.pprof
//	go tool pprof -top /tmp/drover.pprof
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"syscall"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/bench/internal/drovercluster"
	"github.com/droverhq/drover/bench/internal/load"
	"github.com/droverhq/drover/spoke"
	"github.com/droverhq/drover/tests/testkit"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "droverprof:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	conc := flag.Int("c", 256, "concurrent writers")
	dur := flag.Duration("duration", 10*time.Second, "profiled load time")
	out := flag.String("cpuprofile", "drover.pprof", "CPU profile output")
	mutex := flag.String("mutexprofile", "", "mutex profile output (optional)")
	flag.Parse()

	dir, err := os.MkdirTemp("", "droverprof-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithCancel(ctx)
	served, started := make(chan error, 3), 0
	defer func() { // stop the nodes and wait for each Serve to return
		cancel()
		for range started {
			<-served
		}
	}()
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	startNode := func(i int, join, token string) error {
		port, err := testkit.ReservePort()
		if err != nil {
			return err
		}
		rport, err := testkit.ReservePort()
		if err != nil {
			return err
		}
		s, err := spoke.New(ctx, spoke.Config{DataDir: filepath.Join(dir, "n"+strconv.Itoa(i)),
			Listen: "127.0.0.1:" + strconv.Itoa(port), RaftListen: "127.0.0.1:" + strconv.Itoa(rport),
			Bootstrap: join == "", Join: join, JoinToken: token, Logger: logger})
		if err != nil {
			return err
		}
		started++
		go func() { served <- s.Serve(ctx) }()
		return nil
	}
	if err := startNode(1, "", ""); err != nil {
		return err
	}
	cred, admin, err := adminClient(ctx, filepath.Join(dir, "n1"))
	if err != nil {
		return err
	}
	defer admin.Close()
	info, err := waitVoters(ctx, admin, 1) // the admin user is replicated state
	if err != nil {
		return err
	}
	for i := 2; i <= 3; i++ {
		tok, err := admin.CreateJoinToken(ctx, 0)
		if err == nil {
			err = startNode(i, cred.APIAddresses[0], tok.Token)
		}
		if err != nil {
			return err
		}
		if info, err = waitVoters(ctx, admin, i); err != nil {
			return err
		}
	}
	t, err := drovercluster.NewTarget(ctx, info, api.ClientConfig{
		CACert: []byte(cred.CACert), User: cred.User, Password: cred.Password})
	if err != nil {
		return err
	}
	defer t.Close()
	return profile(ctx, t, *conc, *dur, *out, *mutex)
}

// profile warms up for a second, then profiles the measured load.
func profile(ctx context.Context, t load.Target, conc int, dur time.Duration, out, mutex string) error {
	cfg := load.Config{Concurrency: conc, Duration: time.Second, Keyspace: max(10000, conc)}
	if _, err := load.Run(ctx, t, cfg); err != nil {
		return err
	}
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	if mutex != "" {
		runtime.SetMutexProfileFraction(10)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		return errors.Join(err, f.Close())
	}
	cfg.Duration = dur
	r, err := load.Run(ctx, t, cfg)
	pprof.StopCPUProfile()
	err = errors.Join(err, f.Close())
	if mutex != "" {
		err = errors.Join(err, writeProfile("mutex", mutex))
	}
	fmt.Printf("c=%d: %.0f commits/s p50 %v p99 %v errors %d (first: %v); CPU profile in %s\n",
		conc, r.CommitsPerSec, r.P50, r.P99, r.Errors, r.FirstError, out)
	return err
}

func writeProfile(name, path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	return errors.Join(pprof.Lookup(name).WriteTo(f, 0), f.Close())
}

// adminClient waits for node 1's controller.json and returns a client.
func adminClient(ctx context.Context, dataDir string) (*spoke.AdminCredential, *api.Client, error) {
	for {
		cred, err := spoke.ReadAdminCredential(dataDir)
		if err == nil {
			c, err := api.NewClient(api.ClientConfig{Addresses: cred.APIAddresses,
				CACert: []byte(cred.CACert), User: cred.User, Password: cred.Password, Timeout: 10 * time.Second})
			return cred, c, err
		}
		if err := sleep(ctx); err != nil {
			return nil, nil, err
		}
	}
}

func waitVoters(ctx context.Context, c *api.Client, n int) (*api.ControllerInfo, error) {
	for {
		info, err := c.ControllerInfo(ctx)
		if err == nil {
			voters, leader := 0, false
			for _, nd := range info.Nodes {
				voters += btoi(nd.Voter)
				leader = leader || nd.Leader
			}
			if voters == n && leader {
				return info, nil
			}
		}
		if err := sleep(ctx); err != nil {
			return nil, err
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func sleep(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(50 * time.Millisecond):
		return nil
	}
}
