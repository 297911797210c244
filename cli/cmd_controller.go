package cli

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/spf13/cobra"
)

func (a *App) controllersCmd() *cobra.Command {
	var format formatOpt
	cmd := &cobra.Command{
		Use:     "controllers",
		Aliases: []string{"list-controllers"},
		Short:   "List the controllers this client knows",
		Long: `Lists the controllers in the client store. The current one is marked with *.
Each controller is asked for its nodes and version; an unreachable one shows
what was last seen.`,
		Example: "  drover controllers\n  drover controllers --format json",
		Args:    exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := format.check(); err != nil {
				return err
			}
			return a.controllers(cmd.Context(), format.value)
		},
	}
	format.add(cmd, "tabular", "tabular", "json", "yaml")
	return cmd
}

type controllerListEntry struct {
	Name         string `json:"-"`
	Current      bool   `json:"current,omitempty"`
	CurrentModel string `json:"current-model,omitempty"`
	User         string `json:"user"`
	Access       string `json:"access,omitempty"`
	Nodes        int    `json:"controller-nodes"`
	Voters       int    `json:"voters"`
	Version      string `json:"agent-version,omitempty"`
	Reachable    bool   `json:"reachable"`
	Local        bool   `json:"local"`
	// Behind are the controllers registered with a hub, as it lists them
	// (--format json and yaml; the table lists them below it).
	Behind []map[string]any `json:"controllers-behind,omitempty"`
}

func (a *App) controllers(ctx context.Context, format string) error {
	s, err := a.store.Load()
	if err != nil {
		return err
	}
	entries := map[string]*controllerListEntry{}
	current, _ := a.currentController(s)
	for _, name := range s.ControllerNames() {
		d := s.Controllers[name]
		e := &controllerListEntry{Name: name, Current: name == current, Nodes: d.NodeCount, Voters: d.NodeCount,
			Version: d.Version, Local: d.DataDir != "", CurrentModel: a.currentModel(s, name)}
		if acct := s.Accounts[name]; acct != nil {
			e.User, e.Access = acct.User, acct.Access
		}
		if d.Hub {
			e.Reachable, e.Version = true, "hub"
			if c, err := newConn(name, d, s.Accounts[name]); err == nil {
				if info, err := hubInfo(ctx, c); err == nil {
					e.Version = info.Version
				}
				c.client.Close()
				if format != "tabular" {
					e.Behind, _ = a.hubControllerList(ctx, name) // unreachable: none
				}
			}
			entries[name] = e
			continue
		}
		if c, err := newConn(name, d, s.Accounts[name]); err == nil {
			cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			if info, err := c.client.ControllerInfo(cctx); err == nil {
				e.Reachable, e.Version, e.Nodes, e.Voters = true, info.Version, len(info.Nodes), 0
				for _, n := range info.Nodes {
					if n.Voter {
						e.Voters++
					}
				}
				a.cacheControllerInfo(name, info)
			}
			cancel()
			c.client.Close()
		}
		entries[name] = e
	}
	if format != "tabular" {
		return writeFormatted(a.Stdout, format, map[string]any{"controllers": entries, "current-controller": current})
	}
	if len(entries) == 0 {
		fmt.Fprintln(a.Stderr, "No controllers registered. Run 'drover bootstrap' to create one.")
		return nil
	}
	t := &table{color: a.Terminal}
	t.row("Controller", "Model", "User", "Access", "Nodes", "HA", "Version")
	for _, name := range sortedKeys(entries) {
		e := entries[name]
		n := name
		if e.Current {
			n += "*"
		}
		model := e.CurrentModel
		if model == "" {
			model = "-"
		}
		ha := "none"
		if e.Voters > 1 {
			ha = strconv.Itoa(e.Voters)
		}
		nodes := cell{text: strconv.Itoa(e.Nodes)}
		switch {
		case !e.Reachable:
			nodes = colored("unreachable", colorRed)
		case s.Controllers[name].Hub: // its controllers are listed below it
			nodes, ha = cell{text: "-"}, "-"
		}
		t.row(n, model, e.User, e.Access, nodes, ha, e.Version)
	}
	if err := t.write(a.Stdout); err != nil {
		return err
	}
	for _, name := range sortedKeys(entries) {
		if d := s.Controllers[name]; d.Hub {
			fmt.Fprintf(a.Stdout, "\nControllers behind hub %s:\n", name)
			if err := a.hubControllers(ctx, name); err != nil {
				fmt.Fprintf(a.Stdout, "  (unreachable: %v)\n", err)
			}
		}
	}
	return nil
}

