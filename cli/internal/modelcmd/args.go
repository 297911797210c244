package modelcmd

import (
	"fmt"
	"os"
	"strings"

	"gopkg.in/yaml.v3"
)

// ParseKeyValues splits "k=v" arguments. A value "@file" is the file's
// content (as Juju reads it). Keys must be non-empty and unique.
func ParseKeyValues(args []string) (map[string]string, error) {
	out := make(map[string]string, len(args))
	for _, arg := range args {
		k, v, ok := strings.Cut(arg, "=")
		if !ok || k == "" {
			return nil, Usagef("expected key=value, got %q", arg)
		}
		if _, dup := out[k]; dup {
			return nil, Usagef("key %q given twice", k)
		}
		if strings.HasPrefix(v, "@") {
			data, err := os.ReadFile(v[1:])
			if err != nil {
				return nil, fmt.Errorf("value of %q: %w", k, err)
			}
			v = string(data)
		}
		out[k] = v
	}
	return out, nil
}

// SplitConfigArgs separates "k=v" settings from bare "k" lookups.
func SplitConfigArgs(args []string) (set []string, get []string) {
	for _, a := range args {
		if strings.Contains(a, "=") {
			set = append(set, a)
		} else {
			get = append(get, a)
		}
	}
	return set, get
}

// ParseActionParams turns "k=v" and "a.b=v" arguments into nested params.
// Values are YAML ("3" is a number, "true" a boolean) unless stringArgs.
func ParseActionParams(args []string, stringArgs bool) (map[string]any, error) {
	kv, err := ParseKeyValues(args)
	if err != nil {
		return nil, err
	}
	out := map[string]any{}
	for _, k := range SortedKeys(kv) {
		var v any = kv[k]
		if !stringArgs {
			var y any
			if err := yaml.Unmarshal([]byte(kv[k]), &y); err == nil && y != nil {
				v = y
			}
		}
		path := strings.Split(k, ".")
		m := out
		for _, p := range path[:len(path)-1] {
			if p == "" {
				return nil, Usagef("invalid parameter name %q", k)
			}
			next, ok := m[p].(map[string]any)
			if !ok {
				if _, exists := m[p]; exists {
					return nil, Usagef("parameter %q is both a value and a map", p)
				}
				next = map[string]any{}
				m[p] = next
			}
			m = next
		}
		last := path[len(path)-1]
		if last == "" {
			return nil, Usagef("invalid parameter name %q", k)
		}
		if _, exists := m[last]; exists {
			return nil, Usagef("parameter %q is both a value and a map", k)
		}
		m[last] = v
	}
	return out, nil
}

// SplitList splits comma-separated flag values ("a,b" "c" → a b c).
func SplitList(values []string) []string {
	var out []string
	for _, v := range values {
		for _, p := range strings.Split(v, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
	}
	return out
}
