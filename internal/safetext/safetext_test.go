package safetext

import (
	"strings"
	"testing"
)

func TestCSVCell(t *testing.T) {
	for in, want := range map[string]string{
		`=HYPERLINK("http://evil.example","x")`: `'=HYPERLINK("http://evil.example","x")`,
		"+1+cmd|' /C calc'!A0":                  "'+1+cmd|' /C calc'!A0",
		"-2+3":                                  "'-2+3",
		"@SUM(A1)":                              "'@SUM(A1)",
		"\t=1":                                  "'\t=1",
		"\r=1":                                  "'\r=1",
		"-":                                     "-",
		"":                                      "",
		"alice@example.com":                     "alice@example.com",
		"2026-11-23T01:00:00Z":                  "2026-11-23T01:00:00Z",
		`{"target":"=1"}`:                       `{"target":"=1"}`,
	} {
		if got := CSVCell(in); got != want {
			t.Errorf("CSVCell(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestTerminal(t *testing.T) {
	for in, want := range map[string]string{
		"plain text, ünïcödé": "plain text, ünïcödé",
		"\x1b]0;pwned\x07":    `\x1b]0;pwned\a`,
		"a\nb\rc\td":          `a\nb\rc\td`,
		"\x1b[2K\x1b[1A":      `\x1b[2K\x1b[1A`,
		"csi \u009b31m":       `csi \u009b31m`,
		"del \x7f":            `del \x7f`,
	} {
		if got := Terminal(in); got != want {
			t.Errorf("Terminal(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestTerminalLines(t *testing.T) {
	in := "controller said \x1b[2Kno\n(ask an administrator)\r"
	if got, want := TerminalLines(in), "controller said \\x1b[2Kno\n(ask an administrator)\\r"; got != want {
		t.Errorf("TerminalLines(%q) = %q, want %q", in, got, want)
	}
}

// FuzzTerminal: nothing Terminal returns holds a control character, and
// text without one comes back unchanged.
func FuzzTerminal(f *testing.F) {
	for _, s := range []string{"", "plain", "\x1b[31mred", "\u009b", "\xff\xfe", "a\x00b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := Terminal(s)
		if strings.IndexFunc(got, control) >= 0 {
			t.Fatalf("Terminal(%q) = %q holds a control character", s, got)
		}
		if strings.IndexFunc(s, control) < 0 && got != s {
			t.Fatalf("Terminal(%q) = %q changed text without control characters", s, got)
		}
	})
}
