package charm

import (
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

const sampleBundle = `
name: web-stack
description: A web app with a key-value store.
default-base: ubuntu@22.04
machines:
  "0":
    constraints: mem=4G
  1:
    base: ubuntu@24.04
applications:
  kv:
    charm: ./charms/kv
    num_units: 2
    to: ["0", "lxd:1"]
    options:
      port: 8080
    constraints: cores=2
  web:
    charm: web
    channel: latest/stable
    revision: 42
    scale: 3
    to: [kv/0, "lxd:kv/1", new]
    config:
      debug: true
    expose: true
    bindings:
      "": alpha
  monitor:
    charm: /abs/monitor
relations:
  - ["web:db", "kv:db"]
  - [monitor, web]
  - [web:metrics, remote-prom]
saas:
  remote-prom:
    url: admin/cos.prometheus
`

func TestParseBundle(t *testing.T) {
	b, err := ParseBundle([]byte(sampleBundle))
	if err != nil {
		t.Fatal(err)
	}
	kv, web := b.Applications["kv"], b.Applications["web"]
	if kv.NumUnits != 2 || kv.Options["port"] != 8080 || !kv.IsLocalCharm() || kv.Constraints != "cores=2" {
		t.Errorf("kv: %+v", kv)
	}
	if web.NumUnits != 3 || *web.Revision != 42 || !web.Expose || web.Options["debug"] != true || web.IsLocalCharm() {
		t.Errorf("web: %+v", web)
	}
	wantPl := []Placement{
		{Application: "kv", Unit: 0},
		{ContainerType: "lxd", Application: "kv", Unit: 1},
		{New: true, Unit: -1},
	}
	if !reflect.DeepEqual(web.Placements, wantPl) {
		t.Errorf("placements %+v", web.Placements)
	}
	if b.Machines["1"] == nil || b.Machines["1"].Base != "ubuntu@24.04" {
		t.Errorf("machines %+v", b.Machines)
	}
	wantRel := []BundleRelation{
		{A: RelationEnd{"web", "db"}, B: RelationEnd{"kv", "db"}},
		{A: RelationEnd{"monitor", ""}, B: RelationEnd{"web", ""}},
		{A: RelationEnd{"web", "metrics"}, B: RelationEnd{"remote-prom", ""}},
	}
	if !reflect.DeepEqual(b.Relations, wantRel) {
		t.Errorf("relations %+v", b.Relations)
	}
	base := t.TempDir()
	if err := b.ResolveCharmPaths(base); err != nil {
		t.Fatal(err)
	}
	if kv.Charm != filepath.Join(base, "charms/kv") || b.Applications["monitor"].Charm != "/abs/monitor" || web.Charm != "web" {
		t.Errorf("resolved: %q %q %q", kv.Charm, b.Applications["monitor"].Charm, web.Charm)
	}
}

func TestParseBundleErrors(t *testing.T) {
	app := "applications:\n  a: {charm: a, num_units: 1}\n"
	tests := []struct{ name, yaml, want string }{
		{"empty", "", "empty document"},
		{"unknown top", app + "foo: 1", "bundle.yaml: foo: unknown key"},
		{"no applications", "name: x", "at least one application"},
		{"bad app name", "applications:\n  App: {charm: a}", "invalid application name"},
		{"app name digits", "applications:\n  app-1: {charm: a}", "invalid application name"},
		{"missing charm", "applications:\n  a: {num_units: 1}", "applications.a.charm: required"},
		{"null app", "applications:\n  a:", "charm is required"},
		{"unknown app key", "applications:\n  a: {charm: a, num-units: 1}", "applications.a.num-units: unknown key"},
		{"negative units", "applications:\n  a: {charm: a, num_units: -1}", "must be between"},
		{"units type", "applications:\n  a: {charm: a, num_units: two}", "must be an integer"},
		{"units and scale", "applications:\n  a: {charm: a, num_units: 1, scale: 1}", "synonyms"},
		{"options and config", "applications:\n  a: {charm: a, options: {}, config: {}}", "synonyms"},
		{"bad placement", "applications:\n  a: {charm: a, num_units: 1, to: ['lxd:']}", "invalid placement directive"},
		{"bad container", "applications:\n  a: {charm: a, num_units: 1, to: ['docker:0']}", "invalid placement directive"},
		{"undeclared machine", app + "  b: {charm: b, num_units: 1, to: ['3']}", "machine \"3\" is not declared"},
		{"undeclared app", app + "  b: {charm: b, num_units: 1, to: [c/0]}", "application \"c\" is not declared"},
		{"unit out of range", app + "  b: {charm: b, num_units: 1, to: [a/1]}", "has only 1 units"},
		{"self placement", "applications:\n  a: {charm: a, num_units: 2, to: [a/0]}", "its own units"},
		{"too many placements", "machines: {0: {}}\napplications:\n  a: {charm: a, num_units: 1, to: ['0', new]}", "2 placement directives for 1 units"},
		{"bad machine id", "machines: {x: {}}\n" + app, "machine id must be"},
		{"leading zero machine", "machines: {'01': {}}\n" + app, "machine id must be"},
		{"relation unknown app", app + "relations: [[a, b]]", "application \"b\" is not declared"},
		{"relation self", app + "relations: [['a:x', 'a:y']]", "to itself"},
		{"relation not pair", app + "relations: [[a]]", "must be a pair"},
		{"relation bad endpoint", app + "  b: {charm: b}\nrelations: [['a:', b]]", "invalid endpoint"},
		{"relation duplicate", app + "  b: {charm: b}\nrelations: [['a:x', 'b:y'], ['b:y', 'a:x']]", "duplicate relation"},
		{"relations type", app + "relations: {a: b}", "relations: must be a list"},
		{"revision negative", "applications:\n  a: {charm: a, revision: -2}", "non-negative"},
		{"expose type", "applications:\n  a: {charm: a, expose: maybe}", "must be a boolean"},
		{"saas url", app + "saas:\n  s: {}", "saas.s.url: required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseBundle([]byte(tt.yaml))
			if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want %q", err, tt.want)
			}
		})
	}
}

