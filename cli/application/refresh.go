package application

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/charm"
	"github.com/droverhq/drover/cli/internal/modelcmd"
)

// RefreshCmd is 'drover refresh'.
func (a *Commands) RefreshCmd() *cobra.Command {
	var mo modelcmd.ModelOpt
	var path, switchTo string
	var forceUnits bool
	var config, resources []string
	cmd := &cobra.Command{
		Use:     "refresh APPLICATION --path CHARM_DIR|CHARM.charm",
		Aliases: []string{"upgrade-charm"}, // Juju 2.9's name
		Short:   "Upgrade an application to another version of its charm",
		Long: `Uploads a local charm directory or .charm archive and upgrades the
application to it, as 'juju refresh --path' does (there is no charm store
yet, so --path or --switch is required). The application's charm revision
goes up by one.

Each unit then runs upgrade-charm with the new charm's code, then
config-changed (and start, if it had not started). Files the charm created
in its directory are kept; files of the old charm that the new one no
longer has are removed.

A unit in error keeps the old charm until its failed hook succeeds (on a
retry, or after 'drover resolved'), then upgrades. With --force-units it
takes the new charm at once, without running upgrade-charm: the failed hook
stays failed and its retry runs the new charm's code, which is how a hook
bug is fixed in place.

Settings the new charm has no option for, or whose new type refuses the
value, are dropped (and listed). --config sets options with the upgrade:
key=value (repeatable) or a YAML file {application: {key: value}}.

--path refuses a charm of another name; --switch upgrades to one (a
crossgrade). The new charm must keep every endpoint an integration uses,
and be a subordinate if and only if the old one was. --path with the charm
the application already runs changes no charm: the other flags still
apply.

--resource NAME=PATH uploads new content for a file resource; when the
content differs from the resource's, its revision goes up by one and the
units run upgrade-charm (then config-changed), whose resource-get sees the
new content.`,
		Example: `  drover refresh kvstore --path ./charms/kvstore
  drover refresh kvstore --path ~/src/kvstore/kvstore.charm --config port=7002
  drover refresh kvstore --path ./charms/kvstore --force-units
  drover refresh kvstore --switch ~/src/kvstore-ng
  drover refresh mycharm --path ~/src/mycharm/mycharm.charm --resource config=~/config-v2.tar.gz`,
		Args: modelcmd.ExactArgs(1, "an application name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			app := args[0]
			if (path == "") == (switchTo == "") {
				return modelcmd.Usagef("give the new charm with --path (the same charm) or --switch (another charm)")
			}
			from := path
			if switchTo != "" {
				from = switchTo
			}
			files, strs, err := deployConfig(config)
			if err != nil {
				return err
			}
			res, err := nameValues("resource", resources)
			if err != nil {
				return err
			}
			data, ch, err := readCharm(from)
			if err != nil {
				return err
			}
			if err := checkResources(ch.Meta, res); err != nil {
				return err
			}
			r := refresh{app: app, from: from, data: data, ch: ch, switching: switchTo != "", forceUnits: forceUnits, files: files, strs: strs, resources: res}
			return a.WithModel(cmd.Context(), mo.Ref, func(mc *modelcmd.ModelConn) error {
				return a.refresh(cmd.Context(), mc, r)
			})
		},
	}
	mo.Add(cmd)
	cmd.Flags().StringVar(&path, "path", "", "the new version of the application's charm: a directory or a .charm archive")
	cmd.Flags().StringVar(&switchTo, "switch", "", "another charm (of another name) to crossgrade the application to")
	cmd.Flags().BoolVar(&forceUnits, "force-units", false, "upgrade units in error too, at once")
	cmd.Flags().StringArrayVar(&config, "config", nil, "config key=value or a YAML file (repeatable)")
	cmd.Flags().StringArrayVar(&resources, "resource", nil, "NAME=PATH: upload new content for a charm resource (repeatable)")
	return cmd
}

// refresh is one refresh command: application app to the charm read from
// from, with the --config settings files and strs.
type refresh struct {
	app, from             string
	data                  []byte
	ch                    *charm.Charm
	switching, forceUnits bool
	files                 map[string]map[string]any
	strs                  map[string]string
	resources             map[string]string // --resource NAME=PATH
}

