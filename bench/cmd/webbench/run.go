package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/google/uuid"
	"golang.org/x/sync/errgroup"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/authz"
	"github.com/droverhq/drover/bench/internal/agentsim"
	"github.com/droverhq/drover/bench/internal/hubstack"
	"github.com/droverhq/drover/hub/hubload"
)

// Targets of issue 29.
const (
	renderTarget = time.Second
	idleTarget   = 0.5
	jsTarget     = 200 << 10
)

func run(ctx context.Context, o options) (err error) {
	root, remove, err := hubstack.Root("webbench", o.keep)
	if err != nil {
		return err
	}
	defer remove()
	t0 := time.Now()
	h, err := hubstack.Start(ctx, root, hubstack.Config{MaxList: uint32(o.models + 100)})
	if err != nil {
		return err
	}
	defer func() {
		if cerr := h.Close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("shutdown: %w", cerr))
		}
	}()
	east, err := h.StartSpoke(ctx, filepath.Join(root, "east"), "east", nil)
	if err != nil {
		return err
	}
	adminID, token, cl, err := admin(ctx, h)
	if err != nil {
		return err
	}
	defer cl.Close()
	if err := fillIndex(ctx, h, adminID, o.models); err != nil {
		return err
	}
	m, err := agentsim.Deploy(ctx, cl, east, filepath.Join(root, "model"), "big", o.units, o.conc)
	if err != nil {
		return err
	}
	fmt.Printf("webbench: hub, east, %d synthetic models and a %d-unit model ready in %v\n",
		o.models, o.units, time.Since(t0).Round(time.Millisecond))

	b, err := newBrowser(ctx, filepath.Join(root, "chromium"))
	if err != nil {
		return err
	}
	defer b.close()
	hubURL := "https://" + h.Addr
	if err := b.login(hubURL, token); err != nil {
		return err
	}
	var failed []string
	models, err := loads(ctx, b, o.reps, hubURL+"/models", "drover:models-rendered")
	if err != nil {
		return err
	}
	failed = report(failed, fmt.Sprintf("models view, %d models: first meaningful render", o.models+1), models, renderTarget)
	model, err := loads(ctx, b, o.reps, hubURL+"/models/"+m.UUID, "drover:model-rendered")
	if err != nil {
		return err
	}
	failed = report(failed, fmt.Sprintf("model view, %d units: render", o.units), model, renderTarget)

	idle, rate, err := statusLoad(ctx, b, hubURL, cl, east, m, o)
	if err != nil {
		return err
	}
	fmt.Printf("%-58s %6.1f%%  (target ≥ %.0f%%)\n", fmt.Sprintf("main thread idle under %.0f deltas/s", rate), idle*100, idleTarget*100)
	if idle < idleTarget || rate < 0.95*float64(o.rate) {
		failed = append(failed, "idle")
	}
	size, err := jsGzipSize(o.dist)
	if err != nil {
		return err
	}
	fmt.Printf("%-58s %6.1f KB (target ≤ %d KB)\n", "JavaScript shipped (gzip)", float64(size)/1024, jsTarget>>10)
	if size > jsTarget {
		failed = append(failed, "size")
	}
	if len(failed) > 0 {
		return fmt.Errorf("%w: %v", errTargetMissed, failed)
	}
	return nil
}

// admin is an administrator of the organization bench: its identity, a
// session token for the browser, and an API client.
func admin(ctx context.Context, h *hubstack.Hub) (string, string, *api.Client, error) {
	l := hubload.New(h.Server)
	id, err := l.User(ctx, h.Issuer, "admin", "admin@example.com", "bench")
	if err != nil {
		return "", "", nil, err
	}
	if err := l.Grant(ctx, id, authz.Administrator, authz.OrgObject("bench")); err != nil {
		return "", "", nil, err
	}
	sctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := l.Settle(sctx); err != nil {
		return "", "", nil, err
	}
	tok, err := l.Token(ctx, id, 24*time.Hour)
	if err != nil {
		return "", "", nil, err
	}
	cl, err := api.NewClient(api.ClientConfig{Addresses: []string{h.Addr}, CACert: h.CA, Token: tok, Timeout: 2 * time.Minute})
	return id, tok, cl, err
}