func TestParsePlacement(t *testing.T) {
	tests := []struct {
		in   string
		want Placement
		bad  bool
	}{
		{in: "0", want: Placement{Machine: "0", Unit: -1}},
		{in: "12", want: Placement{Machine: "12", Unit: -1}},
		{in: "new", want: Placement{New: true, Unit: -1}},
		{in: "lxd:new", want: Placement{ContainerType: "lxd", New: true, Unit: -1}},
		{in: "kvm:3", want: Placement{ContainerType: "kvm", Machine: "3", Unit: -1}},
		{in: "kv", want: Placement{Application: "kv", Unit: -1}},
		{in: "kv/2", want: Placement{Application: "kv", Unit: 2}},
		{in: "lxd:my-app/0", want: Placement{ContainerType: "lxd", Application: "my-app", Unit: 0}},
		{in: "", bad: true},
		{in: "01", bad: true},
		{in: "kv/01", bad: true},
		{in: "kv/", bad: true},
		{in: "lxd:lxd:0", bad: true},
		{in: "Kv", bad: true},
		{in: "zone=a", bad: true},
	}
	for _, tt := range tests {
		got, err := ParsePlacement(tt.in)
		if tt.bad {
			if err == nil {
				t.Errorf("%q: accepted as %+v", tt.in, got)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%q: got %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
	}
}

func TestBundleConfigFeedsValidateSettings(t *testing.T) {
	b, err := ParseBundle([]byte("applications:\n  a:\n    charm: a\n    options: {port: 80, ratio: 1, debug: 'true'}\n"))
	if err != nil {
		t.Fatal(err)
	}
	c, _ := ParseConfig([]byte(sampleConfig))
	s, err := c.ValidateSettings(b.Applications["a"].Options)
	if err != nil {
		t.Fatal(err)
	}
	if s["port"] != int64(80) || s["ratio"] != 1.0 || s["debug"] != true {
		t.Errorf("settings %#v", s)
	}
}
