// Package safetext makes text that others wrote safe to show where it could
// act: in a spreadsheet, a cell that starts with a formula character is
// run as a formula (CSV injection); in a terminal, control characters move
// the cursor, rewrite lines or set the title. The audit log carries such
// text from people who need not even be logged in (a client id given to a
// failed login), to auditors who open its CSV export or read it in a
// terminal.
package safetext

import (
	"strconv"
	"strings"
)

// CSVCell returns s as a spreadsheet shows it rather than runs it: a cell
// starting with '=', '+', '@', a tab or a carriage return, or with '-'
// followed by more, gets a leading apostrophe (OWASP's advice). Anything
// else is returned unchanged, so ordinary values read back as written.
func CSVCell(s string) string {
	if s == "" {
		return s
	}
	switch s[0] {
	case '=', '+', '@', '\t', '\r':
		return "'" + s
	case '-':
		if len(s) > 1 {
			return "'" + s
		}
	}
	return s
}

// Terminal returns s with every control character (C0 but none, DEL, C1)
// written as a Go escape (\x1b, \n, \u009b), so that printing it cannot
// drive the terminal. Text without any is returned unchanged.
func Terminal(s string) string {
	if strings.IndexFunc(s, control) < 0 {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if control(r) {
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// TerminalLines is Terminal keeping line breaks, for messages of several
// lines (an error and the hint under it).
func TerminalLines(s string) string {
	if !strings.Contains(s, "\n") {
		return Terminal(s)
	}
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = Terminal(l)
	}
	return strings.Join(lines, "\n")
}

func control(r rune) bool { return r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) }
