package charm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// ActionsFile declares the charm's actions.
const ActionsFile = "actions.yaml"

var actionNameRE = regexp.MustCompile(`^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$`)

// ActionSpec is one validated action.
type ActionSpec struct {
	Name        string
	Description string
	// Parallel and ExecutionGroup tell the agent whether the action may run
	// alongside others; Juju runs actions sequentially by default.
	Parallel       bool
	ExecutionGroup string
	// Schema is the JSON-Schema (draft 4) object that params must satisfy.
	// Numbers in it are int64 or float64.
	Schema map[string]any

	compiled *jsonschema.Schema
}

// Actions is a validated actions.yaml. The zero value (and a nil pointer)
// declares no actions.
type Actions struct {
	Specs map[string]*ActionSpec
}

// ParseActions parses and validates actions.yaml content. An empty file
// declares no actions.
func ParseActions(data []byte) (*Actions, error) {
	v, err := decodeYAML(ActionsFile, data)
	if err != nil {
		return nil, err
	}
	return actionsFromValue(ActionsFile, v)
}

func actionsFromValue(file string, v any) (*Actions, error) {
	p := &problems{file: file}
	top, ok := getMap(p, "", v)
	if !ok {
		return nil, p.err()
	}
	a := &Actions{Specs: make(map[string]*ActionSpec, len(top))}
	for _, name := range sortedKeys(top) {
		if !actionNameRE.MatchString(name) {
			p.add("", "invalid action name %q", name)
			continue
		}
		if reserved(name) {
			p.add(name, "action name %q is reserved", name)
			continue
		}
		spec, err := parseActionSpec(file, name, top[name])
		if err != nil {
			p.merge(err)
			continue
		}
		a.Specs[name] = spec
	}
	if !p.ok() {
		return nil, p.err()
	}
	return a, nil
}

func parseActionSpec(file, name string, v any) (*ActionSpec, error) {
	p := &problems{file: file}
	raw, ok := getMap(p, name, v)
	if !ok {
		return nil, p.err()
	}
	spec := &ActionSpec{
		Name:           name,
		Description:    getString(p, name+".description", raw["description"]),
		Parallel:       getBool(p, name+".parallel", raw["parallel"]),
		ExecutionGroup: getString(p, name+".execution-group", raw["execution-group"]),
	}
	props := map[string]any{}
	if params, ok := getMap(p, name+".params", raw["params"]); ok && params != nil {
		for _, k := range sortedKeys(params) {
			if _, isMap := params[k].(map[string]any); !isMap {
				p.add(join(name, "params", k), "must be a map (a JSON-Schema property), not %s", typeName(params[k]))
			}
		}
		props = params
	}
	schema := map[string]any{
		"type":                 "object",
		"title":                name,
		"properties":           props,
		"additionalProperties": false,
	}
	if spec.Description != "" {
		schema["description"] = spec.Description
	}
	getString(p, name+".title", raw["title"])
	if raw["required"] != nil {
		getStringList(p, name+".required", raw["required"])
	}
	if ap, ok := raw["additionalProperties"]; ok {
		if _, isBool := ap.(bool); !isBool {
			if _, isMap := ap.(map[string]any); !isMap {
				p.add(name+".additionalProperties", "must be a boolean or a schema map")
			}
		}
	}
	// Everything except Juju's own keys is copied over the defaults, which
	// is how charms set title, required, additionalProperties and friends.
	for k, val := range raw {
		switch k {
		case "description", "params", "parallel", "execution-group":
		default:
			schema[k] = val
		}
	}
	if path := findRef(schema, name, 0); path != "" {
		p.add(path, "$ref and $schema are not allowed in action schemas")
	}
	if !p.ok() {
		return nil, p.err()
	}
	norm, err := normalizeJSON(schema, 0)
	if err != nil {
		return nil, invalid(file, name, "%v", err)
	}
	spec.Schema = norm.(map[string]any)
	if spec.compiled, err = compileSchema(name, spec.Schema); err != nil {
		return nil, invalid(file, name, "invalid params schema: %v", err)
	}
	return spec, nil
}

// findRef returns the path of the first $ref or $schema key. They are
// refused because they would make the schema load other documents.
func findRef(v any, path string, depth int) string {
	if depth > maxDepth {
		return path
	}
	switch t := v.(type) {
	case map[string]any:
		for _, k := range sortedKeys(t) {
			if k == "$ref" || k == "$schema" {
				return join(path, k)
			}
			if f := findRef(t[k], join(path, k), depth+1); f != "" {
				return f
			}
		}
	case []any:
		for i, e := range t {
			if f := findRef(e, fmt.Sprintf("%s[%d]", path, i), depth+1); f != "" {
				return f
			}
		}
	}
	return ""
}

// noLoader refuses to fetch anything: action schemas are self-contained.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("loading %s is not allowed", url)
}

func compileSchema(name string, schema map[string]any) (sch *jsonschema.Schema, err error) {
	// The compiler is third-party code fed with charm-controlled input;
	// keep the package's no-panic promise regardless.
	defer func() {
		if r := recover(); r != nil {
			sch, err = nil, fmt.Errorf("schema compiler failed: %v", r)
		}
	}()
	buf, err := json.Marshal(schema)
	if err != nil {
		return nil, err
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(buf))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft4)
	c.UseLoader(noLoader{})
	url := "urn:drover:action:" + name
	if err := c.AddResource(url, doc); err != nil {
		return nil, err
	}
	return c.Compile(url)
}

