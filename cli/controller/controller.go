package controller

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/cli/internal/clientstore"
	"github.com/droverhq/drover/cli/internal/modelcmd"
)

// ControllersCmd is 'drover controllers'.
func (a *Commands) ControllersCmd() *cobra.Command {
	var format modelcmd.FormatOpt
	cmd := &cobra.Command{
		Use:     "controllers",
		Aliases: []string{"list-controllers"},
		Short:   "List the controllers this client knows",
		Long: `Lists the controllers in the client store. The current one is marked with *.
Each controller is asked for its nodes and version; an unreachable one shows
what was last seen.`,
		Example: "  drover controllers\n  drover controllers --format json",
		Args:    modelcmd.ExactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := format.Check(); err != nil {
				return err
			}
			return a.controllers(cmd.Context(), format.Value)
		},
	}
	format.Add(cmd, "tabular", "tabular", "json", "yaml")
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
	// Cloud and Region are where the controller runs, and ModelCount the
	// models the client knows on it, as Juju's controllers lists them.
	Cloud      string `json:"cloud,omitempty"`
	Region     string `json:"region,omitempty"`
	ModelCount int    `json:"model-count"`
	Reachable  bool   `json:"reachable"`
	Local      bool   `json:"local"`
	// Behind are the controllers registered with a hub, as it lists them
	// (--format json and yaml; the table lists them below it).
	Behind []map[string]any `json:"controllers-behind,omitempty"`
}

func (a *Commands) controllers(ctx context.Context, format string) error {
	s, err := a.Store.Load()
	if err != nil {
		return err
	}
	entries := map[string]*controllerListEntry{}
	current, _ := a.CurrentController(s)
	for _, name := range s.ControllerNames() {
		entries[name] = a.controllerEntry(ctx, s, name, current, format != "tabular")
	}
	if format != "tabular" {
		return modelcmd.WriteFormatted(a.Stdout, format, map[string]any{"controllers": entries, "current-controller": current})
	}
	if len(entries) == 0 {
		fmt.Fprintln(a.Stderr, "No controllers registered. Run 'drover bootstrap' to create one.")
		return nil
	}
	return a.writeControllers(ctx, s, entries)
}

// controllerEntry is controller name's line: what the store knows, then
// what the controller (or hub) says, within 3 s; behind lists a hub's
// controllers too.
func (a *Commands) controllerEntry(ctx context.Context, s *clientstore.State, name, current string, behind bool) *controllerListEntry {
	d := s.Controllers[name]
	e := &controllerListEntry{Name: name, Current: name == current, Nodes: d.NodeCount, Voters: d.NodeCount,
		Version: d.Version, Local: d.DataDir != "", CurrentModel: a.CurrentModel(s, name)}
	if ms := s.Models[name]; ms != nil {
		e.ModelCount = len(ms.Models)
	}
	if acct := s.Accounts[name]; acct != nil {
		e.User, e.Access = acct.User, acct.Access
	}
	if d.Hub {
		e.Reachable, e.Version = true, "hub"
		if c, err := modelcmd.NewConn(name, d, s.Accounts[name]); err == nil {
			if info, err := modelcmd.HubInfo(ctx, c); err == nil {
				e.Version = info.Version
			}
			c.Client.Close()
			if behind {
				e.Behind, _ = a.HubControllerList(ctx, name) // unreachable: none
			}
		}
		return e
	}
	if c, err := modelcmd.NewConn(name, d, s.Accounts[name]); err == nil {
		cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		if info, err := c.Client.ControllerInfo(cctx); err == nil {
			e.Reachable, e.Version, e.Nodes, e.Voters = true, info.Version, len(info.Nodes), 0
			e.Cloud, e.Region = cmp.Or(info.Cloud, "localhost"), info.Region
			for _, n := range info.Nodes {
				if n.Voter {
					e.Voters++
				}
			}
			a.cacheControllerInfo(name, info)
		}
		cancel()
		c.Client.Close()
	}
	return e
}

