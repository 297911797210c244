package cli

import (
	"fmt"
	"net/http"
	"net/url"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/internal/safetext"
)

func (a *App) usersCmd() *cobra.Command {
	var ctl controllerOpt
	var format formatOpt
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
		Args:    exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := format.check(); err != nil {
				return err
			}
			var q url.Values
			if org != "" {
				q = url.Values{"org": {org}}
			}
			var out struct {
				Users []api.HubUser `json:"users"`
			}
			if err := a.hubDo(cmd.Context(), ctl.name, http.MethodGet, "/v1/users", q, nil, &out); err != nil {
				return err
			}
			return a.printUsers(out.Users, format.value)
		},
	}
	ctl.add(cmd)
	format.add(cmd, "tabular", "tabular", "json", "yaml")
	cmd.Flags().StringVar(&org, "org", "", "only this organization's")
	return cmd
}

func (a *App) printUsers(users []api.HubUser, format string) error {
	if users == nil {
		users = []api.HubUser{}
	}
	if format != "tabular" {
		return writeFormatted(a.Stdout, format, map[string]any{"users": users})
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
			last = friendlyAgo(*u.LastLogin, now)
		}
		name := u.Name
		if u.Disabled {
			name += " (disabled)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", safetext.Terminal(name), safetext.Terminal(u.DisplayName), u.Kind, u.Org,
			friendlyAgo(u.CreatedAt, now), last)
	}
	return tw.Flush()
}

// userStateCmd is disable-user (disable) or enable-user.
func (a *App) userStateCmd(disable bool) *cobra.Command {
	var ctl controllerOpt
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
		Args:    exactArgs(1, "USER"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.hubDo(cmd.Context(), ctl.name, http.MethodPost, "/v1/users/"+url.PathEscape(args[0])+"/"+verb, nil, nil, nil)
		},
	}
	ctl.add(cmd)
	return cmd
}

func (a *App) removeUserCmd() *cobra.Command {
	var ctl controllerOpt
	var yes bool
	cmd := &cobra.Command{
		Use:   "remove-user USER",
		Short: "Remove a user and all their access from the hub",
		Long: `Removes a person or service account (their organization's administrators),
with every grant and group membership they hold; the audit log keeps their
name. Someone who owns models is refused, with the models' names. A
removed person who logs in again starts with no access.`,
		Example: "  drover remove-user bob@example.com -y",
		Args:    exactArgs(1, "USER"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !yes {
				if err := a.confirm(fmt.Sprintf("This will remove %s and all their access.", args[0])); err != nil {
					return err
				}
			}
			return a.hubDo(cmd.Context(), ctl.name, http.MethodDelete, "/v1/users/"+url.PathEscape(args[0]), nil, nil, nil)
		},
	}
	ctl.add(cmd)
	addYesFlags(cmd, &yes)
	return cmd
}

func (a *App) showUserCmd() *cobra.Command {
	var ctl controllerOpt
	var format formatOpt
	cmd := &cobra.Command{
		Use:   "show-user [USER]",
		Short: "Show a user's details (at a hub)",
		Long: `Shows a person or service account as the hub knows them: kind,
organization, when they were created and last connected, whether they are
disabled, and the groups they are in. Without USER, yourself; others'
details are for their organization's administrators.`,
		Example: "  drover show-user\n  drover show-user bob@example.com --format json",
		Args:    rangeArgs(0, 1, "at most a USER"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := format.check(); err != nil {
				return err
			}
			who := ""
			if len(args) == 1 {
				who = args[0]
			} else {
				c, err := a.dial(ctl.name)
				if err != nil {
					return err
				}
				who = c.account.User
				c.client.Close()
			}
			var u api.HubUser
			if err := a.hubDo(cmd.Context(), ctl.name, http.MethodGet, "/v1/users/"+url.PathEscape(who), nil, nil, &u); err != nil {
				return err
			}
			return writeFormatted(a.Stdout, format.value, userView(u, a.Now()))
		},
	}
	ctl.add(cmd)
	format.add(cmd, "yaml", "yaml", "json")
	return cmd
}

// userView is show-user's output, keyed by name as Juju's show-user is,
// its times as people read them.
func userView(u api.HubUser, now time.Time) map[string]any {
	v := map[string]any{"kind": u.Kind, "org": u.Org, "date-created": friendlyAgo(u.CreatedAt, now),
		"last-connection": "never connected", "groups": u.Groups}
	if u.Groups == nil {
		v["groups"] = []string{}
	}
	if u.LastLogin != nil {
		v["last-connection"] = friendlyAgo(*u.LastLogin, now)
	}
	if u.DisplayName != "" {
		v["display-name"] = u.DisplayName
	}
	if u.Disabled {
		v["disabled"] = true
	}
	return map[string]any{u.Name: v}
}