// fillIndex adds n synthetic models, owned by owner, on three synthetic
// controllers of three regions.
func fillIndex(ctx context.Context, h *hubstack.Hub, owner string, n int) error {
	l := hubload.New(h.Server)
	ctrls := make([]string, 3)
	for i := range ctrls {
		ctrls[i] = uuid.NewString()
		if err := l.AddController(ctx, ctrls[i], fmt.Sprintf("syn-%d", i), "bench", fmt.Sprintf("region-%d", i)); err != nil {
			return err
		}
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for i := range n {
		g.Go(func() error {
			return l.AddModel(gctx, uuid.NewString(), fmt.Sprintf("m-%04d", i), "bench", owner, ctrls[i%len(ctrls)])
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	sctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	return l.Settle(sctx)
}

// loads loads url reps times and returns the mark's time of each load.
func loads(ctx context.Context, b *browser, reps int, url, mark string) ([]time.Duration, error) {
	out := make([]time.Duration, 0, reps)
	for range reps {
		d, err := b.markAfterLoad(ctx, url, mark)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

// report prints a figure's minimum, median and maximum against its target
// (met when the median is) and adds name to failed when it is missed.
func report(failed []string, name string, ds []time.Duration, target time.Duration) []string {
	s := slices.Clone(ds)
	slices.Sort(s)
	med := s[len(s)/2]
	verdict := "met"
	if med > target {
		verdict, failed = "MISSED", append(failed, name)
	}
	fmt.Printf("%-58s min %v  median %v  max %v  (target ≤ %v: %s)\n", name,
		s[0].Round(time.Millisecond), med.Round(time.Millisecond), s[len(s)-1].Round(time.Millisecond), target, verdict)
	return failed
}

// statusLoad has the model's agents set o.rate workload statuses a second
// for o.load seconds while the model view is open, and returns the share
// of that time the page's main thread was idle, and the rate of statuses
// achieved. It fails unless the page applied the last status set.
func statusLoad(ctx context.Context, b *browser, hubURL string, cl *api.Client, east *hubstack.Spoke, m *agentsim.Model, o options) (idle, rate float64, err error) {
	agents := min(len(m.Machines), o.rate, 50)
	d := agentsim.WSDialer(east.CA)
	conns := make([]*agentsim.Conn, agents)
	defer func() {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
	}()
	for i := range conns {
		c, err := agentsim.Dial(ctx, &d, east.Addr, agentsim.TagOf(m.UUID, m.Machines[i]), agentsim.SecretOf(m.Machines[i]))
		if err != nil {
			return 0, 0, err
		}
		conns[i] = c
		select {
		case <-c.Initial:
		case <-c.Done:
			return 0, 0, fmt.Errorf("agent of machine %s: the controller closed the stream", m.Machines[i])
		case <-ctx.Done():
			return 0, 0, ctx.Err()
		}
	}
	if _, err := b.markAfterLoad(ctx, hubURL+"/models/"+m.UUID, "drover:model-rendered"); err != nil {
		return 0, 0, err
	}
	units := make([]string, agents)
	for i := range units {
		u, err := unitOn(conns[i])
		if err != nil {
			return 0, 0, err
		}
		units[i] = u
	}
	busy0, err := b.taskTime()
	if err != nil {
		return 0, 0, err
	}
	start := time.Now()
	tick := time.NewTicker(time.Second / time.Duration(o.rate))
	defer tick.Stop()
	total := o.rate * o.load
	last := ""
	for n := range total {
		select {
		case <-tick.C:
		case <-ctx.Done():
			return 0, 0, ctx.Err()
		}
		i := n % agents
		last = fmt.Sprintf("load %d", n)
		if err := conns[i].Call(ctx, api.AgentSetStatus, api.AgentStatusParams{Unit: units[i], Kind: api.StatusKindWorkload,
			Status: api.Status{Status: "active", Message: last}}); err != nil {
			return 0, 0, fmt.Errorf("set the status of %s: %w", units[i], err)
		}
	}
	busy1, err := b.taskTime()
	if err != nil {
		return 0, 0, err
	}
	wall := time.Since(start)
	idle = 1 - float64(busy1-busy0)/float64(wall)
	rate = float64(total) / wall.Seconds()
	// The page applied every status: its stream's index reached the
	// model's after the last one.
	fs, err := cl.Model(m.UUID).Status(ctx, api.ReadOptions{Consistent: true})
	if err != nil {
		return 0, 0, err
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for {
		at, err := eval[float64](b, `Number(document.querySelector('[data-testid="conn-state"]')?.dataset.index ?? 0)`)
		if err != nil {
			return 0, 0, err
		}
		if uint64(at) >= fs.Index {
			return idle, rate, nil
		}
		select {
		case <-wctx.Done():
			return 0, 0, fmt.Errorf("the page applied index %d, 10 s after the last status (%q) the model is at %d", uint64(at), last, fs.Index)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// unitOn is the first unit of the machine state the agent holds.
func unitOn(c *agentsim.Conn) (string, error) {
	select {
	case st := <-c.States:
		c.States <- st
		for name := range st.Units {
			return name, nil
		}
		return "", errors.New("a machine holds no unit")
	case <-time.After(10 * time.Second):
		return "", errors.New("no machine state")
	}
}

// jsGzipSize is the gzip size of every JavaScript file of the built app.
func jsGzipSize(dist string) (int, error) {
	var total int
	err := filepath.WalkDir(dist, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(p) != ".js" {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		zw.Write(b)
		zw.Close()
		total += buf.Len()
		return nil
	})
	return total, err
}