// Spec returns the named action.
func (a *Actions) Spec(name string) (*ActionSpec, bool) {
	if a == nil {
		return nil, false
	}
	s, ok := a.Specs[name]
	return s, ok
}

// Names returns the action names in order.
func (a *Actions) Names() []string {
	if a == nil {
		return nil
	}
	return sortedKeys(a.Specs)
}

// Validate checks params for the named action against its schema, fills in
// schema defaults (top level and nested objects) and returns the completed
// parameters with numbers as int64 or float64. The input is not modified.
func (a *Actions) Validate(name string, params map[string]any) (map[string]any, error) {
	spec, ok := a.Spec(name)
	if !ok {
		return nil, invalid("", name, "unknown action %q", name)
	}
	var in any = map[string]any{}
	if params != nil {
		var err error
		if in, err = normalizeJSON(params, 0); err != nil {
			return nil, invalid("", name, "invalid params: %v", err)
		}
	}
	out := in.(map[string]any)
	fillDefaults(spec.Schema, out, 0)
	if err := spec.compiled.Validate(out); err != nil {
		return nil, schemaErrors(name, err)
	}
	return out, nil
}

// fillDefaults adds schema defaults for absent properties and recurses into
// present objects whose schema declares properties.
func fillDefaults(schema map[string]any, v map[string]any, depth int) {
	props, _ := schema["properties"].(map[string]any)
	if depth > maxDepth {
		return
	}
	for _, k := range sortedKeys(props) {
		ps, _ := props[k].(map[string]any)
		if ps == nil {
			continue
		}
		cur, present := v[k]
		if !present {
			if def, has := ps["default"]; has {
				v[k] = deepCopy(def)
				cur, present = v[k], true
			}
		}
		if sub, isMap := cur.(map[string]any); present && isMap {
			fillDefaults(ps, sub, depth+1)
		}
	}
}

func deepCopy(v any) any {
	switch t := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, e := range t {
			m[k] = deepCopy(e)
		}
		return m
	case []any:
		l := make([]any, len(t))
		for i, e := range t {
			l[i] = deepCopy(e)
		}
		return l
	}
	return v
}

// schemaErrors flattens a jsonschema validation error into one *Error per
// failing leaf, so messages name the offending parameter.
func schemaErrors(name string, err error) error {
	var verr *jsonschema.ValidationError
	if !errors.As(err, &verr) {
		return invalid("", name, "invalid params: %v", err)
	}
	var leaves []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			leaves = append(leaves, paramWords(e.Error()))
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(verr)
	sort.Strings(leaves)
	p := &problems{}
	for _, l := range leaves {
		p.add(name, "invalid params: %s", l)
	}
	return p.err()
}

// paramWords puts a schema error in terms of action parameters, as people
// pass them: a missing property 'key' at the root is "missing parameter
// 'key'", and an error at '/compression/level' is "parameter
// compression.level: ...".
func paramWords(msg string) string {
	if rest, ok := strings.CutPrefix(msg, "at '"); ok {
		if loc, detail, ok := strings.Cut(rest, "': "); ok {
			msg = detail
			if loc = strings.ReplaceAll(strings.TrimPrefix(loc, "/"), "/", "."); loc != "" {
				msg = "parameter " + loc + ": " + detail
			}
		}
	}
	msg = strings.Replace(msg, "missing property ", "missing parameter ", 1)
	msg = strings.Replace(msg, "missing properties ", "missing parameters ", 1)
	return strings.Replace(msg, "additional properties ", "unknown parameters ", 1)
}

// normalizeJSON copies a decoded YAML or JSON value into the JSON data model
// with canonical Go types: map[string]any, []any, string, bool, nil, int64
// for integral numbers and float64 otherwise. It refuses values JSON cannot
// carry (NaN, infinities, arbitrary Go types).
func normalizeJSON(v any, depth int) (any, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("nesting deeper than %d", maxDepth)
	}
	switch t := v.(type) {
	case nil, string, bool:
		return t, nil
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, e := range t {
			n, err := normalizeJSON(e, depth+1)
			if err != nil {
				return nil, err
			}
			m[k] = n
		}
		return m, nil
	case map[any]any:
		m := make(map[string]any, len(t))
		for k, e := range t {
			n, err := normalizeJSON(e, depth+1)
			if err != nil {
				return nil, err
			}
			m[keyString(k)] = n
		}
		return m, nil
	case []any:
		l := make([]any, len(t))
		for i, e := range t {
			n, err := normalizeJSON(e, depth+1)
			if err != nil {
				return nil, err
			}
			l[i] = n
		}
		return l, nil
	case []string:
		l := make([]any, len(t))
		for i, e := range t {
			l[i] = e
		}
		return l, nil
	}
	if n, ok := toInt64(v); ok {
		return n, nil
	}
	if f, ok := toFloat64(v); ok {
		return f, nil
	}
	return nil, fmt.Errorf("unsupported value of type %s", typeName(v))
}
