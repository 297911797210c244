package application

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/charm"
	"github.com/droverhq/drover/cli/internal/modelcmd"
)

// A bundle deploys in a fixed order, computed up front by planBundle (pure,
// so the order is tested without a controller): every application's charm
// is uploaded and the application deployed — applications placed on
// another application's units after that application — then units placed
// on declared machines or other units are added one by one, then
// applications are exposed, then relations are added.
//
// The API has no add-machine call, so a bundle machine is created by the
// first unit placed on it (as a new machine) and later units placed there
// go to that machine.

type stepKind int

const (
	stepDeploy stepKind = iota
	stepAddUnit
	stepExpose
	stepRelate
)

type bundleStep struct {
	kind stepKind
	app  string
	// stepDeploy: the bundle application (units only when unplaced).
	spec  *charm.BundleApplication
	units int
	// stepAddUnit: where the unit goes.
	place *charm.Placement
	// stepRelate: the two ends.
	a, b string
}

func (s bundleStep) String() string {
	switch s.kind {
	case stepDeploy:
		return fmt.Sprintf("deploy %s (%s, %d units)", s.app, s.spec.Charm, s.units)
	case stepAddUnit:
		return fmt.Sprintf("add unit of %s to %s", s.app, placementText(s.place))
	case stepExpose:
		return "expose " + s.app
	}
	return fmt.Sprintf("relate %s %s", s.a, s.b)
}

func placementText(p *charm.Placement) string {
	if p == nil || p.New {
		return "new machine"
	}
	prefix := ""
	if p.ContainerType != "" {
		prefix = p.ContainerType + ":"
	}
	switch {
	case p.Machine != "":
		return prefix + "machine " + p.Machine
	case p.Unit >= 0:
		return prefix + p.Application + "/" + strconv.Itoa(p.Unit)
	}
	return prefix + p.Application
}

// planBundle orders a validated bundle's steps.
func planBundle(b *charm.Bundle) ([]bundleStep, error) {
	order, err := appOrder(b)
	if err != nil {
		return nil, err
	}
	var steps, units []bundleStep
	for _, name := range order {
		app := b.Applications[name]
		if len(app.Placements) == 0 {
			steps = append(steps, bundleStep{kind: stepDeploy, app: name, spec: app, units: app.NumUnits})
			continue
		}
		steps = append(steps, bundleStep{kind: stepDeploy, app: name, spec: app})
		for i := 0; i < app.NumUnits; i++ {
			var p *charm.Placement
			if i < len(app.Placements) {
				pl := app.Placements[i]
				p = &pl
			}
			units = append(units, bundleStep{kind: stepAddUnit, app: name, place: p})
		}
	}
	// Units placed next to another application's units must follow them.
	sort.SliceStable(units, func(i, j int) bool {
		return rank(order, units[i].app) < rank(order, units[j].app)
	})
	steps = append(steps, units...)
	for _, name := range order {
		if b.Applications[name].Expose {
			steps = append(steps, bundleStep{kind: stepExpose, app: name})
		}
	}
	for _, r := range b.Relations {
		steps = append(steps, bundleStep{kind: stepRelate, a: r.A.String(), b: r.B.String()})
	}
	return steps, nil
}

func rank(order []string, app string) int {
	for i, n := range order {
		if n == app {
			return i
		}
	}
	return len(order)
}

