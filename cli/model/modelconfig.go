package model

import (
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/cli/internal/modelcmd"
)

// ModelConfigCmd is 'drover model-config'.
func (a *Commands) ModelConfigCmd() *cobra.Command {
	var mo modelcmd.ModelOpt
	var format modelcmd.FormatOpt
	var reset []string
	cmd := &cobra.Command{
		Use:   "model-config [KEY[=VALUE]...]",
		Short: "Show or change a model's config",
		Long: `With no arguments, lists the model's config: each key with where its value
comes from (default or model) and the value; --format json or yaml prints
juju model-config's shape, {KEY: {Value, Source}}. With KEY, prints that
value. With KEY=VALUE, sets it (values are parsed as YAML: 3 is a number,
true a boolean); a key the model's config does not hold is set with a
warning, as Juju warns of a possible misspelling. --reset returns keys to
their defaults.`,
		Example: "  drover model-config\n  drover model-config --format json\n  drover model-config update-status-hook-interval=10m\n  drover model-config --reset update-status-hook-interval",
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := format.Check(); err != nil {
				return err
			}
			set, get := modelcmd.SplitConfigArgs(args)
			if len(get) > 0 && (len(set) > 0 || len(reset) > 0) {
				return modelcmd.Usagef("cannot get and set config in one command")
			}
			if len(get) > 1 {
				return modelcmd.Usagef("can only get one key at a time")
			}
			return a.WithModel(cmd.Context(), mo.Ref, func(mc *modelcmd.ModelConn) error {
				cfg, err := mc.Client.Model(mc.UUID).Config(cmd.Context())
				if err != nil {
					return err
				}
				if len(set) > 0 || len(reset) > 0 {
					params, err := modelcmd.ParseActionParams(set, false)
					if err != nil {
						return err
					}
					warnUnknownKeys(a.Stderr, cfg, params)
					_, err = mc.Client.Model(mc.UUID).SetConfig(cmd.Context(), api.ConfigChange{Set: params, Reset: modelcmd.SplitList(reset)})
					return err
				}
				if len(get) == 1 {
					v, ok := cfg[get[0]]
					if !ok {
						return fmt.Errorf("key %q is not set in model %q", get[0], mc.Model)
					}
					if format.Value == "tabular" {
						fmt.Fprintln(a.Stdout, v)
						return nil
					}
					return modelcmd.WriteFormatted(a.Stdout, format.Value, v)
				}
				return writeModelConfig(a.Stdout, format.Value, cfg)
			})
		},
	}
	mo.Add(cmd)
	format.Add(cmd, "tabular", "tabular", "json", "yaml")
	cmd.Flags().StringArrayVar(&reset, "reset", nil, "keys to reset to their defaults (comma-separated or repeated)")
	return cmd
}

// configValue is one model config key as juju model-config prints it
// with --format json (Juju's JSON field names are capitalised).
type configValue struct {
	Value  any    `json:"Value"`
	Source string `json:"Source"`
}

// configSource is where a model config value comes from, in Juju's words:
// "default" when it is Drover's default for the key, "model" otherwise.
func configSource(key string, v any) string {
	if d, ok := api.ModelConfigDefaults()[key]; ok && reflect.DeepEqual(d, v) {
		return "default"
	}
	return "model"
}

// writeModelConfig prints a model's config: juju model-config's table
// (Attribute, From, Value) or its {KEY: {Value, Source}} shape.
func writeModelConfig(w io.Writer, format string, cfg map[string]any) error {
	switch format {
	case "json":
		out := make(map[string]configValue, len(cfg))
		for k, v := range cfg {
			out[k] = configValue{Value: v, Source: configSource(k, v)}
		}
		return modelcmd.WriteFormatted(w, format, out)
	case "yaml": // Juju's YAML names them in lower case
		out := make(map[string]any, len(cfg))
		for k, v := range cfg {
			out[k] = map[string]any{"value": v, "source": configSource(k, v)}
		}
		return modelcmd.WriteFormatted(w, format, out)
	}
	t := &modelcmd.Table{}
	t.Row("Attribute", "From", "Value")
	for _, k := range modelcmd.SortedKeys(cfg) {
		t.Row(k, configSource(k, cfg[k]), fmt.Sprint(cfg[k]))
	}
	return t.Write(w)
}