// writeControllers is the controllers table, then each hub's controllers.
func (a *Commands) writeControllers(ctx context.Context, s *clientstore.State, entries map[string]*controllerListEntry) error {
	t := &modelcmd.Table{Color: a.Terminal}
	t.Row("Controller", "Model", "User", "Access", "Cloud/Region", "Models", "Nodes", "HA", "Version")
	for _, name := range modelcmd.SortedKeys(entries) {
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
		nodes := modelcmd.Cell{Text: strconv.Itoa(e.Nodes)}
		switch {
		case !e.Reachable:
			nodes = modelcmd.Colored("unreachable", modelcmd.ColorRed)
		case s.Controllers[name].Hub: // its controllers are listed below it
			nodes, ha = modelcmd.Cell{Text: "-"}, "-"
		}
		t.Row(n, model, e.User, e.Access, modelcmd.OrDash(strings.Trim(e.Cloud+"/"+e.Region, "/")), e.ModelCount, nodes, ha, e.Version)
	}
	if err := t.Write(a.Stdout); err != nil {
		return err
	}
	for _, name := range modelcmd.SortedKeys(entries) {
		if d := s.Controllers[name]; d.Hub {
			fmt.Fprintf(a.Stdout, "\nControllers behind hub %s:\n", name)
			if err := a.WriteHubControllers(ctx, name); err != nil {
				fmt.Fprintf(a.Stdout, "  (unreachable: %v)\n", err)
			}
		}
	}
	return nil
}

// cacheControllerInfo keeps the addresses, version and node count fresh.
func (a *Commands) cacheControllerInfo(name string, info *api.ControllerInfo) {
	_ = a.Store.Update(func(s *clientstore.State) error { // a cache: failing to save it changes nothing
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

// ShowControllerCmd is 'drover show-controller'.
func (a *Commands) ShowControllerCmd() *cobra.Command {
	var format modelcmd.FormatOpt
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
		Args:    modelcmd.RangeArgs(0, 1, "at most a controller name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := format.Check(); err != nil {
				return err
			}
			name := ""
			if len(args) == 1 {
				name = args[0]
			}
			return a.showController(cmd.Context(), name, format.Value)
		},
	}
	format.Add(cmd, "yaml", "yaml", "json")
	return cmd
}

type nodeView struct {
	APIAddress  string `json:"api-address"`
	RaftAddress string `json:"raft-address"`
	Voter       bool   `json:"voter"`
	Leader      bool   `json:"leader"`
	// AppliedIndex is the last raft index the node applied and Lag how
	// far behind the leader's that is; Unreachable: the node did not
	// answer (neither is known).
	AppliedIndex uint64 `json:"applied-index"`
	Lag          uint64 `json:"lag"`
	Unreachable  bool   `json:"unreachable,omitempty"`
}

func (a *Commands) showController(ctx context.Context, name, format string) error {
	c, err := a.Dial(name)
	if err != nil {
		if shown, herr := a.showBehindHub(ctx, name, format); shown || herr != nil {
			return herr
		}
		return err
	}
	defer c.Client.Close()
	if c.Details.Hub {
		return a.showHub(ctx, c, format)
	}
	info, err := c.Client.ControllerInfo(ctx)
	if err != nil {
		return err
	}
	a.cacheControllerInfo(c.Name, info)
	nodes := map[string]nodeView{}
	for _, n := range info.Nodes {
		nodes[n.ID] = nodeView{APIAddress: n.APIAddress, RaftAddress: n.RaftAddress, Voter: n.Voter, Leader: n.Leader,
			AppliedIndex: n.AppliedIndex, Lag: n.Lag, Unreachable: n.Unreachable}
	}
	details := map[string]any{
		"uuid": info.UUID, "controller-name": info.Name, "api-endpoints": info.APIAddresses,
		"agent-version": info.Version, "ca-cert": info.CACert,
	}
	if c.Details.DataDir != "" {
		details["local-data-dir"] = c.Details.DataDir
	}
	view := map[string]any{"details": details, "controller-nodes": nodes,
		"account": map[string]string{"user": c.Account.User, "access": c.Account.Access}}
	a.addModelsView(c.Name, view)
	return modelcmd.WriteFormatted(a.Stdout, format, map[string]any{c.Name: view})
}

// showHub is show-controller for a hub: where it is, who the caller is
// there, and the controllers behind it that the caller may see, each with
// its region, cloud and health.
func (a *Commands) showHub(ctx context.Context, c *modelcmd.Conn, format string) error {
	who, err := c.Client.WhoAmI(ctx)
	if err != nil {
		return err
	}
	ctls, err := modelcmd.ControllersBehind(ctx, c)
	if err != nil {
		return err
	}
	behind := map[string]any{}
	for _, ctl := range ctls {
		name, _ := ctl["name"].(string)
		delete(ctl, "name")
		behind[name] = ctl
	}
	details := map[string]any{"hub": true, "api-endpoints": c.Details.APIAddresses, "ca-cert": c.Details.CACert}
	if info, err := modelcmd.HubInfo(ctx, c); err == nil {
		details["agent-version"], details["url"] = info.Version, info.URL
	}
	view := map[string]any{
		"details":     details,
		"controllers": behind,
		"account":     map[string]string{"user": who.User, "access": who.Access},
	}
	a.addModelsView(c.Name, view)
	return modelcmd.WriteFormatted(a.Stdout, format, map[string]any{c.Name: view})
}

// showBehindHub shows a controller behind the current hub, by its name
// there ('drover controllers' lists them under the hub): shown is false
// when the current controller is not a hub or has no such controller.
func (a *Commands) showBehindHub(ctx context.Context, name, format string) (shown bool, err error) {
	s, err := a.Store.Load()
	if err != nil || name == "" || s.CurrentController == "" || s.Controllers[s.CurrentController] == nil ||
		!s.Controllers[s.CurrentController].Hub {
		return false, nil
	}
	c, err := a.Dial(s.CurrentController)
	if err != nil {
		return false, nil
	}
	defer c.Client.Close()
	var ctl map[string]any
	err = c.Client.Call(ctx, http.MethodGet, "/v1/controllers/"+url.PathEscape(name), nil, nil, &ctl)
	if api.CodeOf(err) == api.CodeNotFound {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	delete(ctl, "name")
	view := map[string]any{"hub": c.Name, "details": ctl}
	return true, modelcmd.WriteFormatted(a.Stdout, format, map[string]any{name: view})
}

// addModelsView adds the models this client knows on ctl, and its current
// one, to a show-controller view.
func (a *Commands) addModelsView(ctl string, view map[string]any) {
	s, err := a.Store.Load()
	if err != nil {
		return
	}
	if cm := s.Models[ctl]; cm != nil {
		view["models"] = cm.Models
	}
	if m := a.CurrentModel(s, ctl); m != "" {
		view["current-model"] = m
	}
}

// SwitchCmd is 'drover switch'.
func (a *Commands) SwitchCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "switch [[CONTROLLER:]MODEL | CONTROLLER]",
		Short: "Show or change the current controller and model",
		Long: `With no argument, prints the current controller:model. With an argument,
makes it current: "ctl:model", "model" on the current controller, or a
controller name (its last current model stays selected).`,
		Example: "  drover switch\n  drover switch demo\n  drover switch local:demo\n  drover switch lab",
		Args:    modelcmd.RangeArgs(0, 1, "at most one [controller:]model"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return a.printCurrent()
			}
			return a.switchTo(cmd.Context(), args[0])
		},
	}
}

