package modelcmd

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

// FormatOpt is the --format flag.
type FormatOpt struct {
	Value   string
	allowed []string
}

// Add adds --format to cmd, def by default, one of allowed.
func (o *FormatOpt) Add(cmd *cobra.Command, def string, allowed ...string) {
	o.allowed = allowed
	cmd.Flags().StringVar(&o.Value, "format", def, "output format: "+strings.Join(allowed, "|"))
	_ = cmd.RegisterFlagCompletionFunc("format", cobra.FixedCompletions(allowed, cobra.ShellCompDirectiveNoFileComp))
}

// Check refuses a --format value not allowed (a usage error).
func (o *FormatOpt) Check() error {
	for _, f := range o.allowed {
		if o.Value == f {
			return nil
		}
	}
	return Usagef("--format %q: want one of %s", o.Value, strings.Join(o.allowed, ", "))
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
func WriteYAML(w io.Writer, v any) error {
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

// WriteFormatted writes v as json or yaml.
func WriteFormatted(w io.Writer, format string, v any) error {
	switch format {
	case "json":
		return writeJSON(w, v)
	case "yaml":
		return WriteYAML(w, v)
	}
	return fmt.Errorf("unsupported format %q", format)
}

// Table collects rows and prints them in aligned columns (two spaces
// apart, no trailing blanks), like Juju's tabular output. A cell may carry
// a colour, applied after padding so ANSI codes never skew alignment.
type Table struct {
	rows  [][]Cell
	Color bool
	// rightCols are right-aligned (numbers), except in the header row.
	rightCols map[int]bool
}

// Right right-aligns columns (by index), as Juju does for counts.
func (t *Table) Right(cols ...int) {
	if t.rightCols == nil {
		t.rightCols = map[int]bool{}
	}
	for _, c := range cols {
		t.rightCols[c] = true
	}
}

type Cell struct {
	Text  string
	Color string // ANSI SGR code, "" for none
}

// Row adds a row. A cell's text may come from others (a charm's status
// message, a controller's answer): its control characters are shown as
// escapes, so that printing it cannot drive the terminal.
func (t *Table) Row(cells ...any) {
	r := make([]Cell, len(cells))
	for i, c := range cells {
		switch v := c.(type) {
		case Cell:
			r[i] = v
		case string:
			r[i] = Cell{Text: v}
		default:
			r[i] = Cell{Text: fmt.Sprint(v)}
		}
		r[i].Text = safetext.Terminal(r[i].Text)
	}
	t.rows = append(t.rows, r)
}

// Write prints the rows in aligned columns.
func (t *Table) Write(w io.Writer) error {
	var widths []int
	for _, r := range t.rows {
		for i, c := range r {
			if i >= len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], utf8.RuneCountInString(c.Text))
		}
	}
	var b strings.Builder
	for ri, r := range t.rows {
		var line strings.Builder
		for i, c := range r {
			pad := strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c.Text))
			text := c.Text
			if t.Color && c.Color != "" && c.Text != "" {
				text = "\x1b[" + c.Color + "m" + c.Text + "\x1b[0m"
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
	ColorGreen  = "32"
	ColorYellow = "33"
	ColorRed    = "31"
	colorBlue   = "34"
	colorGrey   = "90"
)

// StatusColor picks a status word's colour the way `juju status` does.
func StatusColor(s string) string {
	switch s {
	case "active", "idle", "started", "running", "available", "joined", "completed", "voting":
		return ColorGreen
	case "error", "blocked", "down", "failed", "lost", "provisioning error", "aborted", "broken":
		return ColorRed
	case "waiting", "maintenance", "executing", "allocating", "pending", "joining", "dying",
		"destroying", "rebooting", "stopped", "suspending":
		return ColorYellow
	case "unknown", "terminated", "unset":
		return colorGrey
	}
	return ""
}

// Colored is a cell of text in color; StatusCell a status word in its
// colour (StatusColor).
func Colored(text, color string) Cell { return Cell{Text: text, Color: color} }
func StatusCell(s string) Cell        { return Cell{Text: s, Color: StatusColor(s)} }

// FriendlyAgo says when something happened as Juju's show-model does:
// "just now", "5 minutes ago", "3 hours ago", then the date.
func FriendlyAgo(t, now time.Time) string {
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

// OrDash is s, or "-" for nothing.
func OrDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
