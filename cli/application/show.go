package application

import (
	"cmp"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/cli/internal/modelcmd"
)

// applicationView is what show-application prints of an application, in
// juju show-application's shape: the application's name over its details.
type applicationView struct {
	Charm       string                  `json:"charm" yaml:"charm"`
	CharmRev    int                     `json:"charm-rev" yaml:"charm-rev"`
	CharmSHA256 string                  `json:"charm-sha256" yaml:"charm-sha256"`
	Principal   bool                    `json:"principal" yaml:"principal"`
	Exposed     bool                    `json:"exposed" yaml:"exposed"`
	Trust       bool                    `json:"trust" yaml:"trust"`
	Remote      bool                    `json:"remote" yaml:"remote"`
	Life        string                  `json:"life" yaml:"life"`
	Scale       int                     `json:"scale" yaml:"scale"`
	Constraints string                  `json:"constraints,omitempty" yaml:"constraints,omitempty"`
	Base        string                  `json:"base,omitempty" yaml:"base,omitempty"`
	Channel     string                  `json:"channel,omitempty" yaml:"channel,omitempty"`
	Storage     map[string]string       `json:"storage,omitempty" yaml:"storage,omitempty"`
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
		Principal: !a.Subordinate, Exposed: a.Exposed, Trust: a.Trust, Life: string(a.Life), Scale: a.Scale,
		Constraints: a.Constraints, Base: a.Base, Channel: a.Channel, Storage: a.Storage, Status: a.Status.Status, Message: a.Status.Message, Version: a.WorkloadVersion}
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

// ShowApplicationCmd is 'drover show-application'.
func (a *Commands) ShowApplicationCmd() *cobra.Command {
	var mo modelcmd.ModelOpt
	var format modelcmd.FormatOpt
	cmd := &cobra.Command{
		Use:   "show-application APPLICATION...",
		Short: "Show applications' details",
		Long: `Shows each application's charm (name, revision and sha256), whether it is a
principal, exposed, its life, scale, constraints, status and endpoints, as
'juju show-application' does, keyed by the application's name. Its config
is 'drover config APPLICATION'.`,
		Example: "  drover show-application kv\n  drover show-application kv web --format json",
		Args:    modelcmd.MinArgs(1, "at least one application name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := format.Check(); err != nil {
				return err
			}
			return a.WithModel(cmd.Context(), mo.Ref, func(mc *modelcmd.ModelConn) error {
				out := map[string]applicationView{}
				for _, name := range args {
					app, err := mc.Client.Model(mc.UUID).Application(cmd.Context(), name)
					if err != nil {
						return err
					}
					out[name] = viewApplication(app)
				}
				return modelcmd.WriteFormatted(a.Stdout, format.Value, out)
			})
		},
	}
	mo.Add(cmd)
	format.Add(cmd, "yaml", "yaml", "json")
	return cmd
}

// unitView is what show-unit prints of a unit, in juju show-unit's shape.
type unitView struct {
	// Charm is the charm's URL as Juju names a local charm: local:NAME-REV.
	Charm           string                 `json:"charm" yaml:"charm"`
	Leader          bool                   `json:"leader" yaml:"leader"`
	Life            string                 `json:"life" yaml:"life"`
	Machine         string                 `json:"machine,omitempty" yaml:"machine,omitempty"`
	Principal       string                 `json:"principal,omitempty" yaml:"principal,omitempty"`
	PublicAddress   string                 `json:"public-address,omitempty" yaml:"public-address,omitempty"`
	OpenedPorts     []string               `json:"opened-ports" yaml:"opened-ports"`
	WorkloadVersion string                 `json:"workload-version,omitempty" yaml:"workload-version,omitempty"`
	WorkloadStatus  api.StatusDetail       `json:"workload-status" yaml:"workload-status"`
	JujuStatus      api.StatusDetail       `json:"juju-status" yaml:"juju-status"`
	RelationInfo    []api.UnitRelationInfo `json:"relation-info,omitempty" yaml:"relation-info,omitempty"`
}

// charmURL names a charm as Juju names a local one (every Drover charm
// comes from the client): local:NAME-REV.
func charmURL(name string, rev int) string {
	return fmt.Sprintf("local:%s-%d", name, rev)
}

// findUnit finds a unit (principal or subordinate) in a model's status.
func findUnit(fs *api.FullStatus, name string) (api.UnitStatus, string, bool) {
	for _, as := range fs.Applications {
		for un, u := range as.Units {
			if un == name {
				return u, "", true
			}
			if s, ok := u.Subordinates[name]; ok {
				return s, un, true
			}
		}
	}
	return api.UnitStatus{}, "", false
}

