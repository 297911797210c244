package model

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/cli/internal/modelcmd"
)

// AddModelCmd is 'drover add-model'.
func (a *Commands) AddModelCmd() *cobra.Command {
	var ctl modelcmd.ControllerOpt
	var config []string
	var noSwitch bool
	var region, cloud string
	cmd := &cobra.Command{
		Use:   "add-model NAME [CLOUD/REGION|REGION|CLOUD]",
		Short: "Add a model and make it current",
		Long: `Adds a model to the controller and switches to it (unless --no-switch).
--config sets model config, as key=value (repeatable). At a hub, the hub
places the model by --region/--cloud, controller health and load; -c names
a controller behind the hub to place it on. As in Juju, the place may also
follow the name: CLOUD/REGION, or one name, a cloud if a controller behind
the hub is in a cloud of that name, else a region.`,
		Example: "  drover add-model demo\n  drover add-model demo west\n  drover add-model demo localhost/west\n" +
			"  drover add-model staging -c lab --config logging-config='<root>=DEBUG'",
		Args: modelcmd.RangeArgs(1, 2, "a model name and at most a place"),
		RunE: func(cmd *cobra.Command, args []string) error {
			kv, err := modelcmd.ParseKeyValues(config)
			if err != nil {
				return err
			}
			req := api.AddModelRequest{Name: args[0], Region: region, Cloud: cloud}
			oneWord := false // a cloud or a region, told apart once dialled
			if len(args) == 2 {
				if region != "" || cloud != "" {
					return modelcmd.UsageError{Err: errors.New("give the place once: as an argument or with --region/--cloud")}
				}
				var slash bool
				if req.Cloud, req.Region, slash = strings.Cut(args[1], "/"); !slash {
					req.Cloud, req.Region, oneWord = "", args[1], true
				}
			}
			if st, err := a.Store.Load(); err == nil && ctl.Name != "" && st.Controllers[ctl.Name] == nil {
				if cur := st.Controllers[st.CurrentController]; cur != nil && cur.Hub {
					req.Controller, ctl.Name = ctl.Name, "" // a controller behind the current hub
				}
			}
			c, err := a.Dial(ctl.Name)
			if err != nil {
				return err
			}
			defer c.Client.Close()
			if oneWord && c.Details.Hub && isHubCloud(cmd.Context(), c, req.Region) {
				req.Cloud, req.Region = req.Region, ""
			}
			if len(kv) > 0 {
				req.Config = map[string]any{}
				for k, v := range kv {
					req.Config[k] = v
				}
			}
			m, err := c.Client.AddModel(cmd.Context(), req)
			if err != nil {
				return err
			}
			if err := a.RememberModel(c.Name, c.Account.User, *m, !noSwitch); err != nil {
				return err
			}
			where := fmt.Sprintf("controller %q", c.Name)
			if x := m.Index; x != nil && x.Controller != "" { // placed by a hub
				where = fmt.Sprintf("%s/%s (controller %q behind hub %q)", x.Cloud, x.Region, x.Controller, c.Name)
			}
			fmt.Fprintf(a.Stderr, "Added '%s' model on %s with owner %q\n", m.Name, where, m.Owner)
			return nil
		},
	}
	ctl.Add(cmd)
	cmd.Flags().StringArrayVar(&config, "config", nil, "model config key=value (repeatable)")
	cmd.Flags().BoolVar(&noSwitch, "no-switch", false, "do not make the new model current")
	cmd.Flags().StringVar(&region, "region", "", "at a hub: the region to place the model in")
	cmd.Flags().StringVar(&cloud, "cloud", "", "at a hub: the cloud to place the model in")
	return cmd
}

// isHubCloud reports whether a controller behind the hub c is in a cloud
// named name (add-model's one-word place is then a cloud, as in Juju).
func isHubCloud(ctx context.Context, c *modelcmd.Conn, name string) bool {
	ctls, err := modelcmd.ControllersBehind(ctx, c)
	return err == nil && slices.ContainsFunc(ctls, func(ctl map[string]any) bool { return ctl["cloud"] == name })
}

