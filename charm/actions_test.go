package charm

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

const sampleActions = `
backup:
  description: Take a backup.
  params:
    target:
      type: string
      default: s3
    compression:
      type: object
      default: {}
      properties:
        level:
          type: integer
          default: 6
          minimum: 1
          maximum: 9
        algo:
          type: string
          enum: [gzip, zstd]
          default: zstd
  required: [label]
  additionalProperties: true
  parallel: true
  execution-group: db
get-password:
  description: Show a password.
  params:
    username:
      type: string
restart: {}
stop:
`

func TestParseActions(t *testing.T) {
	a, err := ParseActions([]byte(sampleActions))
	if err != nil {
		t.Fatal(err)
	}
	if got := a.Names(); !reflect.DeepEqual(got, []string{"backup", "get-password", "restart", "stop"}) {
		t.Errorf("names %v", got)
	}
	b, _ := a.Spec("backup")
	if !b.Parallel || b.ExecutionGroup != "db" || b.Description != "Take a backup." {
		t.Errorf("backup spec: %+v", b)
	}
	if b.Schema["title"] != "backup" || b.Schema["type"] != "object" || b.Schema["additionalProperties"] != true {
		t.Errorf("backup schema: %#v", b.Schema)
	}
	g, _ := a.Spec("get-password")
	if g.Schema["additionalProperties"] != false {
		t.Errorf("default additionalProperties: %#v", g.Schema)
	}
	if _, ok := g.Schema["parallel"]; ok {
		t.Error("parallel leaked into the schema")
	}
}

func TestActionsValidate(t *testing.T) {
	a, err := ParseActions([]byte(sampleActions))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, action string
		in           map[string]any
		want         map[string]any
		err          string
	}{
		{"defaults filled", "backup", map[string]any{"label": "nightly"},
			map[string]any{"label": "nightly", "target": "s3", "compression": map[string]any{"level": int64(6), "algo": "zstd"}}, ""},
		{"nested partial", "backup", map[string]any{"label": "x", "compression": map[string]any{"level": 9}},
			map[string]any{"label": "x", "target": "s3", "compression": map[string]any{"level": int64(9), "algo": "zstd"}}, ""},
		{"extra allowed", "backup", map[string]any{"label": "x", "extra": 1.5},
			map[string]any{"label": "x", "extra": 1.5, "target": "s3", "compression": map[string]any{"level": int64(6), "algo": "zstd"}}, ""},
		{"map any keys", "backup", map[string]any{"label": "x", "compression": map[any]any{"level": 2}},
			map[string]any{"label": "x", "target": "s3", "compression": map[string]any{"level": int64(2), "algo": "zstd"}}, ""},
		{"required missing", "backup", nil, nil, "invalid params: missing parameter 'label'"},
		{"nested bounds", "backup", map[string]any{"label": "x", "compression": map[string]any{"level": 10}}, nil, "maximum"},
		{"enum", "backup", map[string]any{"label": "x", "compression": map[string]any{"algo": "lz4"}}, nil, "parameter compression.algo: "},
		{"extra rejected by default", "get-password", map[string]any{"user": "x"}, nil, "unknown parameters 'user' not allowed"},
		{"wrong type", "get-password", map[string]any{"username": 3}, nil, "want string"},
		{"empty ok", "restart", nil, map[string]any{}, ""},
		{"null spec", "stop", map[string]any{}, map[string]any{}, ""},
		{"unknown action", "nope", nil, nil, `unknown action "nope"`},
		{"unsupported value", "backup", map[string]any{"label": struct{}{}}, nil, "unsupported value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := a.Validate(tt.action, tt.in)
			checkResult(t, got, err, tt.want, tt.err)
		})
	}
}

func TestValidateDoesNotShareDefaults(t *testing.T) {
	a, _ := ParseActions([]byte(sampleActions))
	first, _ := a.Validate("backup", map[string]any{"label": "a"})
	first["compression"].(map[string]any)["level"] = int64(1)
	second, _ := a.Validate("backup", map[string]any{"label": "b"})
	if second["compression"].(map[string]any)["level"] != int64(6) {
		t.Error("a caller mutated the schema defaults")
	}
}

func TestNilActions(t *testing.T) {
	var a *Actions
	if _, err := a.Validate("x", nil); !errors.Is(err, ErrInvalid) {
		t.Errorf("err = %v", err)
	}
}

func TestParseActionsErrors(t *testing.T) {
	tests := []struct{ name, yaml, want string }{
		{"bad name", "Backup: {}", "invalid action name"},
		{"trailing hyphen", "backup-: {}", "invalid action name"},
		{"reserved", "juju: {}", "reserved"},
		{"reserved prefix", "juju-run: {}", "reserved"},
		{"not map", "- a", "must be a map"},
		{"spec not map", "a: 3", "a: must be a map"},
		{"ref", "a:\n  params:\n    x: {$ref: 'http://example.com/s.json'}", "$ref"},
		{"schema key", "a:\n  $schema: http://json-schema.org/draft-07/schema#", "$schema"},
		{"deep ref", "a:\n  params:\n    x:\n      items: [{$ref: '#'}]", "$ref"},
		{"description type", "a: {description: [x]}", "a.description: must be a string"},
		{"params type", "a: {params: [x]}", "a.params: must be a map"},
		{"param type", "a:\n  params:\n    x: 1", "a.params.x: must be a map"},
		{"parallel type", "a: {parallel: yes please}", "a.parallel: must be a boolean"},
		{"required type", "a: {required: x}", "a.required: must be a list"},
		{"additionalProperties type", "a: {additionalProperties: 1}", "additionalProperties: must be a boolean"},
		{"bad schema", "a:\n  params:\n    x: {type: banana}", "invalid params schema"},
		{"bad pattern", "a:\n  params:\n    x: {type: string, pattern: '('}", "invalid params schema"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseActions([]byte(tt.yaml))
			if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want %q", err, tt.want)
			}
		})
	}
	if a, err := ParseActions(nil); err != nil || len(a.Specs) != 0 {
		t.Errorf("empty actions.yaml: %v %v", a, err)
	}
}

func TestActionSchemaOverrides(t *testing.T) {
	a, err := ParseActions([]byte("a:\n  title: Do A\n  minProperties: 1\n  params:\n    x: {type: integer}\n"))
	if err != nil {
		t.Fatal(err)
	}
	s, _ := a.Spec("a")
	if s.Schema["title"] != "Do A" || s.Schema["minProperties"] != int64(1) {
		t.Errorf("schema %#v", s.Schema)
	}
	if _, err := a.Validate("a", nil); err == nil {
		t.Error("copied minProperties not enforced")
	}
	if _, err := a.Validate("a", map[string]any{"x": 2.0}); err != nil {
		t.Errorf("integral float for integer: %v", err)
	}
}
