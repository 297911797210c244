package cli

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/charm"
)

func TestParseKeyValues(t *testing.T) {
	got, err := parseKeyValues([]string{"a=1", "b=x=y", "c="})
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"a": "1", "b": "x=y", "c": ""}; !reflect.DeepEqual(got, want) {
		t.Errorf("got %v", got)
	}
	for _, bad := range [][]string{{"noequals"}, {"=v"}, {"a=1", "a=2"}} {
		_, err := parseKeyValues(bad)
		var ue usageError
		if !errors.As(err, &ue) {
			t.Errorf("%v: err %v, want a usage error", bad, err)
		}
	}
}

func TestParseActionParams(t *testing.T) {
	got, err := parseActionParams([]string{"n=3", "flag=true", "s=hello", "a.b=1", "a.c=x"}, false)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"n": 3, "flag": true, "s": "hello", "a": map[string]any{"b": 1, "c": "x"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %#v", got)
	}
	got, _ = parseActionParams([]string{"n=3"}, true)
	if got["n"] != "3" {
		t.Errorf("--string-args: %#v", got)
	}
	if _, err := parseActionParams([]string{"a=1", "a.b=2"}, false); err == nil {
		t.Error("a value and a map under one name accepted")
	}
}

func TestSplitModelRef(t *testing.T) {
	for ref, want := range map[string][2]string{
		"demo": {"", "demo"}, "ctl:demo": {"ctl", "demo"}, "ctl:": {"ctl", ""}, "": {"", ""},
		"ctl:admin/demo": {"ctl", "admin/demo"},
	} {
		c, m := splitModelRef(ref)
		if c != want[0] || m != want[1] {
			t.Errorf("%q: %q %q", ref, c, m)
		}
	}
}

func TestSplitWords(t *testing.T) {
	got, err := splitWords(`config kv title="hello world" 'a b' c\ d`)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"config", "kv", "title=hello world", "a b", "c d"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q", got)
	}
	if _, err := splitWords(`"open`); err == nil {
		t.Error("unterminated quote accepted")
	}
}

func TestPlacementFlags(t *testing.T) {
	for _, p := range splitList([]string{"0,lxd:1", "kv/0", "new"}) {
		if _, err := charm.ParsePlacement(p); err != nil {
			t.Errorf("%q: %v", p, err)
		}
	}
	if _, err := charm.ParsePlacement("bad placement"); err == nil {
		t.Error("bad placement accepted")
	}
}

func TestBundlePlanOrder(t *testing.T) {
	b, err := charm.ParseBundle([]byte(`
machines:
  "0": {}
applications:
  web:
    charm: ./web
    num_units: 2
    to: ["db/0", "0"]
    expose: true
  db:
    charm: ./db
    num_units: 1
    to: ["0"]
  cache:
    charm: ./cache
    num_units: 1
  logs:
    charm: ./logs
relations:
  - [web:db, db]
  - [logs, web]
`))
	if err != nil {
		t.Fatal(err)
	}
	steps, err := planBundle(b)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range steps {
		got = append(got, s.String())
	}
	want := []string{
		"deploy cache (./cache, 1 units)",
		"deploy db (./db, 0 units)",
		"deploy logs (./logs, 0 units)",
		"deploy web (./web, 0 units)",
		"add unit of db to machine 0",
		"add unit of web to db/0",
		"add unit of web to machine 0",
		"expose web",
		"relate web:db db",
		"relate logs web",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("plan:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestBundlePlanCycle(t *testing.T) {
	b := &charm.Bundle{Applications: map[string]*charm.BundleApplication{
		"a": {Name: "a", Charm: "./a", NumUnits: 1, Placements: []charm.Placement{{Application: "b", Unit: -1}}},
		"b": {Name: "b", Charm: "./b", NumUnits: 1, Placements: []charm.Placement{{Application: "a", Unit: -1}}},
	}}
	if _, err := planBundle(b); err == nil || !strings.Contains(err.Error(), "cycle") {
		t.Errorf("cycle: %v", err)
	}
}

func TestMatchRelation(t *testing.T) {
	ep := func(app, name string) api.RelationEndpoint {
		return api.RelationEndpoint{Application: app, Endpoint: api.Endpoint{Name: name}}
	}
	rels := []api.Relation{
		{ID: 1, Key: "kv:kv web:db", Endpoints: []api.RelationEndpoint{ep("kv", "kv"), ep("web", "db")}},
		{ID: 2, Key: "kv:kv web:cache", Endpoints: []api.RelationEndpoint{ep("kv", "kv"), ep("web", "cache")}},
		{ID: 3, Key: "kv:cluster", Endpoints: []api.RelationEndpoint{ep("kv", "cluster")}},
	}
	if id, err := matchRelation(rels, "web:cache", "kv"); err != nil || id != 2 {
		t.Errorf("web:cache kv: %d %v", id, err)
	}
	if _, err := matchRelation(rels, "web", "kv"); err == nil || !strings.Contains(err.Error(), "ambiguous") {
		t.Errorf("web kv: %v", err)
	}
	if _, err := matchRelation(rels, "web", "nope"); err == nil {
		t.Error("missing relation matched")
	}
}
