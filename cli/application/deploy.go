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
	return c.UploadModelCharm(ctx, model, bytes.NewReader(data))
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
	mo                modelcmd.ModelOpt
	n                 int
	to, config        []string
	constraints, base string
	trust             bool
	wait              modelcmd.WaitOpt
}

// deployPlan is deploy's command line, checked before a model is dialled.
type deployPlan struct {
	bundleFile string // "" for a charm
	files      map[string]map[string]any
	strs       map[string]string
	placements []string
	waiting    bool
	limit      time.Duration
}

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

--wait waits until every unit of the deployed application(s) is settled:
its agent idle and its workload active, blocked, waiting or unknown. It
fails as soon as a unit is in error (a hook failed), and with
--wait=DURATION when that time passes, listing the units still pending.`,
		Example: `  drover deploy ./charms/kv
  drover deploy ./charms/kv store -n 3 --config port=7001
  drover deploy ./web.charm --to 0
  drover deploy ./bundle.yaml --config overrides.yaml --wait=10m`,
		Args: modelcmd.RangeArgs(1, 2, "a charm or bundle path and an optional application name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			plan, err := f.plan(args[0])
			if err != nil {
				return err
			}
			return a.WithModel(cmd.Context(), f.mo.Ref, func(mc *modelcmd.ModelConn) error {
				if plan.bundleFile != "" {
					if len(args) == 2 || cmd.Flags().Changed("num-units") || len(plan.placements) > 0 || len(plan.strs) > 0 {
						return modelcmd.Usagef("a bundle takes no application name, -n, --to or --config key=value (use a --config file)")
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
	p.placements = modelcmd.SplitList(f.to)
	for _, pl := range p.placements {
		if _, err := charm.ParsePlacement(pl); err != nil {
			return p, modelcmd.Usagef("--to: %v", err)
		}
	}
	p.bundleFile, err = deployKind(path)
	return p, err
}

// deployBundleFile deploys the bundle plan names, then waits if asked.
func (a *Commands) deployBundleFile(ctx context.Context, mc *modelcmd.ModelConn, plan deployPlan) error {
	data, err := os.ReadFile(plan.bundleFile)
	if err != nil {
		return err
	}
	b, err := charm.ParseBundle(data)
	if err != nil {
		return err
	}
	if err := b.ResolveCharmPaths(filepath.Dir(plan.bundleFile)); err != nil {
		return err
	}
	if err := a.deployBundle(ctx, mc, b, plan.files); err != nil || !plan.waiting {
		return err
	}
	return a.WaitSettled(ctx, mc, modelcmd.WaitSpec{Apps: modelcmd.SortedKeys(b.Applications)}, plan.limit)
}

// deployCharm uploads the charm args[0] and deploys it as args[1] (or
// its own name), then waits if asked.
func (a *Commands) deployCharm(cmd *cobra.Command, mc *modelcmd.ModelConn, args []string, f *deployFlags, plan deployPlan) error {
	p := a.NewProgress("Uploading charm " + args[0])
	ch, err := a.uploadCharm(cmd.Context(), mc.Client, mc.UUID, args[0])
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
	res, err := mc.Client.Deploy(cmd.Context(), mc.UUID, api.DeployRequest{Application: name, CharmSHA256: ch.SHA256,
		NumUnits: units, Config: plan.files[name], ConfigStrs: plan.strs, To: plan.placements, Constraints: f.constraints, Base: f.base, Trust: f.trust})
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

func (a *Commands) ConfigCmd() *cobra.Command {
	var mo modelcmd.ModelOpt
	var format modelcmd.FormatOpt
	var reset []string
	var file string
	cmd := &cobra.Command{
		Use:   "config APPLICATION [KEY[=VALUE]...]",
		Short: "Show or change an application's config",
		Long: `With only APPLICATION, shows every option with its type, default, value and
