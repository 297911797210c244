package cli

import (
	"github.com/spf13/cobra"

	"github.com/droverhq/drover/api"
)

// applicationView is what show-application prints of an application, in
// juju show-application's shape: the application's name over its details.
type applicationView struct {
	Charm       string                  `json:"charm" yaml:"charm"`
	CharmRev    int                     `json:"charm-rev" yaml:"charm-rev"`
	CharmSHA256 string                  `json:"charm-sha256" yaml:"charm-sha256"`
	Principal   bool                    `json:"principal" yaml:"principal"`
	Exposed     bool                    `json:"exposed" yaml:"exposed"`
	Remote      bool                    `json:"remote" yaml:"remote"`
	Life        string                  `json:"life" yaml:"life"`
	Scale       int                     `json:"scale" yaml:"scale"`
	Constraints string                  `json:"constraints,omitempty" yaml:"constraints,omitempty"`
	Status      string                  `json:"status,omitempty" yaml:"status,omitempty"`
	Message     string                  `json:"message,omitempty" yaml:"message,omitempty"`
	Version     string                  `json:"workload-version,omitempty" yaml:"workload-version,omitempty"`
	Endpoints   map[string]endpointView `json:"endpoints,omitempty" yaml:"endpoints,omitempty"`
}

type endpointView struct {
	Role      string `json:"role" yaml:"role"`
	Interface string `json:"interface" yaml:"interface"`
	Scope     string `json:"scope,omitempty" yaml:"scope,omitempty"`
	Limit     int    `json:"limit,omitempty" yaml:"limit,omitempty"`
}

func viewApplication(a *api.Application) applicationView {
	v := applicationView{Charm: a.CharmName, CharmRev: a.CharmRevision, CharmSHA256: a.CharmSHA256,
		Principal: !a.Subordinate, Exposed: a.Exposed, Life: string(a.Life), Scale: a.Scale,
		Constraints: a.Constraints, Status: a.Status.Status, Message: a.Status.Message, Version: a.WorkloadVersion}
	if a.Subordinate {
		v.Scale = 0 // its units follow its principals'
	}
	for _, ep := range a.Endpoints {
		if v.Endpoints == nil {
			v.Endpoints = map[string]endpointView{}
		}
		scope := ep.Scope
		if scope == "global" {
			scope = ""
		}
		v.Endpoints[ep.Name] = endpointView{Role: ep.Role, Interface: ep.Interface, Scope: scope, Limit: ep.Limit}
	}
	return v
}

func (a *App) showApplicationCmd() *cobra.Command {
	var mo modelOpt
	var format formatOpt
	cmd := &cobra.Command{
		Use:   "show-application APPLICATION...",
		Short: "Show applications' details",
		Long: `Shows each application's charm (name, revision and sha256), whether it is a
principal, exposed, its life, scale, constraints, status and endpoints, as
'juju show-application' does, keyed by the application's name. Its config
is 'drover config APPLICATION'.`,
		Example: "  drover show-application kv\n  drover show-application kv web --format json",
		Args:    minArgs(1, "at least one application name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := format.check(); err != nil {
				return err
			}
			mc, err := a.dialModel(cmd.Context(), mo.ref)
			if err != nil {
				return err
			}
			defer mc.client.Close()
			out := map[string]applicationView{}
			for _, name := range args {
				app, err := mc.client.Application(cmd.Context(), mc.uuid, name)
				if err != nil {
					return err
				}
				out[name] = viewApplication(app)
			}
			return writeFormatted(a.Stdout, format.value, out)
		},
	}
	mo.add(cmd)
	format.add(cmd, "yaml", "yaml", "json")
	return cmd
}
