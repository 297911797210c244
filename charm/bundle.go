package charm

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// BundleFile is the conventional bundle file name.
const BundleFile = "bundle.yaml"

var (
	machineIDRE = regexp.MustCompile(`^(?:0|[1-9][0-9]*)$`)
	// placementRE is [<container>:](new|<machine>|<app>[/<unit>]).
	placementRE = regexp.MustCompile(`^(?:(lxd|kvm):)?(new|[0-9]+|[a-z][a-z0-9]*(?:-[a-z0-9]*[a-z][a-z0-9]*)*(?:/[0-9]+)?)$`)
)

// Bundle is a validated bundle.yaml.
type Bundle struct {
	Name         string
	Description  string
	DefaultBase  string
	Series       string
	Type         string // the `bundle:` key, e.g. "kubernetes"
	Applications map[string]*BundleApplication
	Machines     map[string]*BundleMachine
	Relations    []BundleRelation
	// Saas maps offer aliases to offer URLs; relations may name them.
	Saas map[string]string
}

// BundleApplication is one application in a bundle.
type BundleApplication struct {
	Name string
	// Charm is a charm name or a local path (see IsLocalCharm).
	Charm    string
	Channel  string
	Revision *int
	Base     string
	Series   string
	NumUnits int
	// To holds the raw placement directives; Placements the parsed ones.
	To          []string
	Placements  []Placement
	Options     map[string]any
	Constraints string
	Expose      bool
	Trust       bool
	Annotations map[string]string
	Bindings    map[string]string
	Storage     map[string]string
	Resources   map[string]any
}

// IsLocalCharm reports whether Charm is a filesystem path rather than a
// charm name: local paths start with ".", "/" or "local:".
func (a *BundleApplication) IsLocalCharm() bool {
	return strings.HasPrefix(a.Charm, ".") || strings.HasPrefix(a.Charm, "/") || strings.HasPrefix(a.Charm, "local:")
}

// BundleMachine is a machine declared in a bundle.
type BundleMachine struct {
	ID          string
	Constraints string
	Series      string
	Base        string
	Annotations map[string]string
}

// BundleRelation relates two application endpoints; Endpoint may be empty
// when the bundle leaves it to be inferred from interfaces.
type BundleRelation struct {
	A, B RelationEnd
}

// RelationEnd is one side of a bundle relation.
type RelationEnd struct {
	Application string
	Endpoint    string
}

func (e RelationEnd) String() string {
	if e.Endpoint == "" {
		return e.Application
	}
	return e.Application + ":" + e.Endpoint
}

// Placement is a parsed `to` directive.
type Placement struct {
	// ContainerType is "lxd", "kvm" or empty for the machine itself.
	ContainerType string
	// Exactly one of New, Machine and Application is set.
	New         bool
	Machine     string
	Application string
	// Unit is the unit number of Application, or -1 for "any unit".
	Unit int
}

// ParseBundle parses and validates bundle.yaml content.
func ParseBundle(data []byte) (*Bundle, error) {
	v, err := decodeYAML(BundleFile, data)
	if err != nil {
		return nil, err
	}
	p := &problems{file: BundleFile}
	top, ok := v.(map[string]any)
	if !ok {
		if v == nil {
			return nil, invalid(BundleFile, "", "empty document")
		}
		return nil, invalid(BundleFile, "", "must be a map, not %s", typeName(v))
	}
	checkKeys(p, "", top, "applications", "machines", "relations", "description", "name",
		"default-base", "series", "bundle", "saas")
	b := &Bundle{
		Name:         getString(p, "name", top["name"]),
		Description:  getString(p, "description", top["description"]),
		DefaultBase:  getString(p, "default-base", top["default-base"]),
		Series:       getString(p, "series", top["series"]),
		Type:         getString(p, "bundle", top["bundle"]),
		Applications: map[string]*BundleApplication{},
		Machines:     map[string]*BundleMachine{},
		Saas:         map[string]string{},
	}
	apps, _ := getMap(p, "applications", top["applications"])
	if len(apps) == 0 {
		p.add("applications", "at least one application is required")
	}
	for _, name := range sortedKeys(apps) {
		if a := parseBundleApp(p, name, apps[name]); a != nil {
			b.Applications[name] = a
		}
	}
	machines, _ := getMap(p, "machines", top["machines"])
	for _, id := range sortedKeys(machines) {
		if m := parseBundleMachine(p, id, machines[id]); m != nil {
			b.Machines[id] = m
		}
	}
	saas, _ := getMap(p, "saas", top["saas"])
	for _, name := range sortedKeys(saas) {
		field := join("saas", name)
		if !ValidName(name) {
			p.add(field, "invalid application name")
		}
		if _, dup := apps[name]; dup {
			p.add(field, "name already used by an application")
		}
		sm, ok := getMap(p, field, saas[name])
		if !ok {
			continue
		}
		checkKeys(p, field, sm, "url")
		b.Saas[name] = getString(p, field+".url", sm["url"])
		if b.Saas[name] == "" {
			p.add(field+".url", "required")
		}
	}
	b.Relations = parseBundleRelations(p, top["relations"])
	if p.ok() {
		b.verify(p)
	}
	if !p.ok() {
		return nil, p.err()
	}
	return b, nil
}

