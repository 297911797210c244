package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"github.com/droverhq/drover/internal/safetext"
)

// formatOpt is the --format flag.
type formatOpt struct {
	value   string
	allowed []string
}

func (o *formatOpt) add(cmd *cobra.Command, def string, allowed ...string) {
	o.allowed = allowed
	cmd.Flags().StringVar(&o.value, "format", def, "output format: "+strings.Join(allowed, "|"))
	_ = cmd.RegisterFlagCompletionFunc("format", cobra.FixedCompletions(allowed, cobra.ShellCompDirectiveNoFileComp))
}

func (o *formatOpt) check() error {
	for _, f := range o.allowed {
		if o.value == f {
			return nil
		}
	}
	return usagef("--format %q: want one of %s", o.value, strings.Join(o.allowed, ", "))
}

// writeJSON writes v as one line of JSON, as Juju does.
func writeJSON(w io.Writer, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// writeYAML writes v as YAML with the JSON field names and order: the
// value goes through JSON (which is YAML) into a node tree, whose
// presentation styles are then reset to plain block style.
func writeYAMLOut(w io.Writer, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	var n yaml.Node
	if err := yaml.Unmarshal(data, &n); err != nil {
		return err
	}
	plain(&n)
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(&n); err != nil {
		return err
	}
	return enc.Close()
}

func plain(n *yaml.Node) {
	n.Style = 0
	for _, c := range n.Content {
		plain(c)
	}
}

// writeFormatted writes v as json or yaml.
func writeFormatted(w io.Writer, format string, v any) error {
	switch format {
	case "json":
		return writeJSON(w, v)
	case "yaml":
		return writeYAMLOut(w, v)
	}
	return fmt.Errorf("unsupported format %q", format)
}

// table collects rows and prints them in aligned columns (two spaces
// apart, no trailing blanks), like Juju's tabular output. A cell may carry
// a colour, applied after padding so ANSI codes never skew alignment.
type table struct {
	rows  [][]cell
	color bool
	// rightCols are right-aligned (numbers), except in the header row.
	rightCols map[int]bool
}

// right right-aligns columns (by index), as Juju does for counts.
func (t *table) right(cols ...int) {
	if t.rightCols == nil {
		t.rightCols = map[int]bool{}
	}
	for _, c := range cols {
		t.rightCols[c] = true
	}
}

type cell struct {
	text  string
	color string // ANSI SGR code, "" for none
}

// row adds a row. A cell's text may come from others (a charm's status
// message, a controller's answer): its control characters are shown as
// escapes, so that printing it cannot drive the terminal.
func (t *table) row(cells ...any) {
	r := make([]cell, len(cells))
	for i, c := range cells {
		switch v := c.(type) {
		case cell:
			r[i] = v
		case string:
			r[i] = cell{text: v}
		default:
			r[i] = cell{text: fmt.Sprint(v)}
		}
		r[i].text = safetext.Terminal(r[i].text)
	}
	t.rows = append(t.rows, r)
}

func (t *table) write(w io.Writer) error {
	var widths []int
	for _, r := range t.rows {
		for i, c := range r {
			if i >= len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], utf8.RuneCountInString(c.text))
		}
	}
	var b strings.Builder
	for ri, r := range t.rows {
		var line strings.Builder
		for i, c := range r {
			pad := strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c.text))
			text := c.text
			if t.color && c.color != "" && c.text != "" {
				text = "\x1b[" + c.color + "m" + c.text + "\x1b[0m"
			}
			switch {
			case ri > 0 && t.rightCols[i]:
				text = pad + text
			case i < len(r)-1:
				text += pad
			}
			if i < len(r)-1 {
				text += "  "
			}
			line.WriteString(text)
		}
		b.WriteString(strings.TrimRight(line.String(), " "))
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// ANSI colours Juju uses for statuses.
const (
	colorGreen  = "32"
	colorYellow = "33"
	colorRed    = "31"
	colorBlue   = "34"
	colorGrey   = "90"
)

// statusColor picks a status word's colour the way `juju status` does.
func statusColor(s string) string {
	switch s {
	case "active", "idle", "started", "running", "available", "joined", "completed", "voting":
		return colorGreen
	case "error", "blocked", "down", "failed", "lost", "provisioning error", "aborted", "broken":
		return colorRed
	case "waiting", "maintenance", "executing", "allocating", "pending", "joining", "dying",
		"destroying", "rebooting", "stopped", "suspending":
		return colorYellow
	case "unknown", "terminated", "unset":
		return colorGrey
	}
	return ""
}

func colored(text, color string) cell { return cell{text: text, color: color} }
func statusCell(s string) cell        { return cell{text: s, color: statusColor(s)} }

// friendlyAgo says when something happened as Juju's show-model does:
// "just now", "5 minutes ago", "3 hours ago", then the date.
func friendlyAgo(t, now time.Time) string {
	d := now.Sub(t)
	plural := func(n int, unit string) string {
		if n == 1 {
			return "1 " + unit + " ago"
		}
		return fmt.Sprintf("%d %ss ago", n, unit)
	}
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return plural(int(d/time.Minute), "minute")
	case d < 24*time.Hour:
		return plural(int(d/time.Hour), "hour")
	}
	return t.UTC().Format("2006-01-02")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