// ShowModelCmd is 'drover show-model'.
func (a *Commands) ShowModelCmd() *cobra.Command {
	var mo modelcmd.ModelOpt
	var format modelcmd.FormatOpt
	cmd := &cobra.Command{
		Use:   "show-model [[CONTROLLER:]MODEL]",
		Short: "Show a model's details",
		Long: `Shows a model as 'juju show-model' does, keyed by its name. At a hub,
also the model's users (for its administrators), the controller it is on,
and its latest migration: in status, Juju's migration (what it is doing,
or how it ended), migration-start and migration-end, and a migration
section with its ID, phase, controllers (from, to), message, failure,
start, end and the agents' reports (ok, failed, pending, and why those
that failed did).`,
		Example: "  drover show-model\n  drover show-model local:demo --format json",
		Args:    modelcmd.RangeArgs(0, 1, "at most one model"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := format.Check(); err != nil {
				return err
			}
			ref := mo.Ref
			if len(args) == 1 {
				ref = args[0]
			}
			mc, err := a.DialModel(cmd.Context(), ref)
			if err != nil {
				return err
			}
			defer mc.Client.Close()
			m, err := mc.Client.Model(mc.UUID).Info(cmd.Context())
			if err != nil {
				return err
			}
			var st *api.ModelStatus
			if m.Index == nil { // a controller: its cloud and version are in the model's status
				if fs, err := mc.Client.Model(mc.UUID).Status(cmd.Context()); err == nil {
					st = &fs.Model
				}
			}
			view := modelInfoView(m, mc.Name, mc.Details.UUID, st)
			if m.Migration != nil {
				addModelMigration(view, m.Migration)
			}
			if x := m.Index; x != nil {
				// A hub answers from its index; the config is the
				// controller's, read through the hub.
				view["controller-name"], view["controller-uuid"] = mc.Name+"/"+x.Controller, x.ControllerUUID
				view["organization"] = x.Org
				if x.Cloud != "" {
					view["cloud"] = x.Cloud
				}
				if x.Region != "" {
					view["region"] = x.Region
				}
				if len(x.Users) > 0 {
					view["users"] = modelUsersView(x.Users, a.Now())
				}
				if x.ControllerStatus != "" { // the rest is what the hub last heard
					view["controller-status"] = x.ControllerStatus
				}
				if x.LastMigration != nil {
					addMigration(view, x.LastMigration)
				}
				cfg, err := mc.Client.Model(mc.UUID).Config(cmd.Context())
				switch {
				case err == nil:
					view["config"] = cfg
				case api.CodeOf(err) == api.CodeUnavailable:
					// What the hub knows is still worth showing.
					delete(view, "config")
					view["controller-status"] = cmp.Or(x.ControllerStatus, "unreachable")
				default:
					return err
				}
			}
			return modelcmd.WriteFormatted(a.Stdout, format.Value, map[string]any{m.Name: view})
		},
	}
	mo.Add(cmd)
	format.Add(cmd, "yaml", "yaml", "json")
	return cmd
}

// modelInfoView is a model as juju show-model prints it (the fields
// jubilant's ModelInfo requires among them: name, short-name, model-uuid,
// model-type, controller-uuid, controller-name, is-controller, cloud,
// life). st is the model section of its status, when known: cloud,
// region and agent version. Drover models are machine models ("iaas") on
// the local substrate, and no model is the controller's own.
func modelInfoView(m *api.Model, ctlName, ctlUUID string, st *api.ModelStatus) map[string]any {
	status := map[string]any{"current": m.Status.Status, "message": m.Status.Message}
	if !m.Status.Since.IsZero() { // unknown at a hub for a model indexed before it kept one
		status["since"] = m.Status.Since
	}
	view := map[string]any{"name": modelcmd.ModelRef(*m, ""), "short-name": m.Name, "model-uuid": m.UUID,
		"model-type": "iaas", "is-controller": false, "owner": m.Owner, "life": m.Life,
		"controller-name": ctlName, "controller-uuid": ctlUUID, "status": status,
		"created-at": m.CreatedAt, "config": m.Config, "cloud": "localhost", "type": "local"}
	if st != nil {
		if st.Cloud != "" {
			view["cloud"] = st.Cloud
		}
		if st.Region != "" {
			view["region"] = st.Region
		}
		if st.Version != "" {
			view["agent-version"] = st.Version
		}
	}
	return view
}