func (a *Commands) printCurrent() error {
	s, err := a.Store.Load()
	if err != nil {
		return err
	}
	ctl, _ := a.CurrentController(s)
	if ctl == "" {
		return fmt.Errorf("no current controller; run 'drover bootstrap' or 'drover switch CONTROLLER'")
	}
	model := a.CurrentModel(s, ctl)
	if model == "" {
		fmt.Fprintln(a.Stdout, ctl)
		return nil
	}
	fmt.Fprintf(a.Stdout, "%s:%s\n", ctl, model)
	return nil
}

func (a *Commands) switchTo(ctx context.Context, target string) error {
	for _, v := range []struct{ name, what string }{{modelcmd.EnvModel, "model"}, {modelcmd.EnvController, "controller"}} {
		if set := a.Getenv(v.name); set != "" {
			return fmt.Errorf("cannot switch when %s is overriding the %s (set to %q)", v.name, v.what, set)
		}
	}
	s, err := a.Store.Load()
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
	if ctl, err = a.ControllerName(s, ctl); err != nil {
		return err
	}
	from := s.CurrentController
	if cm := s.Models[from]; cm != nil && cm.CurrentModel != "" {
		from += ":" + cm.CurrentModel
	}
	if model != "" {
		c, err := modelcmd.NewConn(ctl, s.Controllers[ctl], s.Accounts[ctl])
		if err != nil {
			return err
		}
		defer c.Client.Close()
		m, err := a.FindModel(ctx, c, model)
		if err != nil {
			return err
		}
		if err := a.RememberModel(ctl, c.Account.User, *m, true); err != nil {
			return err
		}
		model = modelcmd.ModelRef(*m, c.Account.User)
	}
	if err := a.Store.Update(func(s *clientstore.State) error { s.CurrentController = ctl; return nil }); err != nil {
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
	c, m := modelcmd.SplitModelRef(ref)
	return c, m, c != "" || (len(ref) > 0 && ref[0] == ':')
}

// EnableHACmd is 'drover enable-ha'.
func (a *Commands) EnableHACmd() *cobra.Command {
	var ctl modelcmd.ControllerOpt
	var n int
	cmd := &cobra.Command{
		Use:   "enable-ha",
		Short: "Grow the controller to 3, 5 or 7 voting nodes",
		Long: `Makes the controller highly available: the controller starts new nodes
(beside a locally bootstrapped node's data dir) and waits until every one
votes in the raft cluster and has caught up with the leader, so that every
node serves reads at once. It prints each node's applied raft index and
its lag behind the leader. The count can only grow.`,
		Example: "  drover enable-ha\n  drover enable-ha -n 5 -c lab",
		Args:    modelcmd.ExactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if n != 3 && n != 5 && n != 7 {
				return modelcmd.Usagef("-n %d: the number of controller nodes must be 3, 5 or 7", n)
			}
			return a.enableHA(cmd.Context(), ctl.Name, n)
		},
	}
	ctl.Add(cmd)
	cmd.Flags().IntVarP(&n, "num-controllers", "n", 3, "number of voting controller nodes (3, 5 or 7)")
	return cmd
}

