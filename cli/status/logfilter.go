package status

import (
	"fmt"
	"io"
	"path"
	"strings"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/cli/internal/modelcmd"
)

// logLevels orders debug-log levels, lowest first.
var logLevels = map[string]int{"TRACE": 0, "DEBUG": 1, "INFO": 2, "WARNING": 3, "ERROR": 4, "CRITICAL": 5}

// parseLevel accepts a level name in any case (WARN for WARNING).
func parseLevel(s string) (string, error) {
	l := strings.ToUpper(s)
	if l == "WARN" {
		l = "WARNING"
	}
	if _, ok := logLevels[l]; !ok {
		return "", modelcmd.Usagef("--level %q: want one of TRACE, DEBUG, INFO, WARNING, ERROR, CRITICAL", s)
	}
	return l, nil
}

// logFilter selects debug-log records as juju debug-log does. Entity
// patterns are normalised to tags (unit-kv-0, machine-0) and may be globs;
// a bare application name selects its units.
type logFilter struct {
	include, exclude             []string // tag globs
	includeModule, excludeModule []string
	level                        string // minimum; "" for all
}

// entityPatterns turns what users type (kv/0, kv, 0, unit-kv-0, kv/*)
// into tag globs.
func entityPatterns(names []string) []string {
	var out []string
	for _, n := range names {
		switch {
		case strings.HasPrefix(n, "unit-") || strings.HasPrefix(n, "machine-") || strings.HasPrefix(n, "application-"):
			out = append(out, n)
		case strings.Contains(n, "/"):
			if modelcmd.IsMachineID(n) {
				out = append(out, "machine-"+strings.ReplaceAll(n, "/", "-"))
			} else {
				out = append(out, unitTag(n))
			}
		case modelcmd.IsMachineID(n):
			out = append(out, "machine-"+n)
		default: // an application: its units and itself
			out = append(out, "unit-"+n+"-*", "application-"+n)
		}
	}
	return out
}

func matchAny(globs []string, tag string) bool {
	for _, g := range globs {
		if ok, err := path.Match(g, tag); (err == nil && ok) || g == tag {
			return true
		}
	}
	return false
}

func moduleIn(mods []string, module string) bool {
	for _, m := range mods {
		if module == m || strings.HasPrefix(module, m+".") {
			return true
		}
	}
	return false
}

func (f *logFilter) wanted(r *api.LogRecord) bool {
	if len(f.include) > 0 && !matchAny(f.include, r.Entity) {
		return false
	}
	if matchAny(f.exclude, r.Entity) {
		return false
	}
	if len(f.includeModule) > 0 && !moduleIn(f.includeModule, r.Module) {
		return false
	}
	if moduleIn(f.excludeModule, r.Module) {
		return false
	}
	if f.level != "" {
		l, ok := logLevels[strings.ToUpper(r.Level)]
		return !ok || l >= logLevels[f.level]
	}
	return true
}

// logFormat writes records as Juju does:
//
//	unit-kv-0: 12:01:02 INFO unit.kv/0.juju-log Hello
type logFormat struct {
	loc   *time.Location
	date  bool
	color bool
}

const (
	ansiReset  = "\x1b[0m"
	ansiRed    = "\x1b[31m"
	ansiYellow = "\x1b[33m"
	ansiBlue   = "\x1b[34m"
	ansiGrey   = "\x1b[90m"
	ansiCyan   = "\x1b[36m"
)

func levelColor(level string) string {
	switch strings.ToUpper(level) {
	case "ERROR", "CRITICAL":
		return ansiRed
	case "WARNING":
		return ansiYellow
	case "INFO":
		return ansiBlue
	}
	return ansiGrey
}

func (f logFormat) write(w io.Writer, r *api.LogRecord) error {
	layout := "15:04:05"
	if f.date {
		layout = "2006-01-02 15:04:05"
	}
	ts := r.Time.In(f.loc).Format(layout)
	level := strings.ToUpper(r.Level)
	msg := strings.TrimRight(r.Message, "\n")
	var err error
	if f.color {
		_, err = fmt.Fprintf(w, "%s%s:%s %s %s%s%s %s%s%s %s\n", ansiCyan, r.Entity, ansiReset, ts,
			levelColor(level), level, ansiReset, ansiGrey, r.Module, ansiReset, msg)
	} else {
		_, err = fmt.Fprintf(w, "%s: %s %s %s %s\n", r.Entity, ts, level, r.Module, msg)
	}
	return err
}