// modelUsersView is show-model's users section, keyed by name as Juju's
// is: display name, access and last connection; groups and everyone say
// what they are.
func modelUsersView(us []api.ModelUser, now time.Time) map[string]any {
	out := map[string]any{}
	for _, u := range us {
		v := map[string]any{"access": u.Access}
		if u.DisplayName != "" && u.DisplayName != u.Name {
			v["display-name"] = u.DisplayName
		}
		switch {
		case u.LastLogin != nil:
			v["last-connection"] = modelcmd.FriendlyAgo(*u.LastLogin, now)
		case u.Kind == "user" || u.Kind == "service-account":
			v["last-connection"] = "never connected" // as Juju says it; granted before a first login
		}
		key := u.Name
		switch u.Kind {
		case "group", "everyone", "unknown":
			v["kind"] = u.Kind
			if u.Kind == "group" {
				key = "group " + u.Name
			}
		}
		out[key] = v
	}
	return out
}

// DestroyModelCmd is 'drover destroy-model'.
func (a *Commands) DestroyModelCmd() *cobra.Command {
	var ctl modelcmd.ControllerOpt
	var force, yes, noWait, destroyStorage, releaseStorage bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "destroy-model [CONTROLLER:]MODEL",
		Short: "Destroy a model and everything in it",
		Long: `Destroys a model: its applications are removed (their agents run the
teardown hooks), then the model. With --force everything is removed at once
without waiting for agents. drover waits until the model is gone unless
--no-wait.

--destroy-storage and --release-storage are Juju's choice for the model's
storage; the local cloud provisions no storage, so there is none to
destroy or release and either is accepted (not both).`,
		Example: "  drover destroy-model demo -y\n  drover destroy-model local:demo --force -y\n  drover destroy-model demo --no-prompt --destroy-storage --force",
		Args:    modelcmd.ExactArgs(1, "a model name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if destroyStorage && releaseStorage {
				return modelcmd.Usagef("--destroy-storage and --release-storage cannot both be given")
			}
			ref := args[0]
			if c, _ := modelcmd.SplitModelRef(ref); c == "" && ctl.Name != "" {
				ref = ctl.Name + ":" + ref
			}
			return a.destroyModel(cmd.Context(), ref, force, yes, noWait, timeout)
		},
	}
	ctl.Add(cmd)
	cmd.Flags().BoolVar(&force, "force", false, "remove everything at once, without waiting for agents")
	modelcmd.AddYesFlags(cmd, &yes)
	cmd.Flags().BoolVar(&noWait, "no-wait", false, "return once the model is dying")
	cmd.Flags().DurationVar(&timeout, "timeout", 10*time.Minute, "how long to wait for the model to go")
	cmd.Flags().BoolVar(&destroyStorage, "destroy-storage", false, "destroy the model's storage (the local cloud has none)")
	cmd.Flags().BoolVar(&releaseStorage, "release-storage", false, "release the model's storage instead (the local cloud has none)")
	return cmd
}

