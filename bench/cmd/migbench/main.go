// Command migbench measures a model migration through the hub (item 6 of
// issue 27): a private PostgreSQL and, in this process, OpenFGA, the
// development issuer, the hub and two controllers registered with it (east
// and west); a model of -n units on east (one application, each unit on a
// machine of its own, recorded as a manual machine), and one simulated
// machine agent per machine that speaks the minion protocol over the real
// agent websocket. The model is migrated east → west through the hub's API
// (POST /v1/migrations); each repetition migrates a model of its own.
//
// Printed per repetition: the time in each phase (from the migration's
// events), end to end (from the POST to the DONE event), and the pause
// window: from the start of QUIESCE (agents start no hook from then) to the
// moment the last agent holds its first state from west (its model served
// there). Targets: 100 units ≤ 10 s end to end, 1,000 units ≤ 60 s; the
// pause window ≤ the end-to-end time.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/authz"
	"github.com/droverhq/drover/bench/internal/agentsim"
	"github.com/droverhq/drover/bench/internal/hubstack"
	"github.com/droverhq/drover/bench/internal/prof"
	"github.com/droverhq/drover/hub/hubload"
	"github.com/droverhq/drover/internal/gcpolicy"
)

type options struct {
	n, reps, conc int
	keep          bool
	cpuprofile    string
	timeout       time.Duration
}

func main() {
	var o options
	flag.IntVar(&o.n, "n", 100, "units in the migrated model (one machine, and one simulated agent, each)")
	flag.IntVar(&o.reps, "reps", 3, "migrations, each of a model of its own")
	flag.IntVar(&o.conc, "concurrency", 64, "agent dials and setup proposals at once")
	flag.BoolVar(&o.keep, "keep", false, "keep the state directory")
	flag.StringVar(&o.cpuprofile, "cpuprofile", "", "write a CPU profile of the migrations (this process: hub, both controllers, agents) to this file")
	flag.DurationVar(&o.timeout, "timeout", 10*time.Minute, "give up on a migration after this long")
	flag.Parse()
	if o.n < 1 || o.reps < 1 || o.conc < 1 {
		fmt.Fprintln(os.Stderr, "migbench: -n, -reps and -concurrency must be at least 1")
		os.Exit(2)
	}
	// The hub and the controllers run with droverd's GC policy
	// (internal/gcpolicy). GOGC overrides.
	if err := gcpolicy.Apply(); err != nil {
		fmt.Fprintln(os.Stderr, "migbench:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "migbench:", err)
		os.Exit(1)
	}
}

// env is the system under test and the user who migrates.
type env struct {
	hub        *hubstack.Hub
	east, west *hubstack.Spoke
	cl         *api.Client // the hub's API, as an administrator of the organization
}

func run(ctx context.Context, o options) (err error) {
	root, remove, err := hubstack.Root("migbench", o.keep)
	if err != nil {
		return err
	}
	defer remove()
	t0 := time.Now()
	h, err := hubstack.Start(ctx, root, hubstack.Config{})
	if err != nil {
		return err
	}
	defer func() {
		if cerr := h.Close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("shutdown: %w", cerr))
		}
	}()
	e := &env{hub: h}
	if e.east, err = h.StartSpoke(ctx, filepath.Join(root, "east"), "east", nil); err != nil {
		return err
	}
	if e.west, err = h.StartSpoke(ctx, filepath.Join(root, "west"), "west", nil); err != nil {
		return err
	}
	if e.cl, err = adminClient(ctx, h); err != nil {
		return err
	}
	defer e.cl.Close()
	fmt.Printf("migbench: hub, PostgreSQL, OpenFGA, controllers east and west started in %v\n", time.Since(t0).Round(time.Millisecond))
	stopProf, err := prof.StartCPU(o.cpuprofile)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, stopProf()) }()
	var results []result
	for rep := range o.reps {
		r, err := e.migrateOnce(ctx, o, filepath.Join(root, fmt.Sprint("rep", rep)), fmt.Sprintf("mig-%d", rep))
		if err != nil {
			return fmt.Errorf("repetition %d: %w", rep+1, err)
		}
		results = append(results, r)
	}
	printTable(os.Stdout, o.n, results)
	return nil
}

