package application

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/charm"
	"github.com/droverhq/drover/cli/internal/modelcmd"
)

// uploadCharm packs a charm directory (or reads a .charm archive),
// validates it locally for a clear error, and uploads it.
func (a *Commands) uploadCharm(ctx context.Context, c *api.Client, model, path string) (*api.Charm, error) {
	data, _, err := readCharm(path)
	if err != nil {
		return nil, err
	}
	return c.Model(model).UploadCharm(ctx, bytes.NewReader(data))
}

// readCharm packs a charm directory (or reads a .charm archive) and
// parses the archive, as the controller will.
func readCharm(path string) ([]byte, *charm.Charm, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, nil, fmt.Errorf("charm %s: %w", path, err)
	}
	var data []byte
	if st.IsDir() {
		var buf bytes.Buffer
		if err := charm.ArchiveDir(path, &buf); err != nil {
			return nil, nil, fmt.Errorf("cannot pack charm %s: %w", path, err)
		}
		data = buf.Bytes()
	} else if data, err = os.ReadFile(path); err != nil {
		return nil, nil, err
	}
	ch, err := charm.ReadArchiveBytes(data)
	if err != nil {
		return nil, nil, fmt.Errorf("invalid charm %s: %w", path, err)
	}
	return data, ch, nil
}

// deployKind tells a charm from a bundle.
func deployKind(path string) (bundleFile string, err error) {
	st, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("cannot find %q: drover deploys a local charm directory, a .charm archive or a bundle YAML file (there is no charm store yet)", path)
	}
	if err != nil {
		return "", err
	}
	if st.IsDir() {
		if _, err := os.Stat(filepath.Join(path, "metadata.yaml")); err == nil {
			return "", nil
		}
		if _, err := os.Stat(filepath.Join(path, "charmcraft.yaml")); err == nil {
			return "", nil
		}
		if _, err := os.Stat(filepath.Join(path, charm.BundleFile)); err == nil {
			return filepath.Join(path, charm.BundleFile), nil
		}
		return "", fmt.Errorf("%s is neither a charm (no metadata.yaml or charmcraft.yaml) nor a bundle (no bundle.yaml)", path)
	}
	if ext := filepath.Ext(path); ext == ".yaml" || ext == ".yml" {
		return path, nil
	}
	return "", nil
}

// deployConfig splits --config values into typed settings from files
// ({app: {k: v}}) and key=value strings.
func deployConfig(values []string) (files map[string]map[string]any, strs map[string]string, err error) {
	files = map[string]map[string]any{}
	var kvs []string
	for _, v := range values {
		if strings.Contains(v, "=") {
			kvs = append(kvs, v)
			continue
		}
		data, err := os.ReadFile(v)
		if err != nil {
			return nil, nil, modelcmd.Usagef("--config %q: not key=value and not a readable file: %v", v, err)
		}
		var doc map[string]map[string]any
		if err := yaml.Unmarshal(data, &doc); err != nil {
			return nil, nil, fmt.Errorf("--config %s: want a YAML map of application name to settings: %w", v, err)
		}
		for app, settings := range doc {
			if files[app] == nil {
				files[app] = map[string]any{}
			}
			for k, s := range settings {
				files[app][k] = s
			}
		}
	}
	strs, err = modelcmd.ParseKeyValues(kvs)
	return files, strs, err
}

// deployFlags are deploy's flags.
type deployFlags struct {
	mo                          modelcmd.ModelOpt
	n                           int
	to, config                  []string
	resources, storage, overlay []string
	constraints, base, channel  string
	trust                       bool
	wait                        modelcmd.WaitOpt
}

// deployPlan is deploy's command line, checked before a model is dialled.
type deployPlan struct {
	bundleFile string // "" for a charm
	files      map[string]map[string]any
	strs       map[string]string
	placements []string
	overlays   []string
	resources  map[string]string // --resource NAME=PATH
	storage    map[string]string // --storage NAME=DIRECTIVE
	waiting    bool
	limit      time.Duration
}