// appOrder sorts applications by name, except that an application placed
// on another's units comes after it; a cycle is an error.
func appOrder(b *charm.Bundle) ([]string, error) {
	names := modelcmd.SortedKeys(b.Applications)
	const (
		unvisited = iota
		visiting
		done
	)
	state := map[string]int{}
	var out []string
	var visit func(string, []string) error
	visit = func(name string, path []string) error {
		switch state[name] {
		case done:
			return nil
		case visiting:
			return fmt.Errorf("bundle placements form a cycle: %s", strings.Join(append(path, name), " -> "))
		}
		state[name] = visiting
		deps := map[string]bool{}
		for _, p := range b.Applications[name].Placements {
			if p.Application != "" {
				deps[p.Application] = true
			}
		}
		for _, d := range modelcmd.SortedKeys(deps) {
			if _, ok := b.Applications[d]; !ok {
				return fmt.Errorf("application %q is placed on unknown application %q", name, d)
			}
			if err := visit(d, append(path, name)); err != nil {
				return err
			}
		}
		state[name] = done
		out = append(out, name)
		return nil
	}
	for _, n := range names {
		if err := visit(n, nil); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// bundleRun executes a plan against a model.
type bundleRun struct {
	a        *Commands
	mc       *modelcmd.ModelConn
	dir      string              // the bundle's directory: resource paths are relative to it
	charms   map[string]string   // local path → uploaded sha256
	machines map[string]string   // bundle machine id → model machine id
	units    map[string][]string // application → its units, in order
	next     map[string]int      // application → next unit for "app" placements
}

func (a *Commands) deployBundle(ctx context.Context, mc *modelcmd.ModelConn, b *charm.Bundle, dir string, overrides map[string]map[string]any) error {
	for _, name := range modelcmd.SortedKeys(b.Applications) {
		app := b.Applications[name]
		if !app.IsLocalCharm() {
			return fmt.Errorf("application %q uses charm %q: drover deploys local charms only (a path starting with ./ or /); there is no charm store yet", name, app.Charm)
		}
	}
	steps, err := planBundle(b)
	if err != nil {
		return err
	}
	r := &bundleRun{a: a, mc: mc, dir: dir, charms: map[string]string{}, machines: map[string]string{},
		units: map[string][]string{}, next: map[string]int{}}
	p := a.NewProgress("Deploying bundle")
	defer p.Done("")
	for _, st := range steps {
		p.Update("- %s", st)
		if err := r.run(ctx, st, overrides[st.app]); err != nil {
			return fmt.Errorf("bundle step %q: %w", st.String(), err)
		}
	}
	used := map[string]bool{}
	for _, id := range modelcmd.SortedKeys(r.machines) {
		used[id] = true
	}
	for _, id := range modelcmd.SortedKeys(b.Machines) {
		if !used[id] {
			fmt.Fprintf(a.Stderr, "WARNING bundle machine %q has no units placed on it and was not created\n", id)
		}
	}
	p.Update("Deploy of bundle completed.")
	return nil
}

func (r *bundleRun) run(ctx context.Context, st bundleStep, override map[string]any) error {
	c := r.mc.Client
	switch st.kind {
	case stepDeploy:
		sha, ok := r.charms[st.spec.Charm]
		if !ok {
			ch, err := r.a.uploadCharm(ctx, c, r.mc.UUID, st.spec.Charm)
			if err != nil {
				return err
			}
			sha = ch.SHA256
			r.charms[st.spec.Charm] = sha
		}
		cfg := map[string]any{}
		for k, v := range st.spec.Options {
			cfg[k] = v
		}
		for k, v := range override {
			cfg[k] = v
		}
		paths, err := bundleResources(st.app, st.spec.Resources, r.dir)
		if err != nil {
			return err
		}
		resources, err := uploadResources(ctx, r.mc, paths)
		if err != nil {
			return err
		}
		res, err := c.Model(r.mc.UUID).Deploy(ctx, api.DeployRequest{Application: st.app, CharmSHA256: sha, NumUnits: st.units,
			Config: cfg, Constraints: st.spec.Constraints, Base: st.spec.Base, Trust: st.spec.Trust,
			Channel: st.spec.Channel, Storage: st.spec.Storage, Resources: resources})
		if err != nil {
			return err
		}
		r.units[st.app] = append(r.units[st.app], res.Units...)
		fmt.Fprintf(r.a.Stdout, "Deployed %q from %s with %d unit(s)\n", st.app, st.spec.Charm, len(res.Units))
	case stepAddUnit:
		to, bundleMachine, err := r.target(st.place)
		if err != nil {
			return err
		}
		req := api.AddUnitsRequest{NumUnits: 1}
		if to != "" {
			req.To = []string{to}
		}
		res, err := c.Model(r.mc.UUID).AddUnits(ctx, st.app, req)
		if err != nil {
			return err
		}
		if bundleMachine != "" && len(res.Machines) == 1 {
			r.machines[bundleMachine] = res.Machines[0]
		}
		r.units[st.app] = append(r.units[st.app], res.Units...)
		fmt.Fprintf(r.a.Stdout, "Added %s on %s\n", strings.Join(res.Units, ", "), placementText(st.place))
	case stepExpose:
		if _, err := c.Model(r.mc.UUID).Expose(ctx, st.app, true); err != nil {
			return err
		}
		fmt.Fprintf(r.a.Stdout, "Exposed %q\n", st.app)
	case stepRelate:
		rel, err := c.Model(r.mc.UUID).Integrate(ctx, st.a, st.b)
		if err != nil {
			return err
		}
		fmt.Fprintf(r.a.Stdout, "Related %s (relation %d)\n", rel.Key, rel.ID)
	}
	return nil
}

// target maps a bundle placement to an API one. For a declared machine not
// created yet it returns "" (a new machine) and the bundle id to record.
func (r *bundleRun) target(p *charm.Placement) (to, newBundleMachine string, err error) {
	if p == nil || p.New {
		return "", "", nil
	}
	prefix := ""
	if p.ContainerType != "" {
		prefix = p.ContainerType + ":"
	}
	if p.Machine != "" {
		id, ok := r.machines[p.Machine]
		if !ok {
			return "", p.Machine, nil
		}
		return prefix + id, "", nil
	}
	units := r.units[p.Application]
	if len(units) == 0 {
		return "", "", fmt.Errorf("application %q has no units to place next to", p.Application)
	}
	if p.Unit >= 0 {
		if p.Unit >= len(units) {
			return "", "", fmt.Errorf("application %q has no unit %d", p.Application, p.Unit)
		}
		return units[p.Unit], "", nil
	}
	i := r.next[p.Application] % len(units)
	r.next[p.Application]++
	return units[i], "", nil
}
