package application

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/charm"
	"github.com/droverhq/drover/cli/internal/modelcmd"
)

// ConfigCmd is 'drover config'.
func (a *Commands) ConfigCmd() *cobra.Command {
	var mo modelcmd.ModelOpt
	var format modelcmd.FormatOpt
	var reset []string
	var file string
	cmd := &cobra.Command{
		Use:   "config APPLICATION [KEY[=VALUE]...]",
		Short: "Show or change an application's config",
		Long: `With only APPLICATION, shows every option with its type, default, value and
source, in juju config's shape: {application, charm, settings: {KEY:
{value, type, default, description, source}}, application-config: {trust:
{...}}}. With KEY, prints that option's value. With KEY=VALUE, sets options
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
					_, err := mc.Client.Model(mc.UUID).SetApplicationConfig(cmd.Context(), app,
						api.ConfigChange{Set: typed, SetStrings: strs, Reset: modelcmd.SplitList(reset)})
					return err
				}
				cfg, err := mc.Client.Model(mc.UUID).ApplicationConfig(cmd.Context(), app)
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
				app, err := mc.Client.Model(mc.UUID).Application(cmd.Context(), app)
				if err != nil {
					return err
				}
				return modelcmd.WriteFormatted(a.Stdout, format.Value, viewConfig(cfg, app.Trust))
			})
		},
	}
	mo.Add(cmd)
	format.Add(cmd, "yaml", "yaml", "json")
	cmd.Flags().StringArrayVar(&reset, "reset", nil, "options to reset (comma-separated or repeated)")
	cmd.Flags().StringVar(&file, "file", "", "YAML file of settings: {application: {key: value}}")
	return cmd
}

// viewConfig is an application's config as juju config prints it: the
// charm's options under settings, and Juju's own application options
// (trust) under application-config. Maps, so that the keys come out
// sorted as Juju's do.
func viewConfig(cfg *api.ApplicationConfig, trusted bool) map[string]any {
	settings := make(map[string]any, len(cfg.Settings))
	for k, o := range cfg.Settings {
		settings[k] = viewOption(o)
	}
	trust := api.ConfigOption{Type: "bool", Description: "Does this application have access to trusted credentials",
		Default: false, Value: trusted, Source: "default"}
	if trusted {
		trust.Source = "user"
	}
	return map[string]any{
		"application":        cfg.Application,
		"charm":              cfg.Charm,
		"settings":           settings,
		"application-config": map[string]any{"trust": viewOption(trust)},
	}
}

// viewOption is one option as juju config prints it; an option without a
// default or a value has no such key.
func viewOption(o api.ConfigOption) map[string]any {
	v := map[string]any{"type": o.Type, "source": o.Source}
	if o.Description != "" {
		v["description"] = o.Description
	}
	if o.Default != nil {
		v["default"] = o.Default
	}
	if o.Value != nil {
		v["value"] = o.Value
	}
	return v
}

// AddUnitCmd is 'drover add-unit'.
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
				res, err := mc.Client.Model(mc.UUID).AddUnits(cmd.Context(), args[0], api.AddUnitsRequest{NumUnits: n, To: placements})
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

// RemoveUnitCmd is 'drover remove-unit'.
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
					if err := mc.Client.Model(mc.UUID).RemoveUnit(cmd.Context(), u, force); err != nil {
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

// ScaleCmd is 'drover scale'.
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
				app, err := mc.Client.Model(mc.UUID).Scale(cmd.Context(), args[0], n)
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

// RemoveApplicationCmd is 'drover remove-application'.
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
					if err := mc.Client.Model(mc.UUID).RemoveApplication(cmd.Context(), app, force); err != nil {
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

// ExposeCmd is 'drover expose' (expose) or 'drover unexpose'.
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
				_, err := mc.Client.Model(mc.UUID).Expose(cmd.Context(), args[0], expose)
				return err
			})
		},
	}
	mo.Add(cmd)
	return cmd
}