// refresh uploads r's charm and sets it on the application, then says
// what the upgrade dropped and which units keep the old charm.
func (a *Commands) refresh(ctx context.Context, mc *modelcmd.ModelConn, r refresh) error {
	old, err := mc.Client.Model(mc.UUID).Application(ctx, r.app)
	if err != nil {
		return err
	}
	if r.ch.Meta.Name != old.CharmName && !r.switching {
		return modelcmd.Usagef("%s is charm %q, and %q runs charm %q: use --switch to change an application's charm to another one", r.from, r.ch.Meta.Name, r.app, old.CharmName)
	}
	p := a.NewProgress("Uploading charm " + r.from)
	up, err := mc.Client.Model(mc.UUID).UploadCharm(ctx, bytes.NewReader(r.data))
	if err != nil {
		p.Done("")
		return err
	}
	if up.SHA256 == old.CharmSHA256 {
		// The charm is unchanged: nothing to refresh but what the other
		// flags give.
		p.Done(fmt.Sprintf("Application %q already runs local charm %q, revision %d", r.app, up.Name, old.CharmRevision))
		return a.refreshInPlace(ctx, mc, r)
	}
	p.Update("Refreshing %q to local charm %q", r.app, up.Name)
	upd, err := mc.Client.Model(mc.UUID).SetCharm(ctx, r.app, api.SetCharmRequest{CharmSHA256: up.SHA256,
		Switch: r.switching, ForceUnits: r.forceUnits, Config: r.files[r.app], ConfigStrs: r.strs})
	if err != nil {
		p.Done("")
		return err
	}
	p.Done(fmt.Sprintf("Added local charm %q, revision %d, to the model", up.Name, upd.CharmRevision))
	if err := a.attachResources(ctx, mc, r); err != nil {
		return err
	}
	if dropped := droppedSettings(old.Config, upd.Config, r.strs, r.files[r.app]); len(dropped) > 0 {
		fmt.Fprintf(a.Stderr, "Settings dropped (charm %q has no such option, or refuses the value): %s\n", up.Name, strings.Join(dropped, ", "))
	}
	if r.forceUnits {
		return nil
	}
	fs, err := mc.Client.Model(mc.UUID).Status(ctx)
	if err != nil {
		return nil // the refresh is done; this was only advice
	}
	if inError := unitsInError(fs, r.app); len(inError) > 0 {
		fmt.Fprintf(a.Stderr, "Units in error keep the old charm until their failed hook succeeds (or 'drover resolved'): %s; 'drover refresh %s --path ... --force-units' gives them the new charm now\n",
			strings.Join(inError, ", "), r.app)
	}
	return nil
}

// droppedSettings are the user settings the refresh removed that the
// caller did not reset themselves.
func droppedSettings(before, after map[string]any, strs map[string]string, typed map[string]any) []string {
	var out []string
	for k := range before {
		if _, kept := after[k]; kept {
			continue
		}
		if v, ok := strs[k]; ok && v == "" {
			continue // reset by --config key=
		}
		if v, ok := typed[k]; ok && v == nil {
			continue
		}
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// unitsInError lists the application's units (and their subordinates) in
// error, as --wait judges them.
func unitsInError(fs *api.FullStatus, app string) []string {
	var out []string
	for an, as := range fs.Applications {
		for un, u := range as.Units {
			if an == app && unitInError(u) {
				out = append(out, un)
			}
			for sn, s := range u.Subordinates {
				if strings.HasPrefix(sn, app+"/") && unitInError(s) {
					out = append(out, sn)
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

func unitInError(u api.UnitStatus) bool {
	return u.JujuStatus.Current == "error" || u.WorkloadStatus.Current == "error"
}

// refreshInPlace applies a refresh's --config and --resource to an
// application whose charm does not change.
func (a *Commands) refreshInPlace(ctx context.Context, mc *modelcmd.ModelConn, r refresh) error {
	if len(r.files[r.app]) > 0 || len(r.strs) > 0 {
		set := map[string]any{}
		for k, v := range r.files[r.app] {
			set[k] = v
		}
		if _, err := mc.Client.Model(mc.UUID).SetApplicationConfig(ctx, r.app, api.ConfigChange{Set: set, SetStrings: r.strs}); err != nil {
			return err
		}
	}
	return a.attachResources(ctx, mc, r)
}

// attachResources uploads a refresh's --resource files and gives them to
// the application.
func (a *Commands) attachResources(ctx context.Context, mc *modelcmd.ModelConn, r refresh) error {
	if len(r.resources) == 0 {
		return nil
	}
	p := a.NewProgress("Uploading resources " + strings.Join(modelcmd.SortedKeys(r.resources), ", "))
	content, err := uploadResources(ctx, mc, r.resources)
	if err != nil {
		p.Done("")
		return err
	}
	before, err := mc.Client.Model(mc.UUID).Resources(ctx, r.app)
	if err != nil {
		p.Done("")
		return err
	}
	if _, err := mc.Client.Model(mc.UUID).AttachResources(ctx, r.app, content); err != nil {
		p.Done("")
		return err
	}
	revs := map[string]int{}
	for _, res := range before {
		revs[res.Name] = res.Revision
	}
	var done []string
	for _, name := range modelcmd.SortedKeys(content) {
		same := false
		for _, res := range before {
			same = same || (res.Name == name && res.SHA256 == content[name].SHA256)
		}
		if same {
			done = append(done, fmt.Sprintf("%s unchanged (revision %d)", name, revs[name]))
		} else {
			done = append(done, fmt.Sprintf("%s revision %d", name, revs[name]+1))
		}
	}
	p.Done("Resources of " + strconv.Quote(r.app) + ": " + strings.Join(done, ", "))
	return nil
}
