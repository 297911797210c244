// Command agentbench measures the spoke's agent streams at scale: it starts
// one controller node in-process, deploys "web" with N units (each on its
// own machine, so N machine agents) related to a one-unit "kv", opens N
// agent websockets from a child process (agentbench re-executed with
// -agents; see child.go), each authenticated as its machine, and reports
//
//   - connections held (as the server counts them);
//   - memory per idle connection, measured in the spoke's process, which
//     holds only the server end of every connection: Go heap + goroutine
//     stacks delta / N (runtime.ReadMemStats after a forced GC), and RSS
//     delta / N (/proc/self/status after returning freed memory to the OS);
//   - fan-out: kv's leader commits an application-bag change and the time
//     until each of the N connections has received a state frame with the
//     new app-version (p50/p99/max over connections, per repetition and
//     over all repetitions). Both processes run on one host and stamp
//     times with the wall clock (time.Now().UnixNano()), the one clock
//     they share.
//
// Simulated agents recognise the frame by scanning it for "app-version"
// rather than decoding it whole, so the harness spends its CPU on the
// system under test.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/bench/internal/prof"
	"github.com/droverhq/drover/spoke"
)

func main() {
	n := flag.Int("n", 10000, "number of web units (agents)")
	reps := flag.Int("reps", 5, "fan-out repetitions")
	conc := flag.Int("concurrency", 64, "concurrent dials and setup proposals")
	keep := flag.Bool("keep", false, "keep the data directory")
	memProfile := flag.String("memprofile", "", "write heap profiles of the spoke with idle connections here (and before them to <file>.base)")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the spoke during the fan-outs here")
	agents := flag.Bool("agents", false, "internal: run as the simulated agents' process")
	var child childConfig
	flag.StringVar(&child.addr, "addr", "", "internal: spoke API address (-agents)")
	flag.StringVar(&child.model, "model", "", "internal: model UUID (-agents)")
	flag.StringVar(&child.caFile, "ca", "", "internal: CA certificate file (-agents)")
	flag.Parse()
	ctx := context.Background()
	var err error
	if *agents {
		child.n, child.conc = *n, *conc
		err = runAgents(ctx, child)
	} else {
		err = run(ctx, *n, *reps, *conc, *keep, *memProfile, *cpuProfile)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "agentbench:", err)
		os.Exit(1)
	}
}

// raiseNoFile sets the soft fd limit to want, or to the hard limit if that
// is lower and cannot be raised.
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
	lim.Cur = lim.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return err
	}
	if lim.Max < want {
		return fmt.Errorf("RLIMIT_NOFILE hard limit is %d, %d needed for one fd per agent; run with -n %d or raise the limit", lim.Max, want, lim.Max-500)
	}
	return nil
}

func run(ctx context.Context, n, reps, conc int, keep bool, memProfile, cpuProfile string) (err error) {
	if err := raiseNoFile(uint64(n + 500)); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
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
	fmt.Printf("agentbench: N=%d reps=%d GOMAXPROCS=%d (agents in a child process)\n", n, reps, runtime.GOMAXPROCS(0))
	model, caFile, err := setupModel(ctx, srv, cl, cred, dir, n, conc)
	if err != nil {
		return err
	}
	proc, mem, err := connectAgents(ctx, srv, childConfig{addr: srv.APIAddr(), model: model, caFile: caFile, n: n, conc: conc}, memProfile)
	if err != nil {
		return err
	}
	kv, err := dialLeader(ctx, srv.APIAddr(), cred.CACert, model)
	if err != nil {
		return err
	}
	stopProf, err := prof.StartCPU(cpuProfile)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, stopProf()) }()
	all, err := fanOut(proc, kv, n, reps)
	if err != nil {
		return err
	}
	fmt.Println("---")
	fmt.Printf("connections held:        %d (server count; target 10000)\n", mem.held)
	fmt.Printf("memory per idle conn:    %s (spoke process: server side only; target <= 30 KB)\n", perConn(mem.before, mem.idle, n))
	fmt.Printf("  after one request each: %s (includes the store's growth from %d status writes)\n", perConn(mem.before, mem.afterRequest, n), n)
	fmt.Printf("fan-out to all (%d x %d): p50 %v  p99 %v  max %v (target p99 <= 1s)\n",
		reps, n, pct(all, 50), pct(all, 99), all[len(all)-1])
	kv.close()
	return proc.quit()
}

// setupModel deploys the model and gives every machine agent its secret;
// it returns the model's UUID and the CA certificate file the agents trust.
func setupModel(ctx context.Context, srv *spoke.Server, cl *api.Client, cred *spoke.AdminCredential, dir string, n, conc int) (model, caFile string, err error) {
	t0 := time.Now()
	model, err = deploy(ctx, cl, dir, n)
	if err != nil {
		return "", "", err
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(conc)
	for i := 0; i <= n; i++ {
		g.Go(func() error { return srv.SetAgentSecret(gctx, model, strconv.Itoa(i), secretOf(i)) })
	}
	if err := g.Wait(); err != nil {
		return "", "", err
	}
	fmt.Printf("setup: model with %d+1 units and machines, credentials: %v\n", n, time.Since(t0).Round(time.Millisecond))
	caFile = filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caFile, []byte(cred.CACert), 0o644); err != nil {
		return "", "", err
	}
	return model, caFile, nil
}

// connMemory is the spoke's memory before the agents connect, with every
// agent connected and idle, and after one request each; held is the
// server's count of agent connections.
type connMemory struct {
	before, idle, afterRequest memStats
	held                       int
}

