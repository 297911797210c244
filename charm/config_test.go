package charm

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

const sampleConfig = `
options:
  port:
    type: int
    default: 5432
    description: Port to listen on.
  ratio:
    type: float
    default: 0.5
  debug:
    type: boolean
    default: false
  name:
    default: ""
  motd:
    description: untyped means string
  password:
    type: secret
  whole:
    type: float
    default: 3
`

func TestParseConfig(t *testing.T) {
	c, err := ParseConfig([]byte(sampleConfig))
	if err != nil {
		t.Fatal(err)
	}
	want := Settings{"port": int64(5432), "ratio": 0.5, "debug": false, "name": "", "whole": 3.0}
	if got := c.DefaultSettings(); !reflect.DeepEqual(got, want) {
		t.Errorf("defaults = %#v, want %#v", got, want)
	}
	if c.Options["motd"].Type != TypeString || c.Options["password"].Type != TypeSecret {
		t.Errorf("types: %+v", c.Options)
	}
}

func TestParseConfigCases(t *testing.T) {
	tests := []struct {
		name, yaml, want string // want "" means valid
	}{
		{"explicit empty options", "options:", ""},
		{"empty options map", "options: {}", ""},
		{"completely empty", "", "empty configuration"},
		{"comment only", "# nothing\n", "empty configuration"},
		{"unknown top key", "options: {}\nfoo: 1", "foo: unknown key"},
		{"bad type", "options:\n  a: {type: integer}", "unknown type \"integer\""},
		{"type not string", "options:\n  a: {type: 1}", "must be a string"},
		{"int default string", "options:\n  a: {type: int, default: abc}", "options.a.default: expected int"},
		{"int default float", "options:\n  a: {type: int, default: 1.5}", "expected int"},
		{"int default quoted", "options:\n  a: {type: int, default: '7'}", ""},
		{"int default empty", "options:\n  a: {type: int, default: ''}", "expected int"},
		{"bool default", "options:\n  a: {type: boolean, default: 3}", "expected boolean"},
		{"string default int", "options:\n  a: {type: string, default: 3}", "expected string"},
		{"secret default", "options:\n  a: {type: secret, default: hunter2}", "secret URI"},
		{"secret default ok", "options:\n  a: {type: secret, default: 'secret:cq6ef5ej8mhq5gtnhtpg'}", ""},
		{"secret default empty", "options:\n  a: {type: secret, default: ''}", ""},
		{"option unknown key", "options:\n  a: {type: int, defualt: 1}", "options.a.defualt: unknown key"},
		{"option not map", "options:\n  a: 1", "must be a map"},
		{"options not map", "options: [a]", "options: must be a map"},
		{"float nan", "options:\n  a: {type: float, default: .nan}", "expected float"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseConfig([]byte(tt.yaml))
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want %q", err, tt.want)
			}
		})
	}
}

func TestParseSettings(t *testing.T) {
	c, err := ParseConfig([]byte(sampleConfig))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		in   map[string]string
		want Settings
		err  string
	}{
		{"typed", map[string]string{"port": "80", "ratio": "1e3", "debug": "t", "name": "x", "password": "secret:abc"},
			Settings{"port": int64(80), "ratio": 1000.0, "debug": true, "name": "x", "password": "secret:abc"}, ""},
		{"bool forms", map[string]string{"debug": "1"}, Settings{"debug": true}, ""},
		{"reset", map[string]string{"port": "", "name": ""}, Settings{"port": nil, "name": nil}, ""},
		{"unknown", map[string]string{"nope": "1"}, nil, `unknown option "nope"`},
		{"bad int", map[string]string{"port": "80.5"}, nil, "port: expected int"},
		{"hex int", map[string]string{"port": "0x50"}, nil, "expected int"},
		{"overflow", map[string]string{"port": "9223372036854775808"}, nil, "expected int"},
		{"bad float", map[string]string{"ratio": "half"}, nil, "ratio: expected float"},
		{"bad bool", map[string]string{"debug": "yes"}, nil, "debug: expected boolean"},
		{"bad secret", map[string]string{"password": "hunter2"}, nil, "password: expected a secret URI"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := c.ParseSettings(tt.in)
			checkResult(t, got, err, tt.want, tt.err)
		})
	}
}

func TestValidateSettings(t *testing.T) {
	c, err := ParseConfig([]byte(sampleConfig))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		in   map[string]any
		want Settings
		err  string
	}{
		{"go ints", map[string]any{"port": 80, "ratio": 2, "debug": true},
			Settings{"port": int64(80), "ratio": 2.0, "debug": true}, ""},
		{"json float integral", map[string]any{"port": 80.0}, Settings{"port": int64(80)}, ""},
		{"json number", map[string]any{"port": json.Number("8080"), "ratio": json.Number("0.25")},
			Settings{"port": int64(8080), "ratio": 0.25}, ""},
		{"uint64", map[string]any{"port": uint64(1)}, Settings{"port": int64(1)}, ""},
		{"quoted", map[string]any{"port": "81", "debug": "false"}, Settings{"port": int64(81), "debug": false}, ""},
		{"nil resets", map[string]any{"port": nil}, Settings{"port": nil}, ""},
		{"empty string keeps string", map[string]any{"name": "", "port": "", "password": ""}, Settings{"name": "", "port": nil, "password": nil}, ""},
		{"non integral", map[string]any{"port": 80.5}, nil, "port: expected int, got number"},
		{"bool for int", map[string]any{"port": true}, nil, "port: expected int, got boolean"},
		{"int for bool", map[string]any{"debug": 1}, nil, "debug: expected boolean, got integer"},
		{"int for string", map[string]any{"name": 1}, nil, "name: expected string, got integer"},
		{"map for float", map[string]any{"ratio": map[string]any{}}, nil, "ratio: expected float, got map"},
		{"huge uint", map[string]any{"port": uint64(1 << 63)}, nil, "expected int"},
		{"unknown", map[string]any{"x": 1}, nil, `unknown option "x"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := c.ValidateSettings(tt.in)
			checkResult(t, got, err, tt.want, tt.err)
		})
	}
}

func TestSettingsCollectAllProblems(t *testing.T) {
	c, _ := ParseConfig([]byte(sampleConfig))
	_, perr := c.ParseSettings(map[string]string{"port": "x", "debug": "y", "zz": "1"})
	_, verr := c.ValidateSettings(map[string]any{"port": true, "debug": 1, "zz": 1})
	for _, err := range []error{perr, verr} {
		for _, want := range []string{"port:", "debug:", `"zz"`} {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("error %v missing %q", err, want)
			}
		}
	}
}

// checkResult fails t unless err is an ErrInvalid containing wantErr, or,
// when wantErr is empty, err is nil and got deep-equals want.
func checkResult(t *testing.T, got any, err error, want any, wantErr string) {
	t.Helper()
	if wantErr != "" {
		if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), wantErr) {
			t.Fatalf("error %v, want %q", err, wantErr)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %#v, want %#v", got, want)
	}
}
