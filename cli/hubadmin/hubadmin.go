package hubadmin

import (
	"cmp"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/droverhq/drover/cli/internal/modelcmd"
	"github.com/droverhq/drover/internal/safetext"
)

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

func (a *Commands) AuditCmd() *cobra.Command {
	var ctl modelcmd.ControllerOpt
	var f auditFilter
	var format string
	var limit int
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Show the hub's audit log (audit viewers)",
		Long: `Shows the audit log's entries you may read, newest first: every change,
login and permission change through the hub. --limit bounds how many
(0: all of them, page by page); when more remain, the command says how to
read on (--after). A model is named as its organization names it: when the
entries span several organizations, the table has an ORG column (the CSV
always has it). RESULT is ok, denied, error, or pending: a change the hub
recorded before making it, and could not record the end of.`,
		Example: `  drover audit --model prod --since 2026-01-01 --format csv
  drover audit --operation login --since 24h
  drover audit --user bob@example.com --since 2026-11-01T09:00:00Z --until 2026-11-08 --limit 0`,
		Args: modelcmd.ExactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if limit < 0 {
				return modelcmd.UsageError{Err: errors.New("--limit must be 0 (all) or more")}
			}
			if format != "tabular" && format != "json" && format != "csv" {
				return modelcmd.UsageError{Err: fmt.Errorf("--format %q: want one of tabular, json, csv", format)}
			}
			q, err := f.query(a.Now())
			if err != nil {
				return err
			}
			all, next, err := a.readAudit(cmd.Context(), ctl.Name, q, limit)
			if err != nil {
				return err
			}
			if err := a.printAudit(map[string]any{"entries": all}, format); err != nil {
				return err
			}
			if next != "" {
				fmt.Fprintf(a.Stderr, "More entries: add --after %s (or --limit 0 for all).\n", next)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&f.user, "user", "", "only this user (an email, a service account's client id, or an identity id)")
	cmd.Flags().StringVar(&f.model, "model", "", "only this model: a name (every model that had it, destroyed ones included) or a UUID")
	cmd.Flags().StringVar(&f.forController, "for-controller", "", "only this controller behind the hub: a name (removed controllers included) or a UUID")
	cmd.Flags().StringVar(&f.since, "since", "", "only entries at or after this time: RFC 3339, a date (UTC midnight) or how long ago (30m, 24h, 7d)")
	cmd.Flags().StringVar(&f.until, "until", "", "only entries before this time (as --since)")
	cmd.Flags().StringVar(&f.operation, "operation", "", "only this operation, as the OPERATION column shows it, or its first word for a family (login: every kind of login; remove: every removal; model: the hub's model adopted and forgotten)")
	cmd.Flags().StringVar(&f.after, "after", "", "read on from this cursor (the one a previous run printed)")
	cmd.Flags().IntVar(&limit, "limit", 100, "at most this many entries (0: all)")
	cmd.Flags().StringVar(&format, "format", "tabular", "tabular, json or csv")
	ctl.Add(cmd)
	return cmd
}

// auditFilter are audit's flags that choose the entries.
type auditFilter struct {
	user, model, forController, since, until, operation, after string
}

// query is the filter as GET /v1/audit takes it, times in RFC 3339.
func (f *auditFilter) query(now time.Time) (url.Values, error) {
	since, until := f.since, f.until
	for _, t := range []struct {
		flag string
		v    *string
	}{{"since", &since}, {"until", &until}} {
		if *t.v == "" {
			continue
		}
		at, err := auditTime(*t.v, now)
		if err != nil {
			return nil, modelcmd.UsageError{Err: fmt.Errorf("--%s %q: %w", t.flag, *t.v, err)}
		}
		*t.v = at.Format(time.RFC3339)
	}
	q := url.Values{}
	for k, v := range map[string]string{"user": f.user, "model": f.model, "controller": f.forController, "since": since, "until": until,
		"operation": f.operation, "after": f.after} {
		if v != "" {
			q.Set(k, v)
		}
	}
	return q, nil
}

// readAudit reads the entries q chooses, page by page, up to limit (0:
// all); next is the cursor to read on from when more remain.
func (a *Commands) readAudit(ctx context.Context, ctl string, q url.Values, limit int) (all []any, next string, _ error) {
	for {
		page := 1000
		if limit > 0 {
			page = min(page, limit-len(all))
		}
		q.Set("limit", strconv.Itoa(page))
		var doc map[string]any
		if err := a.HubCall(ctx, ctl, http.MethodGet, "/v1/audit", q, nil, func(out any) error {
			doc, _ = out.(map[string]any)
			return nil
		}); err != nil {
			return nil, "", err
		}
		entries, _ := doc["entries"].([]any)
		all = append(all, entries...)
		next, _ = doc["next"].(string)
		if next == "" || (limit > 0 && len(all) >= limit) {
			return all, next, nil
		}
		q.Set("after", next)
	}
}

