package application

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/charm"
	"github.com/droverhq/drover/cli/internal/modelcmd"
)

// nameValues parses repeated NAME=VALUE flags (--resource, --storage).
func nameValues(flag string, vals []string) (map[string]string, error) {
	out := map[string]string{}
	for _, v := range vals {
		k, val, ok := strings.Cut(v, "=")
		if !ok || k == "" || val == "" {
			return nil, modelcmd.Usagef("--%s %q: want NAME=VALUE", flag, v)
		}
		if _, dup := out[k]; dup {
			return nil, modelcmd.Usagef("--%s: %q given twice", flag, k)
		}
		out[k] = val
	}
	return out, nil
}

// checkResources checks --resource NAME=PATH against the charm before
// anything is uploaded: each name a file resource the charm declares,
// each path a readable regular file.
func checkResources(meta *charm.Meta, given map[string]string) error {
	for _, name := range modelcmd.SortedKeys(given) {
		res, ok := meta.Resources[name]
		if !ok {
			names := modelcmd.SortedKeys(meta.Resources)
			if len(names) == 0 {
				return modelcmd.Usagef("--resource %s: charm %q has no resources", name, meta.Name)
			}
			return modelcmd.Usagef("--resource %s: charm %q has no resource %q (it has %s)", name, meta.Name, name, strings.Join(names, ", "))
		}
		if res.Type != charm.ResourceFile {
			return modelcmd.Usagef("--resource %s: an %s resource cannot be uploaded to a machine model; only file resources", name, res.Type)
		}
		st, err := os.Stat(given[name])
		if err != nil {
			return fmt.Errorf("--resource %s: %w", name, err)
		}
		if !st.Mode().IsRegular() {
			return modelcmd.Usagef("--resource %s: %s is not a regular file", name, given[name])
		}
	}
	return nil
}

// uploadResources uploads each NAME=PATH file to the model's controller.
func uploadResources(ctx context.Context, mc *modelcmd.ModelConn, given map[string]string) (map[string]api.ResourceContent, error) {
	if len(given) == 0 {
		return nil, nil
	}
	out := map[string]api.ResourceContent{}
	names := modelcmd.SortedKeys(given)
	for _, name := range names {
		f, err := os.Open(given[name])
		if err != nil {
			return nil, fmt.Errorf("--resource %s: %w", name, err)
		}
		c, err := mc.Client.Model(mc.UUID).UploadResource(ctx, f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("upload resource %q: %w", name, err)
		}
		out[name] = *c
	}
	return out, nil
}

// bundleResources turns a bundle application's resources into paths: a
// string is a file relative to the bundle's directory; a revision number
// names a charm store's revision, which drover has not.
func bundleResources(app string, res map[string]any, dir string) (map[string]string, error) {
	out := map[string]string{}
	for name, v := range res {
		p, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("application %q: resource %q is %v: drover uploads local files only (give a path); there is no charm store to take a revision from", app, name, v)
		}
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		out[name] = p
	}
	return out, nil
}

// checkOrigin checks --base and --channel locally, as the controller will.
func checkOrigin(base, channel string) error {
	if base != "" {
		if _, err := charm.ParseBase(base); err != nil {
			return modelcmd.Usagef("--base %q: %v", base, err)
		}
	}
	if channel != "" {
		if _, err := charm.ParseChannel(channel); err != nil {
			return modelcmd.Usagef("--channel %q: %v", channel, err)
		}
	}
	return nil
}

// checkStorage checks --storage NAME=DIRECTIVE against the charm.
func checkStorage(meta *charm.Meta, storage map[string]string) error {
	for _, name := range modelcmd.SortedKeys(storage) {
		d, err := charm.ParseStorageDirective(storage[name])
		if err == nil {
			err = meta.CheckStorage(name, d)
		}
		if err != nil {
			return modelcmd.Usagef("--storage %s: %v", name, err)
		}
	}
	return nil
}

// resourceView is one resource as `resources --format json|yaml` prints it.
type resourceView struct {
	Name     string `json:"name" yaml:"name"`
	Type     string `json:"type" yaml:"type"`
	Path     string `json:"path" yaml:"path"`
	Revision int    `json:"revision" yaml:"revision"`
	SHA256   string `json:"sha256" yaml:"sha256"`
	Size     int64  `json:"size" yaml:"size"`
	Origin   string `json:"origin" yaml:"origin"`
	Uploaded string `json:"timestamp" yaml:"timestamp"`
}

// ResourcesCmd is 'drover resources'.
func (a *Commands) ResourcesCmd() *cobra.Command {
	var mo modelcmd.ModelOpt
	var format modelcmd.FormatOpt
	cmd := &cobra.Command{
		Use:     "resources APPLICATION",
		Aliases: []string{"list-resources"},
		Short:   "Show an application's resources",
		Long: `Shows the resources uploaded for an application (deploy --resource,
attach-resource, refresh --resource): name, who supplied it (an upload) and
its revision, as 'juju resources' does.`,
		Example: "  drover resources web\n  drover resources web --format json",
		Args:    modelcmd.ExactArgs(1, "an application name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := format.Check(); err != nil {
				return err
			}
			return a.WithModel(cmd.Context(), mo.Ref, func(mc *modelcmd.ModelConn) error {
				list, err := mc.Client.Model(mc.UUID).Resources(cmd.Context(), args[0])
				if err != nil {
					return err
				}
				if format.Value != "tabular" {
					out := []resourceView{}
					for _, r := range list {
						out = append(out, resourceView{Name: r.Name, Type: r.Type, Path: r.Path, Revision: r.Revision, SHA256: r.SHA256,
							Size: r.Size, Origin: r.Origin, Uploaded: r.Uploaded.UTC().Format(time.RFC3339)})
					}
					return modelcmd.WriteFormatted(a.Stdout, format.Value, map[string]any{"resources": out})
				}
				if len(list) == 0 {
					fmt.Fprintf(a.Stderr, "No resources to display.\n")
					return nil
				}
				t := &modelcmd.Table{}
				t.Row("Resource", "Supplied by", "Revision")
				for _, r := range list {
					t.Row(r.Name, r.Origin, fmt.Sprint(r.Revision))
				}
				return t.Write(a.Stdout)
			})
		},
	}
	mo.Add(cmd)
	format.Add(cmd, "tabular", "tabular", "yaml", "json")
	return cmd
}

// AttachResourceCmd is 'drover attach-resource'.
func (a *Commands) AttachResourceCmd() *cobra.Command {
	var mo modelcmd.ModelOpt
	cmd := &cobra.Command{
		Use:   "attach-resource APPLICATION NAME=PATH...",
		Short: "Upload new content for an application's resources",
		Long: `Uploads files for an application's file resources, as 'juju
attach-resource' does: each resource whose content changes gets the next
revision, and the units run upgrade-charm, whose resource-get sees the new
content. The same content again changes nothing.`,
		Example: "  drover attach-resource web site=./site-v2.tar.gz",
		Args:    modelcmd.MinArgs(2, "an application name and NAME=PATH"),
		RunE: func(cmd *cobra.Command, args []string) error {
			res, err := nameValues("resource", args[1:])
			if err != nil {
				return err
			}
			return a.WithModel(cmd.Context(), mo.Ref, func(mc *modelcmd.ModelConn) error {
				return a.attachResources(cmd.Context(), mc, refresh{app: args[0], resources: res})
			})
		},
	}
	mo.Add(cmd)
	return cmd
}