// adminClient is a client of the hub's API as a user who administers the
// organization (so may migrate any model, to any controller).
func adminClient(ctx context.Context, h *hubstack.Hub) (*api.Client, error) {
	l := hubload.New(h.Server)
	id, err := l.User(ctx, h.Issuer, "admin", "admin@example.com", "bench")
	if err != nil {
		return nil, err
	}
	if err := l.Grant(ctx, id, authz.Administrator, authz.OrgObject("bench")); err != nil {
		return nil, err
	}
	sctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := l.Settle(sctx); err != nil {
		return nil, err
	}
	tok, err := l.Token(ctx, id, 24*time.Hour)
	if err != nil {
		return nil, err
	}
	return api.NewClient(api.ClientConfig{Addresses: []string{h.Addr}, CACert: h.CA, Token: tok, Timeout: 2 * time.Minute})
}

// migrateOnce deploys a model of o.n units on east, connects its agents,
// migrates it to west and measures.
func (e *env) migrateOnce(ctx context.Context, o options, dir, name string) (result, error) {
	t0 := time.Now()
	m, err := agentsim.Deploy(ctx, e.cl, e.east, dir, name, o.n, o.conc)
	if err != nil {
		return result{}, err
	}
	deployed := time.Since(t0)
	t1 := time.Now()
	mins, err := connect(ctx, e.east, m, o.conc)
	if err != nil {
		return result{}, err
	}
	defer closeAll(mins)
	fmt.Printf("migbench: %s: %d units deployed and provisioned in %v, %d agents connected in %v\n",
		name, o.n, deployed.Round(time.Millisecond), len(mins), time.Since(t1).Round(time.Millisecond))

	mctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	agents, actx := errgroup.WithContext(mctx)
	for _, mn := range mins {
		agents.Go(func() error { return mn.follow(actx) })
	}
	posted := time.Now()
	mig, err := e.cl.Migrate(mctx, api.MigrateRequest{Model: m.UUID, TargetController: e.west.Name})
	if err != nil {
		cancel()
		_ = agents.Wait()
		return result{}, fmt.Errorf("migrate %s: %w", name, err)
	}
	final, err := waitFinal(mctx, e.cl, mig.ID)
	if err != nil {
		cancel()
		_ = agents.Wait()
		return result{}, err
	}
	observed := time.Since(posted)
	if final.Phase != "DONE" {
		cancel()
		_ = agents.Wait()
		return result{}, fmt.Errorf("migration %s ended %s: %s", mig.ID, final.Phase, final.Failure)
	}
	if err := agents.Wait(); err != nil {
		return result{}, fmt.Errorf("agents: %w", err)
	}
	if got := e.west.Server.AgentConnections(); got < len(mins) {
		return result{}, fmt.Errorf("west serves %d agent streams after the migration, want at least %d", got, len(mins))
	}
	events, err := e.cl.MigrationEvents(ctx, mig.ID)
	if err != nil {
		return result{}, err
	}
	var lastOnTarget time.Time
	lastReport := map[string]time.Time{}
	for _, mn := range mins {
		if mn.onTarget.After(lastOnTarget) {
			lastOnTarget = mn.onTarget
		}
		for p, t := range mn.reportedAt {
			if t.After(lastReport[p]) {
				lastReport[p] = t
			}
		}
	}
	r, err := measure(events, posted, lastOnTarget, lastReport)
	if err != nil {
		return result{}, fmt.Errorf("migration %s: %w", mig.ID, err)
	}
	fmt.Printf("migbench: %s: migration %s DONE in %v, read DONE after %v; %d agents on west\n",
		name, mig.ID, r.endToEnd.Round(time.Millisecond), observed.Round(time.Millisecond), len(mins))
	return r, nil
}

// waitFinal polls the migration until it has ended. The poll interval
// bounds only when the bench notices the end, not the figures (they come
// from the migration's events).
func waitFinal(ctx context.Context, cl *api.Client, id string) (*api.Migration, error) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		m, err := cl.Migration(ctx, id)
		if err != nil {
			return nil, fmt.Errorf("read migration %s: %w", id, err)
		}
		if m.Final() {
			return m, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("migration %s still %s (%s): %w", id, m.Phase, m.Message, ctx.Err())
		case <-tick.C:
		}
	}
}
