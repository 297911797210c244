package cli

import (
	"fmt"
	"net/http"
	"net/url"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
)

// hubUser is one entry of a hub's GET /v1/users.
type hubUser struct {
	Name        string     `json:"name" yaml:"name"`
	DisplayName string     `json:"display-name,omitempty" yaml:"display-name,omitempty"`
	Kind        string     `json:"kind" yaml:"kind"`
	Org         string     `json:"org" yaml:"org"`
	Pending     bool       `json:"pending,omitempty" yaml:"pending,omitempty"`
	CreatedAt   time.Time  `json:"created-at" yaml:"created-at"`
	LastLogin   *time.Time `json:"last-connection,omitempty" yaml:"last-connection,omitempty"`
}

func (a *App) usersCmd() *cobra.Command {
	var ctl controllerOpt
	var format formatOpt
	var org string
	cmd := &cobra.Command{
		Use:   "users",
		Short: "List the people and service accounts of your organizations (at a hub)",
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
				Users []hubUser `json:"users"`
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

func (a *App) printUsers(users []hubUser, format string) error {
	if users == nil {
		users = []hubUser{}
	}
	if format != "tabular" {
		return writeFormatted(a.Stdout, format, map[string]any{"users": users})
	}
	tw := tabwriter.NewWriter(a.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "Name\tDisplay name\tKind\tOrg\tDate created\tLast connection")
	now := a.Now()
	for _, u := range users {
		last := "never connected"
		if u.LastLogin != nil {
			last = friendlyAgo(*u.LastLogin, now)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", u.Name, u.DisplayName, u.Kind, u.Org, friendlyAgo(u.CreatedAt, now), last)
	}
	return tw.Flush()
}
