package hubadmin

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/droverhq/drover/cli/internal/modelcmd"
	"github.com/droverhq/drover/internal/safetext"
)

// AddControllerCmd is 'drover add-controller'.
func (a *Commands) AddControllerCmd() *cobra.Command {
	var ctl modelcmd.ControllerOpt
	var caFile, region, cloud, org, joinToken string
	cmd := &cobra.Command{
		Use:   "add-controller NAME URL",
		Short: "Register a controller with the hub (hub administrators)",
		Long: `Registers a controller with the hub, which pins the controller's CA.
With --join-token (from 'drover create-hub-token', run against the
controller) the hub first makes the controller trust it: it sends the token
with the hub's URL and CA. Without one, the controller must already trust
the hub (droverd spoke --hub-url HUB --hub-ca HUB_CA).

--ca is the controller's CA certificate alone (as 'drover show-controller'
prints it), not a bundle. Registering a controller again, under the same
name and owner and with the same CA, records a new URL, region or cloud
(its administrators only). The hub learns the addresses of nodes added by
'drover enable-ha' by itself.`,
		Example: "  drover add-controller east https://10.0.0.5:17070 --ca east-ca.crt --region east --join-token drv1.eyJ...",
		Args:    modelcmd.ExactArgs(2, "NAME and URL"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ca, err := os.ReadFile(caFile)
			if err != nil {
				return modelcmd.UsageError{Err: fmt.Errorf("--ca: %w", err)}
			}
			body := map[string]string{"name": args[0], "url": args[1], "ca-cert": string(ca), "region": region, "cloud": cloud, "org": org}
			if joinToken != "" {
				body["join-token"] = joinToken
			}
			return a.HubCall(cmd.Context(), ctl.Name, http.MethodPost, "/v1/controllers", nil, body, func(out any) error {
				fmt.Fprintf(a.Stdout, "Controller %q registered in region %s.\n", args[0], region)
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&caFile, "ca", "", "the controller's CA certificate (PEM file, required)")
	cmd.Flags().StringVar(&region, "region", "", "region (required)")
	cmd.Flags().StringVar(&cloud, "cloud", "", "the cloud its region is in (default: localhost)")
	cmd.Flags().StringVar(&org, "org", "", "make the controller private to an organization")
	cmd.Flags().StringVar(&joinToken, "join-token", "", "hub token from 'drover create-hub-token' on the controller")
	ctl.Add(cmd)
	return cmd
}

// SetControllerDeprecatedCmd is jimmctl's set-controller-deprecated.
func (a *Commands) SetControllerDeprecatedCmd() *cobra.Command {
	var ctl modelcmd.ControllerOpt
	var undo bool
	cmd := &cobra.Command{
		Use:   "set-controller-deprecated NAME",
		Short: "Stop placing new models on a controller (its administrators)",
		Long: `Deprecates a controller registered with the hub (its administrators, as
with jimmctl): 'drover add-model' no longer places models on it, and one
that names it is refused, while the models on it go on as before. For
draining a controller before it is retired; 'drover controllers' shows it.
--false undoes it.`,
		Example: "  drover set-controller-deprecated east\n  drover set-controller-deprecated east --false",
		Args:    modelcmd.ExactArgs(1, "NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := a.HubDo(cmd.Context(), ctl.Name, http.MethodPatch, "/v1/controllers/"+url.PathEscape(args[0]), nil,
				map[string]bool{"deprecated": !undo}, nil); err != nil {
				return err
			}
			if undo {
				fmt.Fprintf(a.Stdout, "Controller %q takes new models again.\n", args[0])
			} else {
				fmt.Fprintf(a.Stdout, "Controller %q is deprecated: it takes no new models.\n", args[0])
			}
			return nil
		},
	}
	ctl.Add(cmd)
	cmd.Flags().BoolVar(&undo, "false", false, "let the controller take new models again")
	return cmd
}

// SetModelOwnerCmd gives a model a new owner at a hub, as jimmctl
// import-model --owner does.
func (a *Commands) SetModelOwnerCmd() *cobra.Command {
	var ctl modelcmd.ControllerOpt
	cmd := &cobra.Command{
		Use:   "set-model-owner MODEL USER",
		Short: "Give a model a new owner (its organization's administrators, at a hub)",
		Long: `Makes USER the owner of MODEL at the hub, as jimmctl import-model --owner
does: for a model the hub found on its controller (created there directly),
which has no owner, or when its owner leaves. USER is an email, a service
account's client id or an identity id, of someone of the model's
organization who has logged in; they get admin access to the model. The
previous owner keeps the access they hold until it is revoked ('drover
revoke'). Only the administrators of the model's organization (and of the
hub) may. MODEL is a name, OWNER/NAME or a UUID, as 'drover models' shows.`,
		Example: "  drover set-model-owner found-db bob@example.com\n  drover set-model-owner alice@example.com/shop ci-deploy",
		Args:    modelcmd.ExactArgs(2, "MODEL and USER"),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := a.hubModelUUID(cmd, ctl.Name, args[0])
			if err != nil {
				return err
			}
			var m struct {
				Name  string `json:"name"`
				Owner string `json:"owner"`
			}
			if err := a.HubDo(cmd.Context(), ctl.Name, http.MethodPatch, "/v1/models/"+id, nil,
				map[string]string{"owner": args[1]}, &m); err != nil {
				return err
			}
			fmt.Fprintf(a.Stdout, "Model %q is now owned by %s.\n", m.Name, safetext.Terminal(m.Owner))
			return nil
		},
	}
	ctl.Add(cmd)
	return cmd
}

// RemoveControllerCmd is 'drover remove-controller'.
func (a *Commands) RemoveControllerCmd() *cobra.Command {
	var ctl modelcmd.ControllerOpt
	var force, yes bool
	cmd := &cobra.Command{
		Use:   "remove-controller NAME",
		Short: "Remove a controller from the hub (its administrators)",
		Long: `Makes the hub forget a registered controller: its record, the grants on it,
and its place in the hub's model listing. The controller itself is not
touched: it keeps running, and keeps trusting the hub until its own
superuser runs 'drover remove-hub-trust' against it.

A controller that still hosts models is refused, with their names: destroy
them first, or pass --force to make the hub forget them as well (they keep
running on the controller, out of the hub's reach). Registered again with
'drover add-controller' (within 90 days), a controller's models come back
into the listing as they were: their owners and grants restored.`,
		Example: "  drover remove-controller east\n  drover remove-controller east --force -y",
		Args:    modelcmd.ExactArgs(1, "NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !yes {
				what := fmt.Sprintf("The hub will forget controller %q.", args[0])
				if force {
					what = fmt.Sprintf("The hub will forget controller %q and every model on it (they keep running on the controller).", args[0])
				}
				if err := a.Confirm(what); err != nil {
					return err
				}
			}
			var q url.Values
			if force {
				q = url.Values{"force": {"true"}}
			}
			return a.HubCall(cmd.Context(), ctl.Name, http.MethodDelete, "/v1/controllers/"+url.PathEscape(args[0]), q, nil, func(out any) error {
				doc, _ := out.(map[string]any)
				forgotten, _ := doc["forgotten-models"].([]any)
				fmt.Fprintf(a.Stdout, "Controller %q removed from the hub.\n", args[0])
				if len(forgotten) > 0 {
					names := make([]string, len(forgotten))
					for i, m := range forgotten {
						names[i] = fmt.Sprint(m)
					}
					fmt.Fprintf(a.Stdout, "The hub forgot the models on it, which keep running there: %s.\n", strings.Join(names, ", "))
				}
				fmt.Fprintln(a.Stdout, "The controller still trusts the hub until its superuser runs 'drover remove-hub-trust' against it.")
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&force, "force", false, "also forget the models the controller still hosts")
	modelcmd.AddYesFlags(cmd, &yes)
	ctl.Add(cmd)
	return cmd
}

// GrantCmd is grant or revoke.
func (a *Commands) GrantCmd(revoke bool) *cobra.Command {
	var ctl modelcmd.ControllerOpt
	var group bool
	use, short, method := "grant", "Grant a user or group access to a model, controller or organization", http.MethodPost
	if revoke {
		use, short, method = "revoke", "Revoke a user's or group's access", http.MethodDelete
	}
	cmd := &cobra.Command{
		Use:   use + " USER|GROUP LEVEL MODEL|CONTROLLER",
		Short: short,
		Long: `Levels: on a model read, write, admin, audit_viewer; on a controller login,
add-model, superuser, audit_viewer; on an organization (org:NAME) member,
add-model, admin, audit_viewer. A model is named by UUID or by name; USER is
an email, a service account's client id, or "everyone"; with --group,
ORG/NAME. As in JAAS, an email nobody has logged in with yet may be
granted access (or added to a group) ahead of that person's first login,
which takes it over when the identity provider vouches for the email.

Each level includes the ones before it; as in Juju, revoking a level also
revokes those above it and leaves the one below (revoking write leaves
read; revoking read removes all access).`,
		Example: "  drover grant bob@example.com read prod\n  drover grant --group demo/ops write prod",
		Args:    modelcmd.ExactArgs(3, "USER|GROUP, LEVEL and MODEL|CONTROLLER"),
		RunE: func(cmd *cobra.Command, args []string) error {
			body := map[string]string{"level": args[1]}
			if group {
				body["group"] = args[0]
			} else {
				body["user"] = args[0]
			}
			target := args[2]
			switch {
			case strings.HasPrefix(target, "org:"):
				body["organization"] = strings.TrimPrefix(target, "org:")
			case a.isHubController(cmd.Context(), ctl.Name, target):
				body["controller"] = target
			default:
				uuid, err := a.hubModelUUID(cmd, ctl.Name, target)
				if err != nil {
					return err
				}
				body["model"] = uuid
			}
			return a.HubCall(cmd.Context(), ctl.Name, method, "/v1/grants", nil, body, a.NotePending)
		},
	}
	cmd.Flags().BoolVar(&group, "group", false, "the subject is a group (ORG/NAME)")
	ctl.Add(cmd)
	return cmd
}

func (a *Commands) isHubController(ctx context.Context, ctl, name string) bool {
	c, err := a.Dial(ctl)
	if err != nil {
		return false
	}
	defer c.Client.Close()
	return c.Client.Call(ctx, http.MethodGet, "/v1/controllers/"+url.PathEscape(name), nil, nil, nil) == nil
}

func (a *Commands) hubModelUUID(cmd *cobra.Command, ctl, ref string) (string, error) {
	c, err := a.Dial(ctl)
	if err != nil {
		return "", err
	}
	defer c.Client.Close()
	m, err := a.FindModel(cmd.Context(), c, ref)
	if err != nil {
		return "", err
	}
	return m.UUID, nil
}