// warnUnknownKeys warns of keys being set that the model's config does not
// hold, in Juju's words; they are set all the same (a charm or a later
// version may read them).
func warnUnknownKeys(w io.Writer, cfg, set map[string]any) {
	for _, k := range modelcmd.SortedKeys(set) {
		if _, ok := cfg[k]; ok {
			continue
		}
		if _, ok := api.ModelConfigDefaults()[k]; ok {
			continue
		}
		fmt.Fprintf(w, "WARNING key %q is not defined in the current model configuration: possible misspelling\n", k)
	}
}

// ModelConstraintsCmd is 'drover model-constraints'.
func (a *Commands) ModelConstraintsCmd() *cobra.Command {
	var mo modelcmd.ModelOpt
	var format modelcmd.FormatOpt
	cmd := &cobra.Command{
		Use:     "model-constraints",
		Aliases: []string{"get-model-constraints"},
		Short:   "Show the constraints of a model's new machines",
		Long: `Shows the model's constraints, as 'juju model-constraints' does: the
defaults of its new machines, under each application's own constraints
('drover constraints APP').`,
		Example: "  drover model-constraints\n  drover model-constraints --format json",
		Args:    modelcmd.ExactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := format.Check(); err != nil {
				return err
			}
			return a.WithModel(cmd.Context(), mo.Ref, func(mc *modelcmd.ModelConn) error {
				cons, err := mc.Client.Model(mc.UUID).ModelConstraints(cmd.Context())
				if err != nil {
					return err
				}
				if format.Value != "plain" {
					return modelcmd.WriteFormatted(a.Stdout, format.Value, constraintsMap(cons))
				}
				fmt.Fprintln(a.Stdout, cons)
				return nil
			})
		},
	}
	mo.Add(cmd)
	format.Add(cmd, "plain", "plain", "json", "yaml")
	return cmd
}

// constraintsMap is constraints as Juju's --format json prints them: an
// object of the keys set (sizes in M, as numbers).
func constraintsMap(cons string) map[string]any {
	out := map[string]any{}
	for _, f := range strings.Fields(cons) {
		k, v, _ := strings.Cut(f, "=")
		if v == "" {
			continue
		}
		if n, err := strconv.ParseUint(strings.TrimSuffix(v, "M"), 10, 64); err == nil {
			out[k] = n
			continue
		}
		out[k] = v
	}
	return out
}

// SetModelConstraintsCmd is 'drover set-model-constraints'.
func (a *Commands) SetModelConstraintsCmd() *cobra.Command {
	var mo modelcmd.ModelOpt
	cmd := &cobra.Command{
		Use:   "set-model-constraints KEY=VALUE...",
		Short: "Set the constraints of a model's new machines",
		Long: `Sets the model's constraints, as 'juju set-model-constraints' does (they
replace the model's earlier ones): every new machine of the model gets
them, under its application's own constraints key by key ('drover
set-constraints APP' and add-machine --constraints win). Existing machines
keep theirs. Keys as set-constraints'; sizes take M, G, T or P (M when
bare).`,
		Example: "  drover set-model-constraints mem=4G cores=2\n  drover set-model-constraints mem=",
		Args:    modelcmd.MinArgs(1, "constraints (KEY=VALUE)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			cons, err := api.ParseConstraints(strings.Join(args, " "))
			if err != nil {
				return modelcmd.Usagef("%v", err)
			}
			return a.WithModel(cmd.Context(), mo.Ref, func(mc *modelcmd.ModelConn) error {
				_, err := mc.Client.Model(mc.UUID).SetModelConstraints(cmd.Context(), cons)
				return err
			})
		},
	}
	mo.Add(cmd)
	return cmd
}