func (a *Commands) destroyModel(ctx context.Context, ref string, force, yes, noWait bool, timeout time.Duration) error {
	mc, err := a.DialModel(ctx, ref)
	if err != nil {
		return err
	}
	defer mc.Client.Close()
	if !yes {
		if err := a.Confirm(fmt.Sprintf("This will destroy model %q on controller %q and everything in it.", mc.Model, mc.Name)); err != nil {
			return err
		}
	}
	p := a.NewProgress(fmt.Sprintf("Destroying model %q", mc.Model))
	m, err := mc.Client.Model(mc.UUID).Destroy(ctx, force)
	if err != nil {
		p.Done("")
		return err
	}
	if m != nil && !noWait {
		wctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		var left modelLeft
		err := a.waitModelGone(wctx, mc, p, &left)
		if err == nil {
			waitUnindexed(wctx, mc)
		}
		if err != nil {
			p.Done("")
			if errors.Is(err, context.DeadlineExceeded) {
				if force || left.units == 0 {
					return fmt.Errorf("model %q is still dying after %s (%s left): its machines wait for the provisioner to release them; see 'drover status -m %s'", mc.Model, timeout, left, mc.Model)
				}
				return fmt.Errorf("model %q is still dying after %s (%s left); its units wait for their agents: see 'drover status -m %s', or retry with --force", mc.Model, timeout, left, mc.Model)
			}
			return err
		}
		m = nil
	}
	if err := a.ForgetModel(mc.Name, mc.Model); err != nil {
		p.Done("")
		return err
	}
	if m != nil {
		p.Done(fmt.Sprintf("Model %q is being destroyed.", mc.Model))
		return nil
	}
	p.Done(fmt.Sprintf("Model %q destroyed.", mc.Model))
	return nil
}

// waitUnindexed waits, at a hub, until the hub's index no longer lists a
// model its controller has removed (it learns it from the controller's
// event stream, a moment later), so that 'drover models' right after a
// destroy-model does not show it dying. It gives up quietly after
// unindexedWait, or when ctx ends: the model is gone all the same (a hub
// that has lost the controller's stream drops it when it hears again).
func waitUnindexed(ctx context.Context, mc *modelcmd.ModelConn) {
	if !mc.Details.Hub {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, unindexedWait)
	defer cancel()
	for pause := 50 * time.Millisecond; ; pause = min(2*pause, time.Second) {
		if _, err := mc.Client.Model(mc.UUID).Info(ctx); api.CodeOf(err) == api.CodeNotFound {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(pause):
		}
	}
}

// unindexedWait bounds waitUnindexed.
var unindexedWait = 30 * time.Second

// modelLeft is what a dying model still has.
type modelLeft struct{ apps, units, machines int }

func (l modelLeft) String() string {
	return countOf(l.apps, "application") + ", " + countOf(l.units, "unit") + ", " + countOf(l.machines, "machine")
}

// countOf says n things: "1 machine", "2 machines", "0 units".
func countOf(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return strconv.Itoa(n) + " " + thing + "s"
}

// waitModelGone follows the model's watch until the model is removed,
// showing (and keeping in left) how many applications, units and machines
// remain.
func (a *Commands) waitModelGone(ctx context.Context, mc *modelcmd.ModelConn, p *modelcmd.Progress, left *modelLeft) error {
	w, err := a.Follow(ctx, mc)
	if err != nil {
		if api.CodeOf(err) == api.CodeNotFound {
			return nil
		}
		return err
	}
	defer w.Close()
	for {
		if _, err := mc.Client.Model(mc.UUID).Info(ctx); api.CodeOf(err) == api.CodeNotFound {
			return nil
		} else if err != nil {
			return err
		}
		st, err := mc.Client.Model(mc.UUID).Status(ctx)
		switch {
		case api.CodeOf(err) == api.CodeNotFound: // the controller has removed it
			return nil
		case err == nil:
			*left = modelLeft{apps: len(st.Applications), machines: len(st.Machines)}
			for _, app := range st.Applications {
				left.units += len(app.Units)
			}
			p.Update("Waiting for model %q to go: %s left", mc.Model, left)
		}
		f, err := w.Next(ctx)
		if err != nil {
			if api.CodeOf(err) == api.CodeNotFound {
				return nil
			}
			return err
		}
		// The model's own removal ends the wait: a hub's index may still
		// list it for a moment, and no frame follows.
		if modelcmd.ModelRemoved(f, mc.UUID) {
			return nil
		}
	}
}
