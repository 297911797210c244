package model

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/cli/internal/modelcmd"
)

// cloudPlace is one cloud/region where models can be added, and the
// controllers that serve it.
type cloudPlace struct {
	Cloud, Region string
	Controllers   []string
}

// cloudView is one cloud as clouds lists it: its regions, each with the
// controllers that serve it. There is no default region: a hub places a
// model given only the cloud in any of them, by health and load.
type cloudView struct {
	Regions map[string][]string `json:"regions" yaml:"regions"`
}

// CloudsCmd is 'drover clouds'.
func (a *Commands) CloudsCmd() *cobra.Command {
	var ctl modelcmd.ControllerOpt
	var format modelcmd.FormatOpt
	cmd := &cobra.Command{
		Use:   "clouds",
		Short: "List the clouds and regions models can be added in",
		Long: `Lists the clouds where 'drover add-model' can place a model, with their
regions: at a hub, those of the controllers behind it that you can see
(each region with the controllers that serve it); at a controller, its own.
add-model takes a place as CLOUD/REGION, REGION or CLOUD.`,
		Example: "  drover clouds\n  drover clouds --format yaml",
		Args:    modelcmd.ExactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := format.Check(); err != nil {
				return err
			}
			name, places, err := a.places(cmd.Context(), ctl.Name)
			if err != nil {
				return err
			}
			view := cloudsView(places)
			if format.Value != "tabular" {
				return modelcmd.WriteFormatted(a.Stdout, format.Value, map[string]any{"clouds": view})
			}
			if len(view) == 0 {
				fmt.Fprintf(a.Stderr, "No clouds available on %s.\n", name)
				return nil
			}
			fmt.Fprintf(a.Stdout, "Clouds available on %s:\n", name)
			tw := tabwriter.NewWriter(a.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "Cloud\tRegions\tControllers")
			for _, c := range slices.Sorted(maps.Keys(view)) {
				v := view[c]
				var ctls []string
				for _, cs := range v.Regions {
					ctls = append(ctls, cs...)
				}
				slices.Sort(ctls)
				regions := strings.Join(slices.Sorted(maps.Keys(v.Regions)), ", ")
				fmt.Fprintf(tw, "%s\t%s\t%s\n", c, regions, strings.Join(slices.Compact(ctls), ", "))
			}
			return tw.Flush()
		},
	}
	ctl.Add(cmd)
	format.Add(cmd, "tabular", "tabular", "json", "yaml")
	return cmd
}

// RegionsCmd is 'drover regions'.
func (a *Commands) RegionsCmd() *cobra.Command {
	var ctl modelcmd.ControllerOpt
	var format modelcmd.FormatOpt
	cmd := &cobra.Command{
		Use:     "regions CLOUD",
		Short:   "List a cloud's regions",
		Long:    `Lists the regions of a cloud (see 'drover clouds'), each with the controllers that serve it.`,
		Example: "  drover regions localhost",
		Args:    modelcmd.ExactArgs(1, "CLOUD"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := format.Check(); err != nil {
				return err
			}
			name, places, err := a.places(cmd.Context(), ctl.Name)
			if err != nil {
				return err
			}
			v, ok := cloudsView(places)[args[0]]
			if !ok {
				return fmt.Errorf("cloud %q not found on %s (see 'drover clouds')", args[0], name)
			}
			if format.Value != "tabular" {
				return modelcmd.WriteFormatted(a.Stdout, format.Value, map[string]any{"regions": v.Regions})
			}
			tw := tabwriter.NewWriter(a.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "Region\tControllers")
			for _, r := range slices.Sorted(maps.Keys(v.Regions)) {
				fmt.Fprintf(tw, "%s\t%s\n", r, strings.Join(v.Regions[r], ", "))
			}
			return tw.Flush()
		},
	}
	ctl.Add(cmd)
	format.Add(cmd, "tabular", "tabular", "json", "yaml")
	return cmd
}

// cloudsView groups places by cloud.
func cloudsView(places []cloudPlace) map[string]cloudView {
	out := map[string]cloudView{}
	for _, p := range places {
		v, ok := out[p.Cloud]
		if !ok {
			v = cloudView{Regions: map[string][]string{}}
		}
		v.Regions[p.Region] = slices.Sorted(slices.Values(append(v.Regions[p.Region], p.Controllers...)))
		out[p.Cloud] = v
	}
	return out
}

// places returns where models can go: at a hub, the cloud and region of
// each controller behind it the caller can see; at a controller, its own.
func (a *Commands) places(ctx context.Context, ctl string) (string, []cloudPlace, error) {
	c, err := a.Dial(ctl)
	if err != nil {
		return "", nil, err
	}
	defer c.Client.Close()
	if c.Details.Hub {
		var out struct {
			Controllers []struct{ Name, Cloud, Region string }
		}
		if err := c.Client.Call(ctx, http.MethodGet, "/v1/controllers", nil, nil, &out); err != nil {
			return "", nil, err
		}
		var ps []cloudPlace
		for _, x := range out.Controllers {
			ps = append(ps, cloudPlace{Cloud: cmp.Or(x.Cloud, api.DefaultCloud), Region: x.Region, Controllers: []string{x.Name}})
		}
		return fmt.Sprintf("hub %q", c.Name), ps, nil
	}
	info, err := c.Client.ControllerInfo(ctx)
	if err != nil {
		return "", nil, err
	}
	return fmt.Sprintf("controller %q", c.Name), []cloudPlace{{Cloud: cmp.Or(info.Cloud, api.DefaultCloud),
		Region: cmp.Or(info.Region, "localhost"), Controllers: []string{c.Name}}}, nil
}
