package charm

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"

	"gopkg.in/yaml.v3"
)

// decodeYAML decodes one YAML document into plain Go values with string map
// keys. yaml.v3 is not guaranteed panic-free on hostile input, and this
// package promises never to panic, so a panic is turned into an error.
func decodeYAML(file string, data []byte) (v any, err error) {
	defer func() {
		if r := recover(); r != nil {
			v, err = nil, invalid(file, "", "cannot parse YAML: %v", r)
		}
	}()
	if err := yaml.Unmarshal(data, &v); err != nil {
		return nil, invalid(file, "", "cannot parse YAML: %v", err)
	}
	return normalize(v, 0)
}

// maxDepth stops pathological nesting before it exhausts the stack.
const maxDepth = 200

// normalize turns yaml.v3's map[any]any (used when a key is not a string)
// into map[string]any so the rest of the package handles one shape only.
func normalize(v any, depth int) (any, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("nesting deeper than %d", maxDepth)
	}
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			n, err := normalize(e, depth+1)
			if err != nil {
				return nil, err
			}
			t[k] = n
		}
		return t, nil
	case map[any]any:
		m := make(map[string]any, len(t))
		for k, e := range t {
			n, err := normalize(e, depth+1)
			if err != nil {
				return nil, err
			}
			m[keyString(k)] = n
		}
		return m, nil
	case []any:
		for i, e := range t {
			n, err := normalize(e, depth+1)
			if err != nil {
				return nil, err
			}
			t[i] = n
		}
		return t, nil
	}
	return v, nil
}

// keyString renders a non-string YAML key the way it was written, so that
// bundle machine ids (`0:`) and similar become "0".
func keyString(k any) string {
	switch t := k.(type) {
	case nil:
		return ""
	case string:
		return t
	case float64:
		return strconv.FormatFloat(t, 'g', -1, 64)
	}
	return fmt.Sprint(k)
}

// sortedKeys returns map keys in order, so problems are reported and results
// built deterministically.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// typeName describes a decoded value for error messages.
func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case bool:
		return "boolean"
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return "integer"
	case float32, float64, json.Number:
		return "number"
	case map[string]any, map[any]any:
		return "map"
	case []any:
		return "list"
	}
	return fmt.Sprintf("%T", v)
}

// The field readers below report a problem and return the zero value on a
// type mismatch, so parsing continues and the user sees every mistake.

func getMap(p *problems, field string, v any) (map[string]any, bool) {
	if v == nil {
		return nil, true
	}
	m, ok := v.(map[string]any)
	if !ok {
		p.add(field, "must be a map, not %s", typeName(v))
		return nil, false
	}
	return m, true
}

func getString(p *problems, field string, v any) string {
	if v == nil {
		return ""
	}
	s, ok := v.(string)
	if !ok {
		p.add(field, "must be a string, not %s", typeName(v))
	}
	return s
}

func getBool(p *problems, field string, v any) bool {
	if v == nil {
		return false
	}
	b, ok := v.(bool)
	if !ok {
		p.add(field, "must be a boolean, not %s", typeName(v))
	}
	return b
}

// getInt accepts any integral number; YAML and JSON decoders disagree on
// which Go type an integer arrives as.
func getInt(p *problems, field string, v any) (int64, bool) {
	n, ok := toInt64(v)
	if !ok {
		p.add(field, "must be an integer, not %s", typeName(v))
	}
	return n, ok
}

func getStringList(p *problems, field string, v any) []string {
	if v == nil {
		return nil
	}
	l, ok := v.([]any)
	if !ok {
		p.add(field, "must be a list of strings, not %s", typeName(v))
		return nil
	}
	out := make([]string, 0, len(l))
	for i, e := range l {
		s, ok := e.(string)
		if !ok {
			p.add(fmt.Sprintf("%s[%d]", field, i), "must be a string, not %s", typeName(e))
			continue
		}
		out = append(out, s)
	}
	return out
}

// checkKeys reports keys of m that are not in allowed.
func checkKeys(p *problems, field string, m map[string]any, allowed ...string) {
	for _, k := range sortedKeys(m) {
		if !slices.Contains(allowed, k) {
			p.add(join(field, k), "unknown key")
		}
	}
}

// toInt64 converts any integral numeric value to int64.
func toInt64(v any) (int64, bool) {
	switch t := v.(type) {
	case int:
		return int64(t), true
	case int8:
		return int64(t), true
	case int16:
		return int64(t), true
	case int32:
		return int64(t), true
	case int64:
		return t, true
	case uint:
		return int64(t), uint64(t) <= math.MaxInt64
	case uint8:
		return int64(t), true
	case uint16:
		return int64(t), true
	case uint32:
		return int64(t), true
	case uint64:
		return int64(t), t <= math.MaxInt64
	case float32:
		return floatToInt(float64(t))
	case float64:
		return floatToInt(t)
	case json.Number:
		if n, err := t.Int64(); err == nil {
			return n, true
		}
		if f, err := t.Float64(); err == nil {
			return floatToInt(f)
		}
	}
	return 0, false
}

func floatToInt(f float64) (int64, bool) {
	// 2^63 is exactly representable; anything at or above it overflows.
	if f != math.Trunc(f) || f < -(1<<63) || f >= 1<<63 {
		return 0, false
	}
	return int64(f), true
}

// toFloat64 converts any finite numeric value to float64.
func toFloat64(v any) (float64, bool) {
	var f float64
	switch t := v.(type) {
	case float32:
		f = float64(t)
	case float64:
		f = t
	case json.Number:
		var err error
		if f, err = t.Float64(); err != nil {
			return 0, false
		}
	default:
		n, ok := toInt64(v)
		if !ok {
			return 0, false
		}
		f = float64(n)
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}
