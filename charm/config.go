package charm

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ConfigFile holds the charm's configuration options.
const ConfigFile = "config.yaml"

// OptionType is the type of a configuration option.
type OptionType string

// Option types. A missing type in config.yaml means string.
const (
	TypeString OptionType = "string"
	TypeInt    OptionType = "int"
	TypeFloat  OptionType = "float"
	TypeBool   OptionType = "boolean"
	TypeSecret OptionType = "secret"
)

// Option is one configuration option.
type Option struct {
	Type        OptionType
	Description string
	// Default is nil when the option has no default; otherwise it is a
	// string, int64, float64 or bool according to Type.
	Default any
}

// Config is a validated config.yaml.
type Config struct {
	Options map[string]Option
}

// Settings maps option names to values typed string, int64, float64 or
// bool. A nil value means "reset to the default".
type Settings map[string]any

// ParseConfig parses and validates config.yaml content.
func ParseConfig(data []byte) (*Config, error) {
	v, err := decodeYAML(ConfigFile, data)
	if err != nil {
		return nil, err
	}
	return configFromValue(ConfigFile, v)
}

func configFromValue(file string, v any) (*Config, error) {
	p := &problems{file: file}
	top, ok := v.(map[string]any)
	if !ok {
		// A completely empty file is an error in Juju: it almost always
		// means the file was truncated, while `options:` is deliberate.
		if v == nil {
			return nil, invalid(file, "", "empty configuration (use `options: {}` for none)")
		}
		return nil, invalid(file, "", "must be a map, not %s", typeName(v))
	}
	checkKeys(p, "", top, "options")
	opts, _ := getMap(p, "options", top["options"])
	cfg := &Config{Options: make(map[string]Option, len(opts))}
	for _, name := range sortedKeys(opts) {
		field := join("options", name)
		if name == "" {
			p.add(field, "option name must not be empty")
			continue
		}
		om, ok := getMap(p, field, opts[name])
		if !ok {
			continue
		}
		checkKeys(p, field, om, "type", "description", "default")
		o := Option{
			Type:        OptionType(getString(p, field+".type", om["type"])),
			Description: getString(p, field+".description", om["description"]),
		}
		switch o.Type {
		case "":
			o.Type = TypeString
		case TypeString, TypeInt, TypeFloat, TypeBool, TypeSecret:
		default:
			p.add(field+".type", "unknown type %q (want string, int, float, boolean or secret)", o.Type)
			continue
		}
		def := om["default"]
		// An empty-string default is accepted as is for string-like types;
		// Juju keeps this for compatibility with older charms.
		if s, isString := def.(string); isString && s == "" && (o.Type == TypeString || o.Type == TypeSecret) {
			o.Default = ""
		} else if def != nil {
			val, err := coerce(o.Type, def)
			if err != nil {
				p.add(field+".default", "%v", err)
			}
			o.Default = val
		}
		cfg.Options[name] = o
	}
	if !p.ok() {
		return nil, p.err()
	}
	return cfg, nil
}

// coerce converts a decoded YAML/JSON value to the Go type of an option.
// Strings are parsed as user input is, because bundle and --config files
// often quote numbers and booleans.
func coerce(t OptionType, v any) (any, error) {
	if s, ok := v.(string); ok {
		return parseValue(t, s)
	}
	switch t {
	case TypeInt:
		if n, ok := toInt64(v); ok {
			return n, nil
		}
	case TypeFloat:
		if f, ok := toFloat64(v); ok {
			return f, nil
		}
	case TypeBool:
		if b, ok := v.(bool); ok {
			return b, nil
		}
	}
	return nil, fmt.Errorf("expected %s, got %s", t, typeName(v))
}

// parseValue parses a user-supplied string (juju config k=v) by type.
func parseValue(t OptionType, s string) (any, error) {
	switch t {
	case TypeString:
		return s, nil
	case TypeSecret:
		if !validSecretURI(s) {
			return nil, fmt.Errorf("expected a secret URI (secret:...), got %q", s)
		}
		return s, nil
	case TypeInt:
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("expected int, got %q", s)
		}
		return n, nil
	case TypeFloat:
		f, err := strconv.ParseFloat(s, 64)
		// NaN and infinities cannot be carried in JSON (config-get
		// --format=json), so they are not valid option values.
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, fmt.Errorf("expected float, got %q", s)
		}
		return f, nil
	case TypeBool:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return nil, fmt.Errorf("expected boolean, got %q", s)
		}
		return b, nil
	}
	return nil, fmt.Errorf("unknown option type %q", t)
}

// validSecretURI checks the shape of a Juju secret URI: the secret scheme
// followed by an ID, optionally qualified by //model-uuid/.
func validSecretURI(s string) bool {
	rest, ok := strings.CutPrefix(s, "secret:")
	return ok && rest != "" && strings.Trim(rest, "/") != "" && !strings.ContainsAny(rest, " \t\r\n")
}

// ParseSettings parses user-supplied strings by option type. An empty
// string resets the option and is returned as a nil value.
func (c *Config) ParseSettings(in map[string]string) (Settings, error) {
	return settings(c, in, func(o Option, s string) (any, error) {
		if s == "" {
			return nil, nil
		}
		return parseValue(o.Type, s)
	})
}

// ValidateSettings validates typed values from YAML or JSON (a bundle or a
// --config file) and converts them to the canonical Go types. A nil value
// resets the option. Integers may arrive as any integer type, an integral
// float64 or a json.Number; strings are parsed as ParseSettings does.
func (c *Config) ValidateSettings(in map[string]any) (Settings, error) {
	return settings(c, in, func(o Option, v any) (any, error) {
		if v == nil {
			return nil, nil
		}
		if s, isString := v.(string); isString && s == "" {
			// The same reset convention as on the command line; except for
			// strings, where "" is a legitimate value in a typed file.
			if o.Type == TypeString {
				return "", nil
			}
			return nil, nil
		}
		return coerce(o.Type, v)
	})
}

// settings converts each of in's values with conv, by its option, and
// reports every problem at once: each unknown option, and each value conv
// refuses under its option's name.
func settings[V any](c *Config, in map[string]V, conv func(Option, V) (any, error)) (Settings, error) {
	p := &problems{}
	out := make(Settings, len(in))
	for _, name := range sortedKeys(in) {
		o, ok := c.Options[name]
		if !ok {
			p.add("", "unknown option %q", name)
			continue
		}
		v, err := conv(o, in[name])
		if err != nil {
			p.add(name, "%v", err)
			continue
		}
		out[name] = v
	}
	if !p.ok() {
		return nil, p.err()
	}
	return out, nil
}

// DefaultSettings returns the options that have a default, with it.
// Options without a default are absent, as config-get shows them.
func (c *Config) DefaultSettings() Settings {
	out := make(Settings, len(c.Options))
	for name, o := range c.Options {
		if o.Default != nil {
			out[name] = o.Default
		}
	}
	return out
}