// connectAgents starts the agents' process, waits until every agent holds
// its initial state and has had one request answered, and measures the
// spoke's memory at each stage.
func connectAgents(ctx context.Context, srv *spoke.Server, cfg childConfig, memProfile string) (*agentsProc, connMemory, error) {
	var mem connMemory
	mem.before = memory()
	if memProfile != "" {
		if err := writeProfile(memProfile+".base", "heap"); err != nil {
			return nil, mem, err
		}
	}
	t0 := time.Now()
	proc, err := startAgents(ctx, cfg)
	if err != nil {
		return nil, mem, err
	}
	if _, err := proc.expect("connected"); err != nil {
		return nil, mem, err
	}
	fmt.Printf("connected %d agents, all initial states received: %v\n", cfg.n, time.Since(t0).Round(time.Millisecond))
	mem.idle = memory()
	mem.held = srv.AgentConnections()
	if memProfile != "" {
		if err := writeProfile(memProfile, "heap"); err != nil {
			return nil, mem, err
		}
	}
	t0 = time.Now()
	if _, err := fmt.Fprintln(proc.in, "request"); err != nil {
		return nil, mem, err
	}
	if _, err := proc.expect("ready"); err != nil {
		return nil, mem, err
	}
	fmt.Printf("one set-status request per agent answered: %v\n", time.Since(t0).Round(time.Millisecond))
	mem.afterRequest = memory()
	return proc, mem, nil
}

// dialLeader connects kv's agent, which lives in this process (one
// connection, measured after the others), and makes kv/0 the leader in
// scope of the relation.
func dialLeader(ctx context.Context, addr, caCert, model string) (*agent, error) {
	kv, err := newDialer([]byte(caCert)).dial(ctx, addr, "machine-"+model+"-0", secretOf(0))
	if err != nil {
		return nil, err
	}
	<-kv.initial
	if err := kv.call(api.AgentEnterScope, api.AgentScopeParams{Unit: "kv/0", RelationID: 0}); err != nil {
		return nil, err
	}
	if err := kv.call(api.AgentClaimLeader, api.AgentLeaderParams{Unit: "kv/0", Duration: 5 * time.Minute}); err != nil {
		return nil, err
	}
	return kv, nil
}

// fanOut has kv's leader commit reps application-bag changes and returns
// every agent's latency over all repetitions, sorted.
func fanOut(proc *agentsProc, kv *agent, n, reps int) ([]time.Duration, error) {
	var all []time.Duration
	for rep := 1; rep <= reps; rep++ {
		if err := proc.arm(rep); err != nil {
			return nil, err
		}
		start := time.Now().UnixNano()
		if err := kv.call(api.AgentCommitHook, api.AgentHookChanges{Unit: "kv/0", Relations: []api.SettingsChange{
			{RelationID: 0, App: true, Set: map[string]string{"rev": strconv.Itoa(rep)}}}}); err != nil {
			return nil, err
		}
		arr, err := proc.arrivals()
		if err != nil {
			return nil, err
		}
		if len(arr) != n {
			return nil, fmt.Errorf("rep %d: %d arrivals for %d agents", rep, len(arr), n)
		}
		lat := make([]time.Duration, n)
		for i, t := range arr {
			lat[i] = time.Duration(t - start)
		}
		slices.Sort(lat)
		all = append(all, lat...)
		fmt.Printf("fan-out rep %d: p50 %v  p99 %v  max %v\n", rep, pct(lat, 50), pct(lat, 99), lat[len(lat)-1])
	}
	slices.Sort(all)
	return all, nil
}

// perConn formats the memory delta between a and b per connection.
func perConn(a, b memStats, n int) string {
	kb := func(x, y uint64) float64 { return (float64(y) - float64(x)) / float64(n) / 1024 }
	return fmt.Sprintf("%.1f KB heap+stacks (%.1f heap, %.1f stacks), %.1f KB RSS (%.1f anonymous), %.1f goroutines",
		kb(a.heap+a.stack, b.heap+b.stack), kb(a.heap, b.heap), kb(a.stack, b.stack),
		float64(b.rss-a.rss)/float64(n)/1024, float64(b.anon-a.anon)/float64(n)/1024,
		float64(b.goroutines-a.goroutines)/float64(n))
}

func writeProfile(path, name string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup(name).WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func pct(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := (len(sorted)*p + 99) / 100
	return sorted[max(0, min(i, len(sorted))-1)].Round(time.Microsecond)
}

func secretOf(i int) string { return fmt.Sprintf("bench-secret-%08d", i) }

type memStats struct {
	heap, stack uint64
	rss, anon   int64 // VmRSS, and its anonymous part (RssAnon: not file-backed pages)
	goroutines  int
}

// memory is this process's live heap, stacks and RSS after a GC that also
// returns freed pages to the OS, so RSS counts what is held, not garbage.
func memory() memStats {
	runtime.GC()
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	st := memStats{heap: ms.HeapAlloc, stack: ms.StackInuse, goroutines: runtime.NumGoroutine()}
	b, _ := os.ReadFile("/proc/self/status")
	for _, line := range strings.Split(string(b), "\n") {
		for key, dst := range map[string]*int64{"VmRSS:": &st.rss, "RssAnon:": &st.anon} {
			if v, ok := strings.CutPrefix(line, key); ok {
				kb, _ := strconv.ParseInt(strings.Fields(v)[0], 10, 64)
				*dst = kb << 10
			}
		}
	}
	return st
}