// cacheControllerInfo keeps the addresses, version and node count fresh.
func (a *App) cacheControllerInfo(name string, info *api.ControllerInfo) {
	_ = a.store.Update(func(s *State) error { // a cache: failing to save it changes nothing
		d := s.Controllers[name]
		if d == nil {
			return nil
		}
		if len(info.APIAddresses) > 0 {
			d.APIAddresses = info.APIAddresses
		}
		d.Version, d.NodeCount = info.Version, len(info.Nodes)
		return nil
	})
}

func (a *App) showControllerCmd() *cobra.Command {
	var format formatOpt
	cmd := &cobra.Command{
		Use:   "show-controller [NAME]",
		Short: "Show a controller's details and every node",
		Long: `Shows a controller: its UUID, API addresses, version, every controller node
with its API and raft address, whether it votes and whether it is the raft
leader, and the models the client knows on it. At a hub: your access there
and the controllers behind it; NAME may also be one of those ('drover
controllers' lists them), shown as the hub knows it (region, cloud, health,
addresses).`,
		Example: "  drover show-controller\n  drover show-controller local --format json\n  drover show-controller west   # behind the current hub",
		Args:    rangeArgs(0, 1, "at most a controller name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := format.check(); err != nil {
				return err
			}
			name := ""
			if len(args) == 1 {
				name = args[0]
			}
			return a.showController(cmd.Context(), name, format.value)
		},
	}
	format.add(cmd, "yaml", "yaml", "json")
	return cmd
}

type nodeView struct {
	APIAddress   string `json:"api-address"`
	RaftAddress  string `json:"raft-address"`
	Voter        bool   `json:"voter"`
	Leader       bool   `json:"leader"`
	AppliedIndex uint64 `json:"applied-index,omitempty"`
}

func (a *App) showController(ctx context.Context, name, format string) error {
	c, err := a.dial(name)
	if err != nil {
		if shown, herr := a.showBehindHub(ctx, name, format); shown || herr != nil {
			return herr
		}
		return err
	}
	defer c.client.Close()
	if c.details.Hub {
		return a.showHub(ctx, c, format)
	}
	info, err := c.client.ControllerInfo(ctx)
	if err != nil {
		return err
	}
	a.cacheControllerInfo(c.name, info)
	nodes := map[string]nodeView{}
	for _, n := range info.Nodes {
		nodes[n.ID] = nodeView{APIAddress: n.APIAddress, RaftAddress: n.RaftAddress, Voter: n.Voter, Leader: n.Leader, AppliedIndex: n.AppliedIndex}
	}
	details := map[string]any{
		"uuid": info.UUID, "controller-name": info.Name, "api-endpoints": info.APIAddresses,
		"agent-version": info.Version, "ca-cert": info.CACert,
	}
	if c.details.DataDir != "" {
		details["local-data-dir"] = c.details.DataDir
	}
	view := map[string]any{"details": details, "controller-nodes": nodes,
		"account": map[string]string{"user": c.account.User, "access": c.account.Access}}
	a.addModelsView(c.name, view)
	return writeFormatted(a.Stdout, format, map[string]any{c.name: view})
}

// showHub is show-controller for a hub: where it is, who the caller is
// there, and the controllers behind it that the caller may see, each with
// its region, cloud and health.
func (a *App) showHub(ctx context.Context, c *conn, format string) error {
	who, err := c.client.WhoAmI(ctx)
	if err != nil {
		return err
	}
	ctls, err := hubControllerList(ctx, c)
	if err != nil {
		return err
	}
	behind := map[string]any{}
	for _, ctl := range ctls {
		name, _ := ctl["name"].(string)
		delete(ctl, "name")
		behind[name] = ctl
	}
	details := map[string]any{"hub": true, "api-endpoints": c.details.APIAddresses, "ca-cert": c.details.CACert}
	if info, err := hubInfo(ctx, c); err == nil {
		details["agent-version"], details["url"] = info.Version, info.URL
	}
	view := map[string]any{
		"details":     details,
		"controllers": behind,
		"account":     map[string]string{"user": who.User, "access": who.Access},
	}
	a.addModelsView(c.name, view)
	return writeFormatted(a.Stdout, format, map[string]any{c.name: view})
}