func parseBundleApp(p *problems, name string, v any) *BundleApplication {
	field := join("applications", name)
	if !ValidName(name) {
		p.add(field, "invalid application name")
	}
	m, ok := getMap(p, field, v)
	if !ok {
		return nil
	}
	if m == nil {
		p.add(field, "charm is required")
		return nil
	}
	checkKeys(p, field, m, "charm", "channel", "revision", "base", "series", "num_units", "scale",
		"to", "expose", "exposed-endpoints", "options", "config", "annotations", "constraints",
		"storage", "devices", "resources", "bindings", "trust", "offers", "plan")
	a := &BundleApplication{
		Name:        name,
		Charm:       getString(p, field+".charm", m["charm"]),
		Channel:     getString(p, field+".channel", m["channel"]),
		Base:        getString(p, field+".base", m["base"]),
		Series:      getString(p, field+".series", m["series"]),
		Constraints: getString(p, field+".constraints", m["constraints"]),
		Expose:      getBool(p, field+".expose", m["expose"]),
		Trust:       getBool(p, field+".trust", m["trust"]),
		Annotations: stringMap(p, field+".annotations", m["annotations"]),
		Bindings:    stringMap(p, field+".bindings", m["bindings"]),
		Storage:     stringMap(p, field+".storage", m["storage"]),
	}
	if a.Charm == "" {
		p.add(field+".charm", "required")
	}
	a.Revision = bundleRevision(p, field, m)
	a.NumUnits = bundleNumUnits(p, field, m)
	a.Options = bundleOptions(p, field, m)
	if r, ok := getMap(p, field+".resources", m["resources"]); ok {
		a.Resources = r
	}
	a.To, a.Placements = bundlePlacements(p, field, m["to"])
	return a
}

// bundleRevision reads an application's revision; nil when not given.
func bundleRevision(p *problems, field string, m map[string]any) *int {
	if m["revision"] == nil {
		return nil
	}
	n, ok := getInt(p, field+".revision", m["revision"])
	if !ok {
		return nil
	}
	if n < 0 || n > 1<<31 {
		p.add(field+".revision", "must be a non-negative integer")
		return nil
	}
	r := int(n)
	return &r
}

// bundleNumUnits reads num_units or its synonym scale.
func bundleNumUnits(p *problems, field string, m map[string]any) int {
	units, unitsKey := m["num_units"], "num_units"
	if m["scale"] != nil {
		if units != nil {
			p.add(field, "num_units and scale are synonyms; give only one")
		}
		units, unitsKey = m["scale"], "scale"
	}
	if units == nil {
		return 0
	}
	n, ok := getInt(p, field+"."+unitsKey, units)
	if !ok {
		return 0
	}
	if n < 0 || n > 1<<20 {
		p.add(field+"."+unitsKey, "must be between 0 and %d", 1<<20)
		return 0
	}
	return int(n)
}

// bundleOptions reads options or its synonym config.
func bundleOptions(p *problems, field string, m map[string]any) map[string]any {
	opts, optsKey := m["options"], "options"
	if m["config"] != nil {
		if opts != nil {
			p.add(field, "options and config are synonyms; give only one")
		}
		opts, optsKey = m["config"], "config"
	}
	out, _ := getMap(p, field+"."+optsKey, opts)
	return out
}

// bundlePlacements reads the to directives and parses each.
func bundlePlacements(p *problems, field string, v any) ([]string, []Placement) {
	var to []string
	// A single directive is accepted as a string for convenience.
	if s, isString := v.(string); isString {
		to = []string{s}
	} else {
		to = getStringList(p, field+".to", v)
	}
	var pls []Placement
	for i, d := range to {
		pl, err := ParsePlacement(d)
		if err != nil {
			p.add(fmt.Sprintf("%s.to[%d]", field, i), "%v", err)
			continue
		}
		pls = append(pls, pl)
	}
	return to, pls
}

func stringMap(p *problems, field string, v any) map[string]string {
	m, ok := getMap(p, field, v)
	if !ok || m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for _, k := range sortedKeys(m) {
		out[k] = getString(p, join(field, k), m[k])
	}
	return out
}

func parseBundleMachine(p *problems, id string, v any) *BundleMachine {
	field := join("machines", id)
	if !machineIDRE.MatchString(id) {
		p.add(field, "machine id must be a non-negative integer")
	}
	m, ok := getMap(p, field, v)
	if !ok {
		return nil
	}
	checkKeys(p, field, m, "constraints", "series", "base", "annotations")
	return &BundleMachine{
		ID:          id,
		Constraints: getString(p, field+".constraints", m["constraints"]),
		Series:      getString(p, field+".series", m["series"]),
		Base:        getString(p, field+".base", m["base"]),
		Annotations: stringMap(p, field+".annotations", m["annotations"]),
	}
}