source. With KEY, prints that option's value. With KEY=VALUE, sets options
(each value is parsed by the option's type, as Juju does; @path reads a
file). --reset returns options to their defaults; --file sets options from a
YAML file of the form {application: {key: value}}.`,
		Example: `  drover config kv
  drover config kv port
  drover config kv port=7001 debug=true
  drover config kv --reset port,debug`,
		Args: modelcmd.MinArgs(1, "an application name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := format.Check(); err != nil {
				return err
			}
			app := args[0]
			set, get := modelcmd.SplitConfigArgs(args[1:])
			if len(get) > 0 && (len(set) > 0 || len(reset) > 0 || file != "") {
				return modelcmd.Usagef("cannot get and set config in one command")
			}
			if len(get) > 1 {
				return modelcmd.Usagef("can only get one key at a time")
			}
			strs, err := modelcmd.ParseKeyValues(set)
			if err != nil {
				return err
			}
			var typed map[string]any
			if file != "" {
				files, _, err := deployConfig([]string{file})
				if err != nil {
					return err
				}
				typed = files[app]
			}
			return a.WithModel(cmd.Context(), mo.Ref, func(mc *modelcmd.ModelConn) error {
				if len(strs) > 0 || len(reset) > 0 || len(typed) > 0 {
					_, err := mc.Client.SetApplicationConfig(cmd.Context(), mc.UUID, app,
						api.ConfigChange{Set: typed, SetStrings: strs, Reset: modelcmd.SplitList(reset)})
					return err
				}
				cfg, err := mc.Client.ApplicationConfig(cmd.Context(), mc.UUID, app)
				if err != nil {
					return err
				}
				if len(get) == 1 {
					opt, ok := cfg.Settings[get[0]]
					if !ok {
						return fmt.Errorf("application %q has no option %q; 'drover config %s' lists them", app, get[0], app)
					}
					if format.Value == "yaml" || format.Value == "json" {
						return modelcmd.WriteFormatted(a.Stdout, format.Value, opt.Value)
					}
					if opt.Value != nil {
						fmt.Fprintln(a.Stdout, opt.Value)
					} else {
						fmt.Fprintln(a.Stdout)
					}
					return nil
				}
				return modelcmd.WriteFormatted(a.Stdout, format.Value, cfg)
			})
		},
	}
	mo.Add(cmd)
	format.Add(cmd, "yaml", "yaml", "json")
	cmd.Flags().StringArrayVar(&reset, "reset", nil, "options to reset (comma-separated or repeated)")
	cmd.Flags().StringVar(&file, "file", "", "YAML file of settings: {application: {key: value}}")
	return cmd
}

func (a *Commands) AddUnitCmd() *cobra.Command {
	var mo modelcmd.ModelOpt
	var n int
	var to []string
	var wait modelcmd.WaitOpt
	cmd := &cobra.Command{
		Use:     "add-unit APPLICATION",
		Short:   "Add units to an application",
		Example: "  drover add-unit kv\n  drover add-unit kv -n 2 --to 0,web/0 --wait=5m",
		Args:    modelcmd.ExactArgs(1, "an application name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			waiting, limit, err := wait.Parse()
			if err != nil {
				return err
			}
			if n < 1 {
				return modelcmd.Usagef("-n must be at least 1")
			}
			placements := modelcmd.SplitList(to)
			for _, p := range placements {
				if _, err := charm.ParsePlacement(p); err != nil {
					return modelcmd.Usagef("--to: %v", err)
				}
			}
			return a.WithModel(cmd.Context(), mo.Ref, func(mc *modelcmd.ModelConn) error {
				res, err := mc.Client.AddUnits(cmd.Context(), mc.UUID, args[0], api.AddUnitsRequest{NumUnits: n, To: placements})
				if err != nil {
					return err
				}
				fmt.Fprintf(a.Stderr, "Added %s\n", strings.Join(res.Units, ", "))
				if !waiting {
					return nil
				}
				return a.WaitSettled(cmd.Context(), mc, modelcmd.WaitSpec{Apps: []string{args[0]}, Units: res.Units}, limit)
			})
		},
	}
	mo.Add(cmd)
	wait.Add(cmd)
	cmd.Flags().IntVarP(&n, "num-units", "n", 1, "number of units to add")
	cmd.Flags().StringSliceVar(&to, "to", nil, "placement directives, one per unit (comma-separated)")
	return cmd
}

func (a *Commands) RemoveUnitCmd() *cobra.Command {
	var mo modelcmd.ModelOpt
	var force bool
	cmd := &cobra.Command{
		Use:     "remove-unit UNIT...",
		Short:   "Remove units",
		Long:    `Removes units: each runs its teardown hooks and goes; --force removes them at once.`,
		Example: "  drover remove-unit kv/1\n  drover remove-unit kv/1 kv/2 --force",
		Args:    modelcmd.MinArgs(1, "at least one unit (app/N)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, u := range args {
				if app, n, ok := strings.Cut(u, "/"); !ok || app == "" || n == "" {
					return modelcmd.Usagef("%q is not a unit name (app/N); to remove an application use remove-application", u)
				}
			}
			return a.WithModel(cmd.Context(), mo.Ref, func(mc *modelcmd.ModelConn) error {
				return a.EachOf(args, "units could not be removed", func(u string) error {
					if err := mc.Client.RemoveUnit(cmd.Context(), mc.UUID, u, force); err != nil {
						return fmt.Errorf("removing %s: %w", u, err)
					}
					fmt.Fprintf(a.Stderr, "removing unit %s\n", u)
					return nil
				})
			})
		},
	}
	mo.Add(cmd)
	cmd.Flags().BoolVar(&force, "force", false, "remove at once, without waiting for the units' agents")
	return cmd
}

func (a *Commands) ScaleCmd() *cobra.Command {
	var mo modelcmd.ModelOpt
	var wait modelcmd.WaitOpt
	cmd := &cobra.Command{
		Use:     "scale APPLICATION N",
		Aliases: []string{"scale-application"},
		Short:   "Set an application's number of units",
		Example: "  drover scale kv 3\n  drover scale kv 1 --wait",
		Args:    modelcmd.ExactArgs(2, "an application name and a unit count"),
		RunE: func(cmd *cobra.Command, args []string) error {
			waiting, limit, err := wait.Parse()
			if err != nil {
				return err
			}
			var n int
			if _, err := fmt.Sscan(args[1], &n); err != nil || n < 0 || fmt.Sprint(n) != args[1] {
				return modelcmd.Usagef("scale: %q is not a number of units", args[1])
			}
			return a.WithModel(cmd.Context(), mo.Ref, func(mc *modelcmd.ModelConn) error {
				app, err := mc.Client.Scale(cmd.Context(), mc.UUID, args[0], n)
				if err != nil {
					return err
				}
				fmt.Fprintf(a.Stderr, "%s scaled to %d units\n", app.Name, app.Scale)
				if !waiting {
					return nil
				}
				return a.WaitSettled(cmd.Context(), mc, modelcmd.WaitSpec{Apps: []string{app.Name}, Scale: map[string]int{app.Name: app.Scale}}, limit)
			})
		},
	}
	mo.Add(cmd)
	wait.Add(cmd)
	return cmd
}

func (a *Commands) RemoveApplicationCmd() *cobra.Command {
	var mo modelcmd.ModelOpt
	var force bool
	cmd := &cobra.Command{
		Use:     "remove-application APPLICATION...",
		Short:   "Remove applications and their units",
		Example: "  drover remove-application web\n  drover remove-application web kv --force",
		Args:    modelcmd.MinArgs(1, "at least one application name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.WithModel(cmd.Context(), mo.Ref, func(mc *modelcmd.ModelConn) error {
				for _, app := range args {
					if err := mc.Client.RemoveApplication(cmd.Context(), mc.UUID, app, force); err != nil {
						return fmt.Errorf("removing %s: %w", app, err)
					}
					fmt.Fprintf(a.Stderr, "removing application %s\n", app)
				}
				return nil
			})
		},
	}
	mo.Add(cmd)
	cmd.Flags().BoolVar(&force, "force", false, "remove units at once, without waiting for their agents")
	return cmd
}

func (a *Commands) ExposeCmd(expose bool) *cobra.Command {
	var mo modelcmd.ModelOpt
	use, short := "expose APPLICATION", "Make an application's opened ports reachable"
	if !expose {
		use, short = "unexpose APPLICATION", "Close an application's ports to the outside"
	}
	cmd := &cobra.Command{
		Use:     use,
		Short:   short,
		Example: "  drover " + strings.Fields(use)[0] + " web",
		Args:    modelcmd.ExactArgs(1, "an application name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.WithModel(cmd.Context(), mo.Ref, func(mc *modelcmd.ModelConn) error {
				_, err := mc.Client.Expose(cmd.Context(), mc.UUID, args[0], expose)
				return err
			})
		},
	}
	mo.Add(cmd)
	return cmd
}