func (a *Commands) enableHA(ctx context.Context, name string, n int) error {
	c, err := a.controllerOnly(name, "enable-ha")
	if err != nil {
		return err
	}
	defer c.Client.Close()
	p := a.NewProgress(fmt.Sprintf("Adding controller nodes to %q until %d vote", c.Name, n))
	info, err := c.Client.EnableHA(ctx, n)
	if err != nil {
		p.Done("")
		return err
	}
	a.cacheControllerInfo(c.Name, info)
	p.Done("")
	t := &modelcmd.Table{Color: a.Terminal}
	t.Row("Node", "API address", "Voter", "Leader", "Applied", "Lag")
	for _, nd := range info.Nodes {
		leader := ""
		if nd.Leader {
			leader = "*"
		}
		t.Row(nd.ID, nd.APIAddress, strconv.FormatBool(nd.Voter), leader, strconv.FormatUint(nd.AppliedIndex, 10), strconv.FormatUint(nd.Lag, 10))
	}
	if err := t.Write(a.Stdout); err != nil {
		return err
	}
	fmt.Fprintf(a.Stderr, "Controller %q now has %d nodes.\n", c.Name, len(info.Nodes))
	return nil
}

// WhoamiCmd is 'drover whoami'.
func (a *Commands) WhoamiCmd() *cobra.Command {
	var ctl modelcmd.ControllerOpt
	var format modelcmd.FormatOpt
	cmd := &cobra.Command{
		Use:     "whoami",
		Short:   "Show the current controller, model and user",
		Example: "  drover whoami",
		Args:    modelcmd.ExactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := format.Check(); err != nil {
				return err
			}
			c, err := a.Dial(ctl.Name)
			if err != nil {
				return err
			}
			defer c.Client.Close()
			who, err := c.Client.WhoAmI(cmd.Context())
			if err != nil {
				return err
			}
			s, err := a.Store.Load()
			if err != nil {
				return err
			}
			model := a.CurrentModel(s, c.Name)
			if format.Value != "tabular" {
				return modelcmd.WriteFormatted(a.Stdout, format.Value, map[string]string{"controller": c.Name, "model": model, "user": who.User, "access": who.Access})
			}
			if model == "" {
				model = "-"
			}
			fmt.Fprintf(a.Stdout, "Controller:  %s\nModel:       %s\nUser:        %s\nAccess:      %s\n", c.Name, model, who.User, who.Access)
			return nil
		},
	}
	ctl.Add(cmd)
	format.Add(cmd, "tabular", "tabular", "json", "yaml")
	return cmd
}