func parseBundleRelations(p *problems, v any) []BundleRelation {
	if v == nil {
		return nil
	}
	l, ok := v.([]any)
	if !ok {
		p.add("relations", "must be a list, not %s", typeName(v))
		return nil
	}
	var out []BundleRelation
	for i, e := range l {
		field := fmt.Sprintf("relations[%d]", i)
		pair, ok := e.([]any)
		if !ok || len(pair) != 2 {
			p.add(field, "must be a pair of endpoints like [\"web:db\", \"db:server\"]")
			continue
		}
		var ends [2]RelationEnd
		good := true
		for j, s := range pair {
			str, isString := s.(string)
			if !isString {
				p.add(fmt.Sprintf("%s[%d]", field, j), "must be a string, not %s", typeName(s))
				good = false
				continue
			}
			app, ep, _ := strings.Cut(str, ":")
			ends[j] = RelationEnd{Application: app, Endpoint: ep}
			if !ValidName(app) || strings.Contains(str, ":") && !endpointRE.MatchString(ep) {
				p.add(fmt.Sprintf("%s[%d]", field, j), "invalid endpoint %q (want app or app:endpoint)", str)
				good = false
			}
		}
		if good {
			out = append(out, BundleRelation{A: ends[0], B: ends[1]})
		}
	}
	return out
}

// ParsePlacement parses one `to` directive: "new", a machine id, "app" or
// "app/N", each optionally prefixed by a container type ("lxd:0").
func ParsePlacement(s string) (Placement, error) {
	sub := placementRE.FindStringSubmatch(s)
	if sub == nil {
		return Placement{}, fmt.Errorf("invalid placement directive %q", s)
	}
	pl := Placement{ContainerType: sub[1], Unit: -1}
	target := sub[2]
	switch {
	case target == "new":
		pl.New = true
	case machineIDRE.MatchString(target):
		pl.Machine = target
	case target[0] >= '0' && target[0] <= '9':
		return Placement{}, fmt.Errorf("invalid machine id in placement directive %q", s)
	default:
		app, unit, hasUnit := strings.Cut(target, "/")
		pl.Application = app
		if hasUnit {
			n, err := strconv.Atoi(unit)
			if err != nil || (len(unit) > 1 && unit[0] == '0') {
				return Placement{}, fmt.Errorf("invalid unit number in placement directive %q", s)
			}
			pl.Unit = n
		}
	}
	return pl, nil
}

// verify applies the cross-reference rules once every part parsed.
func (b *Bundle) verify(p *problems) {
	for _, name := range sortedKeys(b.Applications) {
		a := b.Applications[name]
		field := join("applications", name)
		if len(a.To) > a.NumUnits {
			p.add(field+".to", "%d placement directives for %d units", len(a.To), a.NumUnits)
		}
		for i, pl := range a.Placements {
			pf := fmt.Sprintf("%s.to[%d]", field, i)
			switch {
			case pl.Machine != "":
				if _, ok := b.Machines[pl.Machine]; !ok {
					p.add(pf, "machine %q is not declared in machines", pl.Machine)
				}
			case pl.Application != "":
				target, ok := b.Applications[pl.Application]
				switch {
				case !ok:
					p.add(pf, "application %q is not declared", pl.Application)
				case pl.Application == name:
					p.add(pf, "an application cannot be placed on its own units")
				case pl.Unit >= target.NumUnits:
					p.add(pf, "application %q has only %d units", pl.Application, target.NumUnits)
				}
			}
		}
	}
	seen := map[[2]string]bool{}
	for i, r := range b.Relations {
		field := fmt.Sprintf("relations[%d]", i)
		for _, e := range []RelationEnd{r.A, r.B} {
			_, isApp := b.Applications[e.Application]
			_, isSaas := b.Saas[e.Application]
			if !isApp && !isSaas {
				p.add(field, "application %q is not declared", e.Application)
			}
		}
		if r.A.Application == r.B.Application {
			p.add(field, "relates application %q to itself", r.A.Application)
		}
		key := [2]string{r.A.String(), r.B.String()}
		if key[0] > key[1] {
			key[0], key[1] = key[1], key[0]
		}
		if seen[key] {
			p.add(field, "duplicate relation %s %s", key[0], key[1])
		}
		seen[key] = true
	}
}

// ResolveCharmPaths makes relative local charm paths absolute, relative to
// baseDir (normally the directory holding the bundle file).
func (b *Bundle) ResolveCharmPaths(baseDir string) error {
	abs, err := filepath.Abs(baseDir)
	if err != nil {
		return err
	}
	for _, a := range b.Applications {
		if !a.IsLocalCharm() {
			continue
		}
		path := strings.TrimPrefix(a.Charm, "local:")
		if !filepath.IsAbs(path) {
			path = filepath.Join(abs, path)
		}
		a.Charm = filepath.Clean(path)
	}
	return nil
}
