package hooktools

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// value is a flag value, as flag.Value.
type value interface {
	Set(string) error
	String() string
}

type flagDef struct {
	names  []string // short and long names, without dashes
	usage  string
	value  value
	isBool bool
}

// flagSet is a small parser with juju/gnuflag's behaviour: "--name=value",
// "--name value", "-r 3", "-r3", bool flags without a value or with
// "=<ParseBool>", flags interleaved with arguments, "--" ending the flags
// and a lone "-" being an argument.
type flagSet struct {
	defs   []*flagDef
	byName map[string]*flagDef
}

func newFlagSet() *flagSet { return &flagSet{byName: map[string]*flagDef{}} }

func (fs *flagSet) add(v value, isBool bool, usage string, names ...string) {
	d := &flagDef{names: names, usage: usage, value: v, isBool: isBool}
	fs.defs = append(fs.defs, d)
	for _, n := range names {
		fs.byName[n] = d
	}
}

type boolValue struct{ p *bool }

func (b boolValue) Set(s string) error {
	v, err := strconv.ParseBool(s)
	if err != nil {
		return fmt.Errorf("invalid boolean value %q", s)
	}
	*b.p = v
	return nil
}
func (b boolValue) String() string { return strconv.FormatBool(*b.p) }

type stringValue struct{ p *string }

func (s stringValue) Set(v string) error { *s.p = v; return nil }
func (s stringValue) String() string     { return strconv.Quote(*s.p) }

func (fs *flagSet) boolVar(p *bool, usage string, names ...string) {
	fs.add(boolValue{p}, true, usage, names...)
}

func (fs *flagSet) stringVar(p *string, def, usage string, names ...string) {
	*p = def
	fs.add(stringValue{p}, false, usage, names...)
}

func dashed(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// errHelp is returned by parse for -h and --help.
var errHelp = fmt.Errorf("help requested")

// parse consumes the flags and returns the positional arguments.
func (fs *flagSet) parse(args []string) ([]string, error) {
	var pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(pos, args[i+1:]...), nil
		}
		if len(a) < 2 || a[0] != '-' {
			pos = append(pos, a)
			continue
		}
		long := strings.HasPrefix(a, "--")
		name := strings.TrimLeft(a, "-")
		val, hasVal := "", false
		if n, v, ok := strings.Cut(name, "="); ok {
			name, val, hasVal = n, v, true
		}
		if name == "h" || name == "help" {
			return nil, errHelp
		}
		d, ok := fs.byName[name]
		if !ok && !long && len(name) > 1 && !hasVal {
			// "-r3": a short flag with its value attached.
			if sd, sok := fs.byName[name[:1]]; sok && !sd.isBool {
				d, ok, val, hasVal = sd, true, name[1:], true
				name = name[:1]
			}
		}
		if !ok {
			return nil, fmt.Errorf("flag provided but not defined: %s", dashed(name))
		}
		if d.isBool {
			if !hasVal {
				val = "true"
			}
		} else if !hasVal {
			if i+1 >= len(args) {
				return nil, fmt.Errorf("flag needs an argument: %s", dashed(name))
			}
			i++
			val = args[i]
		}
		if err := d.value.Set(val); err != nil {
			return nil, fmt.Errorf("invalid value %q for flag %s: %v", val, dashed(name), err)
		}
	}
	return pos, nil
}

// usage renders the Options section of --help as juju/cmd does.
func (fs *flagSet) usage() string {
	defs := slices.Clone(fs.defs)
	slices.SortFunc(defs, func(a, b *flagDef) int { return strings.Compare(longest(a.names), longest(b.names)) })
	var b strings.Builder
	for _, d := range defs {
		var ns []string
		for _, n := range d.names {
			ns = append(ns, dashed(n))
		}
		fmt.Fprintf(&b, "%s  (= %s)\n", strings.Join(ns, ", "), d.value.String())
		if d.usage != "" {
			fmt.Fprintf(&b, "    %s\n", d.usage)
		}
	}
	return b.String()
}

func longest(names []string) string {
	l := ""
	for _, n := range names {
		if len(n) > len(l) {
			l = n
		}
	}
	return l
}

// checkEmpty is juju/cmd's CheckEmpty.
func checkEmpty(args []string) error {
	if len(args) != 0 {
		return fmt.Errorf("unrecognized args: %s", quoteList(args))
	}
	return nil
}

func quoteList(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = strconv.Quote(a)
	}
	return "[" + strings.Join(q, " ") + "]"
}