func (a *Commands) printAudit(out any, format string) error {
	doc, _ := out.(map[string]any)
	entries, _ := doc["entries"].([]any)
	if format == "json" {
		if entries == nil {
			entries = []any{} // none: an empty list, not null
		}
		enc := json.NewEncoder(a.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(entries)
	}
	// A model's name is its organization's: when the entries span several
	// (a hub-wide auditor's), the table says whose; CSV always does.
	orgs := map[string]bool{}
	for _, e := range entries {
		m, _ := e.(map[string]any)
		orgs[fmt.Sprint(m["org"])] = true
	}
	withOrg := format == "csv" || len(orgs) > 1
	rows := [][]string{{"TIME", "ACTOR", "OPERATION", "TARGET", "MODEL", "STATUS", "RESULT"}}
	if withOrg {
		rows[0] = slices.Insert(rows[0], 4, "ORG")
	}
	for _, e := range entries {
		m, _ := e.(map[string]any)
		model := "-"
		for _, k := range []string{"model-uuid", "model"} { // its name now; the UUID of a model gone
			if v, ok := m[k].(string); ok && v != "" {
				model = v
			}
		}
		at := fmt.Sprint(m["at"])
		if format != "csv" { // csv and json keep the whole time
			at = modelcmd.TableTime(at)
		}
		actor, _ := m["actor"].(string) // none for a refused login that named nobody
		row := []string{at, cmp.Or(actor, "-"), fmt.Sprint(m["operation"]), auditTarget(m),
			model, modelcmd.JSONInt(m["status"]), fmt.Sprint(m["result"])}
		if withOrg {
			org, _ := m["org"].(string)
			row = slices.Insert(row, 4, cmp.Or(org, "-"))
		}
		rows = append(rows, row)
	}
	// An entry holds text others wrote (even a failed login's client id):
	// made safe to open in a spreadsheet, or to print in a terminal.
	safe := safetext.Terminal
	if format == "csv" {
		safe = func(s string) string { return safetext.CSVCell(safetext.Terminal(s)) }
	}
	for _, r := range rows[1:] {
		for i := range r {
			r[i] = safe(r[i])
		}
	}
	if format == "csv" {
		cw := csv.NewWriter(a.Stdout)
		if err := cw.WriteAll(rows); err != nil {
			return err
		}
		return cw.Error()
	}
	tw := tabwriter.NewWriter(a.Stdout, 0, 4, 2, ' ', 0)
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
}

// auditTime reads --since and --until: an RFC 3339 time, a date (its
// midnight, UTC), or how long before now (a Go duration, or days and weeks:
// 7d, 2w).
func auditTime(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	ago, err := time.ParseDuration(s)
	if n, unit := strings.TrimRight(s, "dw"), s[len(strings.TrimRight(s, "dw")):]; err != nil && len(unit) == 1 {
		if days, e := strconv.ParseUint(n, 10, 16); e == nil {
			ago, err = time.Duration(days)*24*time.Hour, nil
			if unit == "w" {
				ago *= 7
			}
		}
	}
	if err != nil || ago < 0 {
		return time.Time{}, errors.New("give a time (2026-11-22T09:00:00Z), a date (2026-11-22) or how long ago (30m, 24h, 7d)")
	}
	return now.Add(-ago).UTC().Truncate(time.Second), nil
}

// auditTarget is what an audit entry acted on: the entity the hub named
// (an application, a unit, a relation), else the grant's or group's
// subject from the recorded request, with a grant's controller or
// organization as grant takes them (a model's is in the MODEL column);
// "-" when none.
func auditTarget(entry map[string]any) string {
	details, _ := entry["details"].(map[string]any)
	if t, ok := details["target"].(string); ok && t != "" {
		return t
	}
	body, _ := details["body"].(map[string]any)
	field := func(k string) string {
		if v, ok := body[k].(string); ok && v != "[redacted]" {
			return v
		}
		return ""
	}
	var parts []string
	for _, k := range []string{"user", "group", "level", "name"} {
		if v := field(k); v != "" {
			parts = append(parts, v)
		}
	}
	if field("level") != "" {
		if c := field("controller"); c != "" {
			parts = append(parts, "controller:"+c)
		}
		if o := field("organization"); o != "" {
			parts = append(parts, "org:"+o)
		}
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, " ")
}
