// Command commitbench measures committed writes per second and latency of
// replicated key-value stores at several concurrency levels, so Drover's
// spoke cluster can be compared with etcd on the same machine.
//
//	go build -o bench/bin/droverd ./cmd/droverd
//	cd bench && go build -o bin/etcd go.etcd.io/etcd/server/v3
//	go run ./cmd/commitbench -duration 5s -levels 1,64,256 -targets drover,etcd
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/droverhq/drover/bench/internal/drovercluster"
	"github.com/droverhq/drover/bench/internal/etcdcluster"
	"github.com/droverhq/drover/bench/internal/load"
	"github.com/droverhq/drover/bench/internal/prof"
)

// Constructor starts a target whose files live under dir and returns it with
// a function that stops it.
type Constructor func(ctx context.Context, dir string) (load.Target, func() error, error)

// ErrUnknownTarget means -targets named a target missing from registry.
var ErrUnknownTarget = errors.New("unknown target")

// baseline is the target every other target is compared against.
const baseline = "etcd"

type options struct {
	duration time.Duration
	warmup   time.Duration
	levels   []int
	targets  []string
	keyspace int
	etcdBin  string
	drover   string
	keepDirs bool
	cpuProf  string
}

// registry lists the targets commitbench can run. To add one, add an entry
// here; nothing else changes.
func registry(o options) map[string]Constructor {
	return map[string]Constructor{
		"drover": func(ctx context.Context, dir string) (load.Target, func() error, error) {
			c, err := drovercluster.Start(ctx, drovercluster.Config{Binary: o.drover, Dir: dir, Nodes: 3})
			if err != nil {
				return nil, nil, err
			}
			return c.Target(), c.Stop, nil
		},
		"etcd": func(ctx context.Context, dir string) (load.Target, func() error, error) {
			c, err := etcdcluster.Start(ctx, etcdcluster.Config{Binary: o.etcdBin, Dir: dir, Members: 3})
			if err != nil {
				return nil, nil, err
			}
			return c.Target(), c.Stop, nil
		},
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "commitbench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, out io.Writer) error {
	o, err := parseFlags(args)
	if err != nil {
		return err
	}
	reg := registry(o)
	for _, name := range o.targets {
		if reg[name] == nil {
			return fmt.Errorf("%w %q (have %s)", ErrUnknownTarget, name, strings.Join(slices.Sorted(maps.Keys(reg)), ", "))
		}
	}
	stopProf, err := prof.StartCPU(o.cpuProf)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := stopProf(); cerr != nil {
			fmt.Fprintln(os.Stderr, "commitbench: cpuprofile:", cerr)
		}
	}()
	var results []load.Result
	for _, name := range o.targets {
		rs, err := benchTarget(ctx, o, name, reg[name])
		results = append(results, rs...)
		if err != nil {
			return errors.Join(err, printTable(out, results))
		}
	}
	return printTable(out, results)
}

func parseFlags(args []string) (options, error) {
	fs := flag.NewFlagSet("commitbench", flag.ContinueOnError)
	var o options
	var levels, targets string
	fs.DurationVar(&o.duration, "duration", 5*time.Second, "measured time per concurrency level")
	fs.DurationVar(&o.warmup, "warmup", time.Second, "unmeasured load before each level")
	fs.StringVar(&levels, "levels", "1,64,256", "comma-separated concurrency levels")
	fs.StringVar(&targets, "targets", "etcd", "comma-separated targets to run")
	fs.IntVar(&o.keyspace, "keyspace", 10000, "distinct keys written round-robin")
	fs.StringVar(&o.etcdBin, "etcd", "bin/etcd", "etcd binary (go build -o bin/etcd go.etcd.io/etcd/server/v3)")
	fs.StringVar(&o.drover, "droverd", "bin/droverd", "droverd binary (cd .. && go build -o bench/bin/droverd ./cmd/droverd)")
	fs.BoolVar(&o.keepDirs, "keep", false, "keep the targets' data directories and logs")
	fs.StringVar(&o.cpuProf, "cpuprofile", "", "write a CPU profile of this process (the benchmark client) to this file")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	for _, f := range strings.Split(levels, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return o, fmt.Errorf("bad -levels entry %q", f)
		}
		o.levels = append(o.levels, n)
		o.keyspace = max(o.keyspace, n)
	}
	for _, f := range strings.Split(targets, ",") {
		if f = strings.TrimSpace(f); f != "" {
			o.targets = append(o.targets, f)
		}
	}
	return o, nil
}

// benchTarget starts one target, runs every level against it and stops it.
func benchTarget(ctx context.Context, o options, name string, construct Constructor) (_ []load.Result, err error) {
	dir, err := os.MkdirTemp("", "commitbench-"+name+"-")
	if err != nil {
		return nil, err
	}
	defer func() {
		if o.keepDirs {
			fmt.Fprintf(os.Stderr, "%s: files kept in %s\n", name, dir)
			return
		}
		err = errors.Join(err, os.RemoveAll(dir))
	}()
	startCtx, cancel := context.WithTimeout(ctx, time.Minute)
	target, stopTarget, err := construct(startCtx, dir)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	defer func() { err = errors.Join(err, stopTarget()) }()

	var results []load.Result
	for _, level := range o.levels {
		r, err := load.Run(ctx, target, load.Config{
			Concurrency: level, Duration: o.duration, Warmup: o.warmup, Keyspace: o.keyspace,
		})
		if err != nil {
			return results, err
		}
		r.Target = name
		if r.Errors > 0 {
			fmt.Fprintf(os.Stderr, "%s c=%d: %d errors, first: %v\n", name, level, r.Errors, r.FirstError)
		}
		results = append(results, r)
	}
	return results, nil
}

// printTable prints one row per target and level. When targets other than
// the baseline ran, a last column gives their throughput relative to the
// baseline at the same level (drover/etcd).
func printTable(out io.Writer, results []load.Result) error {
	base := map[int]float64{}
	compare := false
	for _, r := range results {
		if r.Target == baseline {
			base[r.Concurrency] = r.CommitsPerSec
		} else {
			compare = true
		}
	}
	compare = compare && len(base) > 0
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	header := "target\tconcurrency\tcommits/s\tp50\tp99\tmax\terrors\t"
	if compare {
		header += "vs " + baseline + "\t"
	}
	fmt.Fprintln(tw, header)
	for _, r := range results {
		fmt.Fprintf(tw, "%s\t%d\t%.0f\t%s\t%s\t%s\t%d\t", r.Target, r.Concurrency, r.CommitsPerSec,
			round(r.P50), round(r.P99), round(r.Max), r.Errors)
		if compare {
			ratio := "-"
			if b := base[r.Concurrency]; r.Target != baseline && b > 0 {
				ratio = fmt.Sprintf("%.2fx", r.CommitsPerSec/b)
			}
			fmt.Fprintf(tw, "%s\t", ratio)
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

func round(d time.Duration) time.Duration {
	if d >= 10*time.Millisecond {
		return d.Round(100 * time.Microsecond)
	}
	return d.Round(time.Microsecond)
}
