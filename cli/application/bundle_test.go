package application

import (
	"reflect"
	"strings"
	"testing"

	"github.com/droverhq/drover/charm"
	"github.com/droverhq/drover/cli/internal/modelcmd"
)

func TestPlacementFlags(t *testing.T) {
	for _, p := range modelcmd.SplitList([]string{"0,lxd:1", "kv/0", "new"}) {
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