// showBehindHub shows a controller behind the current hub, by its name
// there ('drover controllers' lists them under the hub): shown is false
// when the current controller is not a hub or has no such controller.
func (a *App) showBehindHub(ctx context.Context, name, format string) (shown bool, err error) {
	s, err := a.store.Load()
	if err != nil || name == "" || s.CurrentController == "" || s.Controllers[s.CurrentController] == nil ||
		!s.Controllers[s.CurrentController].Hub {
		return false, nil
	}
	c, err := a.dial(s.CurrentController)
	if err != nil {
		return false, nil
	}
	defer c.client.Close()
	var ctl map[string]any
	err = c.client.Call(ctx, http.MethodGet, "/v1/controllers/"+url.PathEscape(name), nil, nil, &ctl)
	if api.CodeOf(err) == api.CodeNotFound {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	delete(ctl, "name")
	view := map[string]any{"hub": c.name, "details": ctl}
	return true, writeFormatted(a.Stdout, format, map[string]any{name: view})
}

// addModelsView adds the models this client knows on ctl, and its current
// one, to a show-controller view.
func (a *App) addModelsView(ctl string, view map[string]any) {
	s, err := a.store.Load()
	if err != nil {
		return
	}
	if cm := s.Models[ctl]; cm != nil {
		view["models"] = cm.Models
	}
	if m := a.currentModel(s, ctl); m != "" {
		view["current-model"] = m
	}
}

func (a *App) switchCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "switch [[CONTROLLER:]MODEL | CONTROLLER]",
		Short: "Show or change the current controller and model",
		Long: `With no argument, prints the current controller:model. With an argument,
makes it current: "ctl:model", "model" on the current controller, or a
controller name (its last current model stays selected).`,
		Example: "  drover switch\n  drover switch demo\n  drover switch local:demo\n  drover switch lab",
		Args:    rangeArgs(0, 1, "at most one [controller:]model"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return a.printCurrent()
			}
			return a.switchTo(cmd.Context(), args[0])
		},
	}
}

func (a *App) printCurrent() error {
	s, err := a.store.Load()
	if err != nil {
		return err
	}
	ctl, _ := a.currentController(s)
	if ctl == "" {
		return fmt.Errorf("no current controller; run 'drover bootstrap' or 'drover switch CONTROLLER'")
	}
	model := a.currentModel(s, ctl)
	if model == "" {
		fmt.Fprintln(a.Stdout, ctl)
		return nil
	}
	fmt.Fprintf(a.Stdout, "%s:%s\n", ctl, model)
	return nil
}

func (a *App) switchTo(ctx context.Context, target string) error {
	for _, v := range []struct{ name, what string }{{envModel, "model"}, {envController, "controller"}} {
		if set := a.Getenv(v.name); set != "" {
			return fmt.Errorf("cannot switch when %s is overriding the %s (set to %q)", v.name, v.what, set)
		}
	}
	s, err := a.store.Load()
	if err != nil {
		return err
	}
	ctl, model, hasColon := "", target, false
	if c, m, ok := splitModelRefColon(target); ok {
		ctl, model, hasColon = c, m, true
	} else if _, isCtl := s.Controllers[target]; isCtl {
		ctl, model = target, ""
	}
	if ctl == "" && !hasColon {
		ctl = s.CurrentController
	}
	if ctl, err = a.controllerName(s, ctl); err != nil {
		return err
	}
	from := s.CurrentController
	if cm := s.Models[from]; cm != nil && cm.CurrentModel != "" {
		from += ":" + cm.CurrentModel
	}
	if model != "" {
		c, err := newConn(ctl, s.Controllers[ctl], s.Accounts[ctl])
		if err != nil {
			return err
		}
		defer c.client.Close()
		m, err := a.findModel(ctx, c, model)
		if err != nil {
			return err
		}
		if err := a.rememberModel(ctl, c.account.User, *m, true); err != nil {
			return err
		}
		model = modelRef(*m, c.account.User)
	}
	if err := a.store.Update(func(s *State) error { s.CurrentController = ctl; return nil }); err != nil {
		return err
	}
	to := ctl
	if model == "" {
		if cm := s.Models[ctl]; cm != nil && cm.CurrentModel != "" {
			to += ":" + cm.CurrentModel
		}
	} else {
		to += ":" + model
	}
	if from == "" {
		from = "(none)"
	}
	fmt.Fprintf(a.Stderr, "%s -> %s\n", from, to)
	return nil
}

