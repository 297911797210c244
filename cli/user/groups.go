package user

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/spf13/cobra"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/cli/internal/modelcmd"
)

// A hub's groups: add-group, groups, show-group, rename-group,
// remove-group, add-member and remove-member.

// AddGroupCmd is 'drover add-group'.
func (a *Commands) AddGroupCmd() *cobra.Command {
	var ctl modelcmd.ControllerOpt
	cmd := &cobra.Command{
		Use:     "add-group ORG/NAME",
		Short:   "Create a group in an organization",
		Example: "  drover add-group demo/ops",
		Args:    modelcmd.ExactArgs(1, "ORG/NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			org, name, ok := strings.Cut(args[0], "/")
			if !ok {
				return modelcmd.UsageError{Err: fmt.Errorf("group %q: want ORG/NAME", args[0])}
			}
			return a.HubCall(cmd.Context(), ctl.Name, http.MethodPost, "/v1/groups", nil, map[string]string{"org": org, "name": name}, nil)
		},
	}
	ctl.Add(cmd)
	return cmd
}

// groupRef checks that arg names a group as ORG/NAME.
func groupRef(arg string) (org, name string, err error) {
	org, name, ok := strings.Cut(arg, "/")
	if !ok || org == "" || name == "" {
		return "", "", modelcmd.Usagef("group %q: want ORG/NAME", arg)
	}
	return org, name, nil
}

// groupPath is the hub's path of the group ORG/NAME (one escaped segment).
func groupPath(org, name string) string { return "/v1/groups/" + url.PathEscape(org+"/"+name) }

// GroupsCmd is 'drover groups'.
func (a *Commands) GroupsCmd() *cobra.Command {
	var ctl modelcmd.ControllerOpt
	var format modelcmd.FormatOpt
	var org string
	cmd := &cobra.Command{
		Use:     "groups",
		Aliases: []string{"list-groups"},
		Short:   "List the groups of your organizations",
		Long: `Lists the groups of the organizations you are a member of (a hub
administrator: every group), by organization then name, with how many
members each has. --org lists one organization's groups.`,
		Example: "  drover groups\n  drover groups --org demo --format yaml",
		Args:    modelcmd.ExactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := format.Check(); err != nil {
				return err
			}
			q := url.Values{}
			if org != "" {
				q.Set("org", org)
			}
			var out struct {
				Groups []api.Group `json:"groups"`
			}
			if err := a.HubDo(cmd.Context(), ctl.Name, http.MethodGet, "/v1/groups", q, nil, &out); err != nil {
				return err
			}
			return a.printGroups(out.Groups, format.Value)
		},
	}
	cmd.Flags().StringVar(&org, "org", "", "only this organization's groups")
	ctl.Add(cmd)
	format.Add(cmd, "tabular", "tabular", "json", "yaml")
	return cmd
}

// printGroups prints groups as a table, or as {"groups": [...]} in JSON or
// YAML.
func (a *Commands) printGroups(groups []api.Group, format string) error {
	if format != "tabular" {
		if groups == nil {
			groups = []api.Group{} // none: an empty list, not null
		}
		return modelcmd.WriteFormatted(a.Stdout, format, map[string]any{"groups": groups})
	}
	if len(groups) == 0 {
		fmt.Fprintln(a.Stderr, "No groups to display.")
		return nil
	}
	t := &modelcmd.Table{}
	t.Right(2)
	t.Row("Org", "Name", "Members", "Created")
	for _, g := range groups {
		t.Row(g.Org, g.Name, g.MemberCount, g.CreatedAt.UTC().Format(modelcmd.TableTimeLayout))
	}
	return t.Write(a.Stdout)
}

// ShowGroupCmd is 'drover show-group'.
func (a *Commands) ShowGroupCmd() *cobra.Command {
	var ctl modelcmd.ControllerOpt
	var format modelcmd.FormatOpt
	cmd := &cobra.Command{
		Use:   "show-group ORG/NAME",
		Short: "Show a group's members and the access granted to it",
		Long: `Shows a group of an organization you are a member of: its members (people
by email, service accounts by client id) and the access granted to it
('drover grant --group'), which each member holds besides their own.`,
		Example: "  drover show-group demo/ops\n  drover show-group demo/ops --format json",
		Args:    modelcmd.ExactArgs(1, "ORG/NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := format.Check(); err != nil {
				return err
			}
			org, name, err := groupRef(args[0])
			if err != nil {
				return err
			}
			var d api.GroupDetails
			if err := a.HubDo(cmd.Context(), ctl.Name, http.MethodGet, groupPath(org, name), nil, nil, &d); err != nil {
				return err
			}
			return modelcmd.WriteFormatted(a.Stdout, format.Value, groupView(d))
		},
	}
	ctl.Add(cmd)
	format.Add(cmd, "yaml", "yaml", "json")
	return cmd
}