// DeployCmd is 'drover deploy'.
func (a *Commands) DeployCmd() *cobra.Command {
	var f deployFlags
	cmd := &cobra.Command{
		Use:   "deploy CHARM_DIR|CHARM.charm|BUNDLE.yaml [APPLICATION]",
		Short: "Deploy a charm or a bundle",
		Long: `Deploys a local charm directory (packed and uploaded), a .charm archive, or
a bundle YAML file (every application, its units and placements, exposure,
then relations). The application name defaults to the charm's name.

--config takes key=value (repeatable) or a YAML file of the form
{application: {key: value}}; a value @path reads the file's content.
--to places units: a machine id, lxd:ID, or APP/N (next to that unit).

--resource NAME=PATH uploads a file for one of the charm's file resources
(metadata.yaml resources:); the charm reads it with resource-get NAME.
--storage NAME=POOL,SIZE,COUNT is checked against the charm's storage and
recorded on the application (show-application); the local cloud does not
provision storage yet. --base (ubuntu@24.04) and --channel
([TRACK/]RISK[/BRANCH]) are checked and recorded as the charm's origin
(show-application shows them). --trust trusts the application with the model's
cloud credential. --constraints (mem=4G cores=2) apply to its machines.
--overlay FILE (repeatable) merges overlay bundles into a bundle, as Juju
does.

--wait waits until every unit of the deployed application(s) is settled:
its agent idle and its workload active, blocked, waiting or unknown. It
fails as soon as a unit is in error (a hook failed), and with
--wait=DURATION when that time passes, listing the units still pending.`,
		Example: `  drover deploy ./charms/kvstore
  drover deploy ./charms/kvstore store -n 3 --config port=7001
  drover deploy ./charms/webapp --to 0
  drover deploy ./tests/testdata/bundle/bundle.yaml --config overrides.yaml --wait=10m
  drover deploy ~/src/mycharm/mycharm.charm --resource config=~/config.tar.gz --storage data=rootfs,10G`,
		Args: modelcmd.RangeArgs(1, 2, "a charm or bundle path and an optional application name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			plan, err := f.plan(args[0])
			if err != nil {
				return err
			}
			return a.WithModel(cmd.Context(), f.mo.Ref, func(mc *modelcmd.ModelConn) error {
				if plan.bundleFile != "" {
					if len(args) == 2 || cmd.Flags().Changed("num-units") || len(plan.placements) > 0 || len(plan.strs) > 0 ||
						len(plan.resources) > 0 || len(plan.storage) > 0 {
						return modelcmd.Usagef("a bundle takes no application name, -n, --to, --resource, --storage or --config key=value (set them per application in the bundle or an --overlay; use a --config file)")
					}
					return a.deployBundleFile(cmd.Context(), mc, plan)
				}
				return a.deployCharm(cmd, mc, args, &f, plan)
			})
		},
	}
	f.mo.Add(cmd)
	f.wait.Add(cmd)
	cmd.Flags().IntVarP(&f.n, "num-units", "n", 1, "number of units")
	cmd.Flags().StringSliceVar(&f.to, "to", nil, "placement directives, one per unit (comma-separated)")
	cmd.Flags().StringArrayVar(&f.config, "config", nil, "config key=value or a YAML file (repeatable)")
	cmd.Flags().StringVar(&f.constraints, "constraints", "", "machine constraints, e.g. \"mem=4G cores=2\"")
	cmd.Flags().StringVar(&f.base, "base", "", "OS base of new machines, e.g. ubuntu@24.04")
	cmd.Flags().BoolVar(&f.trust, "trust", false, "trust the application with the model's cloud credential (as 'drover trust')")
	cmd.Flags().StringVar(&f.channel, "channel", "", "the charm's channel, recorded as its origin, e.g. latest/stable")
	cmd.Flags().StringArrayVar(&f.resources, "resource", nil, "NAME=PATH: upload a file for a charm resource (repeatable)")
	cmd.Flags().StringArrayVar(&f.storage, "storage", nil, "NAME=POOL,SIZE,COUNT: storage directive (repeatable; recorded, not provisioned)")
	cmd.Flags().StringArrayVar(&f.overlay, "overlay", nil, "bundle overlay file merged into a bundle (repeatable)")
	return cmd
}

