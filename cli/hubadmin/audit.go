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
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/droverhq/drover/cli/internal/modelcmd"
	"github.com/droverhq/drover/internal/safetext"
)

// AuditCmd is 'drover audit'.
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
  drover audit --org acme --result denied --text grant
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
	cmd.Flags().StringVar(&f.org, "org", "", "only entries of this organization")
	cmd.Flags().StringVar(&f.result, "result", "", "only entries with this result: ok, denied, error or pending")
	cmd.Flags().StringVar(&f.text, "text", "", "only entries whose actor, operation, path, model or controller name, or details contain this text (any case)")
	cmd.Flags().StringVar(&f.after, "after", "", "read on from this cursor (the one a previous run printed)")
	cmd.Flags().IntVar(&limit, "limit", 100, "at most this many entries (0: all)")
	cmd.Flags().StringVar(&format, "format", "tabular", "tabular, json or csv")
	ctl.Add(cmd)
	return cmd
}

// auditFilter are audit's flags that choose the entries.
type auditFilter struct {
	user, model, forController, since, until, operation, after string
	org, result, text                                          string
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
		"operation": f.operation, "after": f.after, "org": f.org, "result": f.result, "q": f.text} {
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