// groupView is show-group's output: the group keyed by ORG/NAME, as
// show-model keys a model by its name, with its members and grants as
// lists (empty ones too).
func groupView(d api.GroupDetails) map[string]any {
	if d.Members == nil {
		d.Members = []api.GroupMember{}
	}
	if d.Grants == nil {
		d.Grants = []api.GroupGrant{}
	}
	return map[string]any{d.Org + "/" + d.Name: d}
}

// RemoveGroupCmd is 'drover remove-group'.
func (a *Commands) RemoveGroupCmd() *cobra.Command {
	var ctl modelcmd.ControllerOpt
	var yes bool
	cmd := &cobra.Command{
		Use:   "remove-group ORG/NAME",
		Short: "Remove a group and the access granted to it",
		Long: `Removes a group (administrators of its organization), with its memberships
and every grant made to it: its members lose the access they had through
the group, not what was granted to them directly. Asks for confirmation on
a terminal; elsewhere pass -y.`,
		Example: "  drover remove-group demo/ops -y",
		Args:    modelcmd.ExactArgs(1, "ORG/NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			org, name, err := groupRef(args[0])
			if err != nil {
				return err
			}
			if !yes {
				if err := a.Confirm(fmt.Sprintf("This will remove group %q: its members lose the access granted to it.", args[0])); err != nil {
					return err
				}
			}
			return a.HubDo(cmd.Context(), ctl.Name, http.MethodDelete, groupPath(org, name), nil, nil, nil)
		},
	}
	ctl.Add(cmd)
	modelcmd.AddYesFlags(cmd, &yes)
	return cmd
}

// RenameGroupCmd is 'drover rename-group'.
func (a *Commands) RenameGroupCmd() *cobra.Command {
	var ctl modelcmd.ControllerOpt
	cmd := &cobra.Command{
		Use:   "rename-group ORG/NAME NEW-NAME",
		Short: "Rename a group",
		Long: `Renames a group within its organization (administrators of the
organization). Its members and the access granted to it stay; from then on
it is ORG/NEW-NAME. NEW-NAME follows add-group's rules: lowercase letters,
digits, dots, hyphens and underscores.`,
		Example: "  drover rename-group demo/ops sre",
		Args:    modelcmd.ExactArgs(2, "ORG/NAME and NEW-NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			org, name, err := groupRef(args[0])
			if err != nil {
				return err
			}
			to := args[1]
			if o, n, ok := strings.Cut(to, "/"); ok { // ORG/NEW-NAME, in the same organization
				if o != org {
					return modelcmd.Usagef("rename-group: %q is not in organization %s: a group stays in its organization", to, org)
				}
				to = n
			}
			return a.HubDo(cmd.Context(), ctl.Name, http.MethodPatch, groupPath(org, name), nil, map[string]string{"name": to}, nil)
		},
	}
	ctl.Add(cmd)
	return cmd
}

// MemberCmd is add-member (add) or remove-member. USER is an email, a
// service account's client id, or an identity id.
func (a *Commands) MemberCmd(add bool) *cobra.Command {
	var ctl modelcmd.ControllerOpt
	use, short, example := "add-member", "Add a user or service account to a group", "  drover add-member demo/ops bob@example.com\n  drover add-member demo/ops ci-deployer"
	if !add {
		use, short, example = "remove-member", "Remove a user or service account from a group", "  drover remove-member demo/ops bob@example.com"
	}
	cmd := &cobra.Command{
		Use:   use + " ORG/GROUP USER",
		Short: short,
		Long: short + ` (administrators of the group's organization). USER is an email, a
service account's client id, or an identity id; people and service accounts
exist once they have logged in.`,
		Example: example,
		Args:    modelcmd.ExactArgs(2, "ORG/GROUP and USER"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, _, ok := strings.Cut(args[0], "/"); !ok {
				return modelcmd.UsageError{Err: fmt.Errorf("group %q: want ORG/GROUP", args[0])}
			}
			members := "/v1/groups/" + url.PathEscape(args[0]) + "/members"
			if add {
				return a.HubCall(cmd.Context(), ctl.Name, http.MethodPost, members, nil, map[string]string{"user": args[1]}, a.NotePending)
			}
			return a.HubCall(cmd.Context(), ctl.Name, http.MethodDelete, members+"/"+url.PathEscape(args[1]), nil, nil, nil)
		},
	}
	ctl.Add(cmd)
	return cmd
}
