// Command agentbench measures the spoke's agent streams at scale: it starts
// one controller node in-process, deploys "web" with N units (each on its
// own machine, so N machine agents) related to a one-unit "kv", opens N
// agent websockets in this same process (each authenticated as its
// machine), and reports
//
//   - connections held (as the server counts them),
//   - memory per idle connection: Go heap + goroutine stacks delta / N, and
//     process RSS delta / N. Both ends of every connection (server and
//     simulated agent) live in this process, so these figures include the
//     client side too; they are an upper bound for the server's share;
//   - fan-out: kv's leader commits an application-bag change and the time
//     until each of the N connections has received a state frame with the
//     new app-version (p50/p99/max over connections, per repetition and
//     over all repetitions).
//
// Simulated agents recognise the frame by scanning it for "app-version"
// rather than decoding it whole, so the harness spends its CPU on the
// system under test.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/charm"
	"github.com/droverhq/drover/spoke"
)

func main() {
	n := flag.Int("n", 10000, "number of web units (agents)")
	reps := flag.Int("reps", 5, "fan-out repetitions")
	conc := flag.Int("concurrency", 64, "concurrent dials and setup proposals")
	keep := flag.Bool("keep", false, "keep the data directory")
	flag.StringVar(&memProfile, "memprofile", "", "write a heap profile of the idle connections here")
	flag.Parse()
	if err := run(*n, *reps, *conc, *keep); err != nil {
		fmt.Fprintln(os.Stderr, "agentbench:", err)
		os.Exit(1)
	}
}

func raiseNoFile(want uint64) error {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return err
	}
	if lim.Cur >= want {
		return nil
	}
	cur := lim
	cur.Cur = want
	if cur.Max < want {
		cur.Max = want // needs CAP_SYS_RESOURCE
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &cur); err == nil {
		return nil
	}
	// No privilege to raise the hard limit: take all of it, and say so if
	// that is not enough (both ends of every connection are in this process).
	lim.Cur = lim.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return err
	}
	if lim.Max < want {
		return fmt.Errorf("RLIMIT_NOFILE hard limit is %d, %d needed for 2 fds per agent; run with -n %d or raise the limit", lim.Max, want, (lim.Max-600)/2)
	}
	return nil
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

func run(n, reps, conc int, keep bool) error {
	if err := raiseNoFile(uint64(2*n + 500)); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir, err := os.MkdirTemp("", "agentbench-")
	if err != nil {
		return err
	}
	if !keep {
		defer os.RemoveAll(dir)
	}
	srv, cl, cred, err := startSpoke(ctx, dir)
	if err != nil {
		return err
	}
	fmt.Printf("agentbench: N=%d reps=%d GOMAXPROCS=%d\n", n, reps, runtime.GOMAXPROCS(0))

	t0 := time.Now()
	model, err := deploy(ctx, cl, dir, n)
	if err != nil {
		return err
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(conc)
	for i := 0; i <= n; i++ {
		g.Go(func() error { return srv.SetAgentSecret(gctx, model, strconv.Itoa(i), secretOf(i)) })
	}
	if err := g.Wait(); err != nil {
		return err
	}
	fmt.Printf("setup: model with %d+1 units and machines, credentials: %v\n", n, time.Since(t0).Round(time.Millisecond))

	heap0, stack0, rss0 := memory()
	dialer := newDialer([]byte(cred.CACert))
	addr := srv.APIAddr()
	agents := make([]*agent, n)
	t0 = time.Now()
	g, gctx = errgroup.WithContext(ctx)
	g.SetLimit(conc)
	for i := range n {
		g.Go(func() error {
			a, err := dialer.dial(gctx, addr, "machine-"+model+"-"+strconv.Itoa(i+1), secretOf(i+1))
			agents[i] = a
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	for _, a := range agents {
		<-a.initial
	}
	fmt.Printf("connected %d agents, all initial states received: %v\n", n, time.Since(t0).Round(time.Millisecond))
	heap1, stack1, rss1 := memory()
	if memProfile != "" {
		f, err := os.Create(memProfile)
		if err != nil {
			return err
		}
		pprof.Lookup("heap").WriteTo(f, 0)
		f.Close()
	}
	held := srv.AgentConnections()
	perHeap := float64(heap1+stack1-heap0-stack0) / float64(n)
	perRSS := float64(rss1-rss0) / float64(n)

	kv, err := dialer.dial(ctx, addr, "machine-"+model+"-0", secretOf(0))
	if err != nil {
		return err
	}
	<-kv.initial
	if err := kv.call(api.AgentEnterScope, api.AgentScopeParams{Unit: "kv/0", RelationID: 0}); err != nil {
		return err
	}
	if err := kv.call(api.AgentClaimLeader, api.AgentLeaderParams{Unit: "kv/0", Duration: 5 * time.Minute}); err != nil {
		return err
	}
	var all []time.Duration
	for rep := 1; rep <= reps; rep++ {
		start := time.Now()
		for _, a := range agents {
			a.arm(int64(rep), start)
		}
		if err := kv.call(api.AgentCommitHook, api.AgentHookChanges{Unit: "kv/0", Relations: []api.SettingsChange{
			{RelationID: 0, App: true, Set: map[string]string{"rev": strconv.Itoa(rep)}}}}); err != nil {
			return err
		}
		lat := make([]time.Duration, 0, n)
		deadline := time.After(2 * time.Minute)
		for _, a := range agents {
			select {
			case <-a.reachedCh:
			case <-deadline:
				return fmt.Errorf("rep %d: not every agent saw app-version %d within 2m", rep, rep)
			}
			lat = append(lat, time.Duration(a.latency.Load()))
		}
		slices.Sort(lat)
		all = append(all, lat...)
		fmt.Printf("fan-out rep %d: p50 %v  p99 %v  max %v\n", rep, pct(lat, 50), pct(lat, 99), lat[len(lat)-1])
	}
	slices.Sort(all)
	fmt.Println("---")
	fmt.Printf("connections held:        %d (server count; target 10000)\n", held)
	fmt.Printf("memory per idle conn:    %.1f KB heap+stacks (%.1f heap, %.1f stacks), %.1f KB RSS (server AND simulated agent side; target <= 30 KB)\n",
		perHeap/1024, float64(heap1-heap0)/float64(n)/1024, float64(stack1-stack0)/float64(n)/1024, perRSS/1024)
	fmt.Printf("fan-out to all (%d x %d): p50 %v  p99 %v  max %v (target p99 <= 1s)\n",
		reps, n, pct(all, 50), pct(all, 99), all[len(all)-1])
	kv.close()
	for _, a := range agents {
		a.close()
	}
	return nil
}

func pct(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := (len(sorted)*p + 99) / 100
	return sorted[max(0, min(i, len(sorted))-1)].Round(time.Microsecond)
}

var memProfile string

func secretOf(i int) string { return fmt.Sprintf("bench-secret-%08d", i) }

func memory() (heap, stack uint64, rss int64) {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b, _ := os.ReadFile("/proc/self/status")
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.Fields(v)[0], 10, 64)
			rss = kb << 10
		}
	}
	return ms.HeapAlloc, ms.StackInuse, rss
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
		if _, err := cl.Deploy(ctx, m.UUID, api.DeployRequest{Application: c.name, CharmSHA256: ch.SHA256, NumUnits: c.units}); err != nil {
			return "", err
		}
	}
	if _, err := cl.Integrate(ctx, m.UUID, "web:db", "kv:db"); err != nil {
		return "", err
	}
	return m.UUID, nil
}