// plan checks the flags and what path is (a charm or a bundle).
func (f *deployFlags) plan(path string) (deployPlan, error) {
	var p deployPlan
	var err error
	if p.waiting, p.limit, err = f.wait.Parse(); err != nil {
		return p, err
	}
	if p.files, p.strs, err = deployConfig(f.config); err != nil {
		return p, err
	}
	if _, err := api.ParseConstraints(f.constraints); err != nil {
		return p, modelcmd.Usagef("--constraints: %v", err)
	}
	if err := checkOrigin(f.base, f.channel); err != nil {
		return p, err
	}
	if p.resources, err = nameValues("resource", f.resources); err != nil {
		return p, err
	}
	if p.storage, err = nameValues("storage", f.storage); err != nil {
		return p, err
	}
	p.placements = modelcmd.SplitList(f.to)
	for _, pl := range p.placements {
		if _, err := charm.ParsePlacement(pl); err != nil {
			return p, modelcmd.Usagef("--to: %v", err)
		}
	}
	if p.bundleFile, err = deployKind(path); err != nil {
		return p, err
	}
	p.overlays = f.overlay
	if len(f.overlay) > 0 && p.bundleFile == "" {
		return p, modelcmd.Usagef("--overlay applies to a bundle; %s is a charm", path)
	}
	return p, nil
}

// deployBundleFile deploys the bundle plan names, then waits if asked.
func (a *Commands) deployBundleFile(ctx context.Context, mc *modelcmd.ModelConn, plan deployPlan) error {
	data, err := os.ReadFile(plan.bundleFile)
	if err != nil {
		return err
	}
	if data, err = mergeOverlays(data, plan.overlays); err != nil {
		return err
	}
	b, err := charm.ParseBundle(data)
	if err != nil {
		return err
	}
	if err := b.ResolveCharmPaths(filepath.Dir(plan.bundleFile)); err != nil {
		return err
	}
	if err := a.deployBundle(ctx, mc, b, filepath.Dir(plan.bundleFile), plan.files); err != nil || !plan.waiting {
		return err
	}
	return a.WaitSettled(ctx, mc, modelcmd.WaitSpec{Apps: modelcmd.SortedKeys(b.Applications)}, plan.limit)
}

// deployCharm uploads the charm args[0] and deploys it as args[1] (or
// its own name), then waits if asked.
func (a *Commands) deployCharm(cmd *cobra.Command, mc *modelcmd.ModelConn, args []string, f *deployFlags, plan deployPlan) error {
	data, local, err := readCharm(args[0])
	if err != nil {
		return err
	}
	if err := checkResources(local.Meta, plan.resources); err != nil {
		return err
	}
	if err := checkStorage(local.Meta, plan.storage); err != nil {
		return err
	}
	p := a.NewProgress("Uploading charm " + args[0])
	ch, err := mc.Client.Model(mc.UUID).UploadCharm(cmd.Context(), bytes.NewReader(data))
	if err != nil {
		p.Done("")
		return err
	}
	if len(plan.resources) > 0 {
		p.Update("Uploading resources %s", strings.Join(modelcmd.SortedKeys(plan.resources), ", "))
	}
	resources, err := uploadResources(cmd.Context(), mc, plan.resources)
	if err != nil {
		p.Done("")
		return err
	}
	name := ch.Name
	if len(args) == 2 {
		name = args[1]
	}
	if ch.Subordinate && cmd.Flags().Changed("num-units") {
		p.Done("")
		return modelcmd.Usagef("%q is a subordinate charm: its units follow its principals, so -n does not apply", ch.Name)
	}
	units := f.n
	if ch.Subordinate {
		units = 0
	}
	p.Update("Deploying %q from local charm %q", name, ch.Name)
	res, err := mc.Client.Model(mc.UUID).Deploy(cmd.Context(), api.DeployRequest{Application: name, CharmSHA256: ch.SHA256,
		NumUnits: units, Config: plan.files[name], ConfigStrs: plan.strs, To: plan.placements, Constraints: f.constraints, Base: f.base, Trust: f.trust,
		Channel: f.channel, Storage: plan.storage, Resources: resources})
	if err != nil {
		p.Done("")
		return err
	}
	p.Done(fmt.Sprintf("Deployed %q from local charm %q (sha256 %.12s) with %d unit(s)", name, ch.Name, ch.SHA256, len(res.Units)))
	if !plan.waiting {
		return nil
	}
	return a.WaitSettled(cmd.Context(), mc, modelcmd.WaitSpec{Apps: []string{name}, Units: res.Units}, plan.limit)
}