func splitModelRefColon(ref string) (string, string, bool) {
	c, m := splitModelRef(ref)
	return c, m, c != "" || (len(ref) > 0 && ref[0] == ':')
}

func (a *App) enableHACmd() *cobra.Command {
	var ctl controllerOpt
	var n int
	cmd := &cobra.Command{
		Use:   "enable-ha",
		Short: "Grow the controller to 3, 5 or 7 voting nodes",
		Long: `Makes the controller highly available: the controller starts new nodes
(beside a locally bootstrapped node's data dir) and waits until every one
votes in the raft cluster. The count can only grow.`,
		Example: "  drover enable-ha\n  drover enable-ha -n 5 -c lab",
		Args:    exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if n != 3 && n != 5 && n != 7 {
				return usagef("-n %d: the number of controller nodes must be 3, 5 or 7", n)
			}
			return a.enableHA(cmd.Context(), ctl.name, n)
		},
	}
	ctl.add(cmd)
	cmd.Flags().IntVarP(&n, "num-controllers", "n", 3, "number of voting controller nodes (3, 5 or 7)")
	return cmd
}

func (a *App) enableHA(ctx context.Context, name string, n int) error {
	c, err := a.controllerOnly(name, "enable-ha")
	if err != nil {
		return err
	}
	defer c.client.Close()
	p := a.newProgress(fmt.Sprintf("Adding controller nodes to %q until %d vote", c.name, n))
	info, err := c.client.EnableHA(ctx, n)
	if err != nil {
		p.Done("")
		return err
	}
	a.cacheControllerInfo(c.name, info)
	p.Done("")
	t := &table{color: a.Terminal}
	t.row("Node", "API address", "Voter", "Leader")
	for _, nd := range info.Nodes {
		leader := ""
		if nd.Leader {
			leader = "*"
		}
		t.row(nd.ID, nd.APIAddress, strconv.FormatBool(nd.Voter), leader)
	}
	if err := t.write(a.Stdout); err != nil {
		return err
	}
	fmt.Fprintf(a.Stderr, "Controller %q now has %d nodes.\n", c.name, len(info.Nodes))
	return nil
}

func (a *App) whoamiCmd() *cobra.Command {
	var ctl controllerOpt
	var format formatOpt
	cmd := &cobra.Command{
		Use:     "whoami",
		Short:   "Show the current controller, model and user",
		Example: "  drover whoami",
		Args:    exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := format.check(); err != nil {
				return err
			}
			c, err := a.dial(ctl.name)
			if err != nil {
				return err
			}
			defer c.client.Close()
			who, err := c.client.WhoAmI(cmd.Context())
			if err != nil {
				return err
			}
			s, err := a.store.Load()
			if err != nil {
				return err
			}
			model := a.currentModel(s, c.name)
			if format.value != "tabular" {
				return writeFormatted(a.Stdout, format.value, map[string]string{"controller": c.name, "model": model, "user": who.User, "access": who.Access})
			}
			if model == "" {
				model = "-"
			}
			fmt.Fprintf(a.Stdout, "Controller:  %s\nModel:       %s\nUser:        %s\nAccess:      %s\n", c.name, model, who.User, who.Access)
			return nil
		},
	}
	ctl.add(cmd)
	format.add(cmd, "tabular", "tabular", "json", "yaml")
	return cmd
}