// ShowUnitCmd is 'drover show-unit'.
func (a *Commands) ShowUnitCmd() *cobra.Command {
	var mo modelcmd.ModelOpt
	var format modelcmd.FormatOpt
	cmd := &cobra.Command{
		Use:   "show-unit UNIT...",
		Short: "Show units' details, with their relations' data",
		Long: `Shows each unit's charm, leadership, life, machine, address, opened ports
and statuses, and its relation-info, as 'juju show-unit' does: for each
relation, the related application's data bag, the unit's own bag, and the
related units in scope with theirs.

Relation data may hold credentials, so it needs write access to the model
(Juju shows it to readers): with read access the unit is shown without it.`,
		Example: "  drover show-unit kv/0\n  drover show-unit kv/0 web/0 --format json",
		Args:    modelcmd.MinArgs(1, "at least one unit (app/N)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, u := range args {
				if app, n, ok := strings.Cut(u, "/"); !ok || app == "" || n == "" {
					return modelcmd.Usagef("%q is not a unit name (app/N)", u)
				}
			}
			mc, fs, err := a.ModelStatus(cmd.Context(), &format, mo.Ref)
			if err != nil {
				return err
			}
			defer mc.Client.Close()
			out := map[string]unitView{}
			withheld := false
			for _, name := range args {
				us, principal, ok := findUnit(fs, name)
				if !ok {
					return fmt.Errorf("unit %q not found in model %q; 'drover status' lists them", name, mc.Model)
				}
				app := fs.Applications[strings.SplitN(name, "/", 2)[0]]
				v := unitView{Charm: charmURL(app.CharmName, app.CharmRev), Leader: us.Leader, Life: cmp.Or(us.JujuStatus.Life, "alive"),
					Machine: us.Machine, Principal: principal, PublicAddress: us.PublicAddress, OpenedPorts: us.OpenPorts,
					WorkloadVersion: app.Version, WorkloadStatus: us.WorkloadStatus, JujuStatus: us.JujuStatus}
				if v.OpenedPorts == nil {
					v.OpenedPorts = []string{}
				}
				v.RelationInfo, err = mc.Client.Model(mc.UUID).UnitRelationInfo(cmd.Context(), name)
				if errors.Is(err, api.ErrForbidden) {
					withheld, err = true, nil
				}
				if err != nil {
					return err
				}
				out[name] = v
			}
			if err := modelcmd.WriteFormatted(a.Stdout, format.Value, out); err != nil {
				return err
			}
			if withheld {
				fmt.Fprintln(a.Stderr, "Relation data is not shown: it needs write access to the model.")
			}
			return nil
		},
	}
	mo.Add(cmd)
	format.Add(cmd, "yaml", "yaml", "json")
	return cmd
}

// ConstraintsCmd is 'drover constraints'.
func (a *Commands) ConstraintsCmd() *cobra.Command {
	var mo modelcmd.ModelOpt
	cmd := &cobra.Command{
		Use:     "constraints APPLICATION",
		Aliases: []string{"get-constraints"},
		Short:   "Show the constraints of an application's new machines",
		Example: "  drover constraints kv",
		Args:    modelcmd.ExactArgs(1, "an application name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.WithModel(cmd.Context(), mo.Ref, func(mc *modelcmd.ModelConn) error {
				app, err := mc.Client.Model(mc.UUID).Application(cmd.Context(), args[0])
				if err != nil {
					return err
				}
				fmt.Fprintln(a.Stdout, app.Constraints)
				return nil
			})
		},
	}
	mo.Add(cmd)
	return cmd
}

// SetConstraintsCmd is 'drover set-constraints'.
func (a *Commands) SetConstraintsCmd() *cobra.Command {
	var mo modelcmd.ModelOpt
	cmd := &cobra.Command{
		Use:   "set-constraints APPLICATION KEY=VALUE...",
		Short: "Set the constraints of an application's new machines",
		Long: `Sets the constraints the machines of an application's new units are made
with, as 'juju set-constraints' does; existing machines keep theirs. Keys:
arch, container, cores, cpu-power, mem, root-disk, root-disk-source, tags,
instance-role, instance-type, spaces, virt-type, zones, allocate-public-ip,
image-id. Sizes take M, G, T or P (M when bare); KEY= resets one.`,
		Example: "  drover set-constraints kv mem=4G cores=2\n  drover set-constraints kv mem=",
		Args:    modelcmd.MinArgs(2, "an application name and constraints"),
		RunE: func(cmd *cobra.Command, args []string) error {
			cons, err := api.ParseConstraints(strings.Join(args[1:], " "))
			if err != nil {
				return modelcmd.Usagef("%v", err)
			}
			return a.WithModel(cmd.Context(), mo.Ref, func(mc *modelcmd.ModelConn) error {
				_, err = mc.Client.Model(mc.UUID).SetConstraints(cmd.Context(), args[0], cons)
				return err
			})
		},
	}
	mo.Add(cmd)
	return cmd
}

// TrustCmd is 'drover trust'.
func (a *Commands) TrustCmd() *cobra.Command {
	var mo modelcmd.ModelOpt
	var remove bool
	var scope string
	cmd := &cobra.Command{
		Use:   "trust APPLICATION [--remove] [--scope cluster]",
		Short: "Trust an application with the model's cloud credential",
		Long: `Trusts the application's units with the model's cloud credential, as
'juju trust' does (what credential-get reads where the cloud has one; the
local cloud has none). --remove takes it back. Either way its units run
config-changed. 'deploy --trust' and a bundle's trust: true trust an
application from the start; show-application and 'config APPLICATION'
(application-config.trust) say whether it is. --scope takes Juju's only
value, cluster, which grants the same trust (Drover has no narrower one).`,
		Example: "  drover trust aws-integrator\n  drover trust aws-integrator --scope cluster\n  drover trust aws-integrator --remove",
		Args:    modelcmd.ExactArgs(1, "an application name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.Flags().Changed("scope") && scope != "cluster" {
				return modelcmd.Usagef("--scope %q: only cluster scope is supported", scope)
			}
			return a.WithModel(cmd.Context(), mo.Ref, func(mc *modelcmd.ModelConn) error {
				_, err := mc.Client.Model(mc.UUID).SetTrust(cmd.Context(), args[0], !remove)
				return err
			})
		},
	}
	mo.Add(cmd)
	cmd.Flags().BoolVar(&remove, "remove", false, "take the trust back")
	cmd.Flags().StringVar(&scope, "scope", "cluster", "what the trust covers: cluster (the only scope)")
	return cmd
}
