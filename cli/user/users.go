package user

import (
	"fmt"
	"net/http"
	"net/url"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/cli/internal/modelcmd"
	"github.com/droverhq/drover/internal/safetext"
)

// UsersCmd is 'drover users'.
func (a *Commands) UsersCmd() *cobra.Command {
	var ctl modelcmd.ControllerOpt
	var format modelcmd.FormatOpt
	var org string
	cmd := &cobra.Command{
		Use:     "users",
		Aliases: []string{"list-users"},
		Short:   "List the people and service accounts of your organizations (at a hub)",
		Long: `Lists the hub's people and service accounts that you administer: those of
the organizations you administer (a hub administrator: all of them), and
yourself. Someone granted access by email who has not logged in yet shows
as "never connected".`,
		Example: "  drover users\n  drover users --org demo --format yaml",
		Args:    modelcmd.ExactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := format.Check(); err != nil {
				return err
			}
			var q url.Values
			if org != "" {
				q = url.Values{"org": {org}}
			}
			var out struct {
				Users []api.HubUser `json:"users"`
			}
			if err := a.HubDo(cmd.Context(), ctl.Name, http.MethodGet, "/v1/users", q, nil, &out); err != nil {
				return err
			}
			return a.printUsers(out.Users, format.Value)
		},
	}
	ctl.Add(cmd)
	format.Add(cmd, "tabular", "tabular", "json", "yaml")
	cmd.Flags().StringVar(&org, "org", "", "only this organization's")
	return cmd
}

func (a *Commands) printUsers(users []api.HubUser, format string) error {
	if users == nil {
		users = []api.HubUser{}
	}
	if format != "tabular" {
		return modelcmd.WriteFormatted(a.Stdout, format, map[string]any{"users": users})
	}
	if len(users) == 0 {
		fmt.Fprintln(a.Stderr, "No users to display.")
		return nil
	}
	tw := tabwriter.NewWriter(a.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "Name\tDisplay name\tKind\tOrg\tDate created\tLast connection")
	now := a.Now()
	for _, u := range users {
		last := "never connected"
		if u.LastLogin != nil {
			last = modelcmd.FriendlyAgo(*u.LastLogin, now)
		}
		name := u.Name
		if u.Disabled {
			name += " (disabled)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", safetext.Terminal(name), safetext.Terminal(u.DisplayName), u.Kind, u.Org,
			modelcmd.FriendlyAgo(u.CreatedAt, now), last)
	}
	return tw.Flush()
}

// UserStateCmd is disable-user (disable) or enable-user.
func (a *Commands) UserStateCmd(disable bool) *cobra.Command {
	var ctl modelcmd.ControllerOpt
	use, short, verb := "enable-user", "Let a disabled user log in and use the hub again", "enable"
	long := `Enables a user disabled with 'drover disable-user' (their organization's
administrators): they log in again, with the access they had.`
	if disable {
		use, short, verb = "disable-user", "Stop a user from logging in or using the hub", "disable"
		long = `Disables a person or service account (their organization's administrators):
they can no longer log in, and a token they hold stops working from their
next request. Their access stays, inert, for 'drover enable-user'; to take
it away for good, use 'drover remove-user'. USER is an email, a service
account's client id, or an identity id.`
	}
	cmd := &cobra.Command{
		Use:     use + " USER",
		Short:   short,
		Long:    long,
		Example: "  drover " + use + " bob@example.com",
		Args:    modelcmd.ExactArgs(1, "USER"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.HubDo(cmd.Context(), ctl.Name, http.MethodPost, "/v1/users/"+url.PathEscape(args[0])+"/"+verb, nil, nil, nil)
		},
	}
	ctl.Add(cmd)
	return cmd
}

// RemoveUserCmd is 'drover remove-user'.
func (a *Commands) RemoveUserCmd() *cobra.Command {
	var ctl modelcmd.ControllerOpt
	var yes bool
	cmd := &cobra.Command{
		Use:   "remove-user USER",
		Short: "Remove a user and all their access from the hub",
		Long: `Removes a person or service account (their organization's administrators),
with every grant and group membership they hold; the audit log keeps their
name. Someone who owns models is refused, with the models' names. A
removed person who logs in again starts with no access.`,
		Example: "  drover remove-user bob@example.com -y",
		Args:    modelcmd.ExactArgs(1, "USER"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !yes {
				if err := a.Confirm(fmt.Sprintf("This will remove %s and all their access.", args[0])); err != nil {
					return err
				}
			}
			return a.HubDo(cmd.Context(), ctl.Name, http.MethodDelete, "/v1/users/"+url.PathEscape(args[0]), nil, nil, nil)
		},
	}
	ctl.Add(cmd)
	modelcmd.AddYesFlags(cmd, &yes)
	return cmd
}

// ShowUserCmd is 'drover show-user'.
func (a *Commands) ShowUserCmd() *cobra.Command {
	var ctl modelcmd.ControllerOpt
	var format modelcmd.FormatOpt
	cmd := &cobra.Command{
		Use:   "show-user [USER]",
		Short: "Show a user's details (at a hub)",
		Long: `Shows a person or service account as the hub knows them: kind,
organization, when they were created and last connected, whether they are
disabled, and the groups they are in. Without USER, yourself; others'
details are for their organization's administrators.`,
		Example: "  drover show-user\n  drover show-user bob@example.com --format json",
		Args:    modelcmd.RangeArgs(0, 1, "at most a USER"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := format.Check(); err != nil {
				return err
			}
			who := ""
			if len(args) == 1 {
				who = args[0]
			} else {
				c, err := a.Dial(ctl.Name)
				if err != nil {
					return err
				}
				who = c.Account.User
				c.Client.Close()
			}
			var u api.HubUser
			if err := a.HubDo(cmd.Context(), ctl.Name, http.MethodGet, "/v1/users/"+url.PathEscape(who), nil, nil, &u); err != nil {
				return err
			}
			return modelcmd.WriteFormatted(a.Stdout, format.Value, userView(u, a.Now()))
		},
	}
	ctl.Add(cmd)
	format.Add(cmd, "yaml", "yaml", "json")
	return cmd
}

// userView is show-user's output, keyed by name as Juju's show-user is,
// its times as people read them.
func userView(u api.HubUser, now time.Time) map[string]any {
	v := map[string]any{"kind": u.Kind, "org": u.Org, "date-created": modelcmd.FriendlyAgo(u.CreatedAt, now),
		"last-connection": "never connected", "groups": u.Groups}
	if u.Groups == nil {
		v["groups"] = []string{}
	}
	if u.LastLogin != nil {
		v["last-connection"] = modelcmd.FriendlyAgo(*u.LastLogin, now)
	}
	if u.DisplayName != "" {
		v["display-name"] = u.DisplayName
	}
	if u.Disabled {
		v["disabled"] = true
	}
	return map[string]any{u.Name: v}
}
