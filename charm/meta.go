package charm

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// MetadataFile is the only file a charm cannot do without (CHARM-CONTRACT §1.1).
const MetadataFile = "metadata.yaml"

var (
	// nameRE is Juju's charm and application name rule: lowercase words
	// joined by single hyphens, each word containing a letter, so names
	// like "app-0" (ambiguous with unit names) are rejected.
	nameRE = regexp.MustCompile(`^[a-z][a-z0-9]*(-[a-z0-9]*[a-z][a-z0-9]*)*$`)
	// endpointRE matches endpoint, storage, container and similar names:
	// they become hook names, so they must be plain identifiers.
	endpointRE = regexp.MustCompile(`^[a-z][a-z0-9]*(?:[-_][a-z0-9]+)*$`)
)

// ValidName reports whether s is a valid charm or application name.
func ValidName(s string) bool { return nameRE.MatchString(s) }

// Role is the part an endpoint plays in a relation.
type Role string

// Endpoint roles, matching the metadata.yaml sections provides/requires/peers.
const (
	RoleProvider Role = "provider"
	RoleRequirer Role = "requirer"
	RolePeer     Role = "peer"
)

// Scope says which units of the related application an endpoint sees.
type Scope string

// Relation scopes: global sees every remote unit, container only the units
// on the same machine (principal/subordinate pairs).
const (
	ScopeGlobal    Scope = "global"
	ScopeContainer Scope = "container"
)

// JujuInfo is the implicit endpoint every application provides.
const JujuInfo = "juju-info"

// Endpoint is one relation endpoint declared in metadata.yaml (or the
// implicit juju-info endpoint).
type Endpoint struct {
	Name      string
	Role      Role
	Interface string
	Scope     Scope
	// Limit is the maximum number of relations; 0 means unlimited.
	// Juju does not enforce it; it is informational.
	Limit int
	// Optional is informational only, as in Juju. An endpoint may also carry
	// a description, which is accepted and dropped.
	Optional bool
}

// Meta is a validated metadata.yaml.
type Meta struct {
	Name        string
	DisplayName string
	Summary     string
	Description string
	Subordinate bool

	Provides map[string]Endpoint
	Requires map[string]Endpoint
	Peers    map[string]Endpoint

	// ExtraBindings are extra network binding names for network-get.
	ExtraBindings []string
	Storage       map[string]Storage
	Resources     map[string]Resource
	Containers    map[string]Container
	Devices       map[string]Device
	Payloads      map[string]Payload

	Assumes    []Assumption
	CharmUser  CharmUser
	Terms      []string
	Categories []string
	Tags       []string

	// Legacy ("v1") metadata.
	Series         []string
	MinJujuVersion string
	Deployment     *Deployment
}

// isMetaKey reports whether metadata.yaml may contain key. Besides Juju's
// schema this includes the informational keys charmcraft pack writes
// (display-name, docs, issues, maintainers, source, website) and the
// obsolete revision and format keys Juju still tolerates; refusing those
// would reject charms that Juju deploys.
func isMetaKey(key string) bool {
	switch key {
	case "name", "summary", "description", "subordinate",
		"provides", "requires", "peers", "extra-bindings",
		"storage", "resources", "containers", "devices",
		"payloads", "assumes", "charm-user", "terms",
		"categories", "tags", "series", "min-juju-version", "deployment",
		"display-name", "docs", "issues", "maintainers", "maintainer",
		"source", "website", "revision", "format":
		return true
	}
	return false
}

// ParseMeta parses and validates metadata.yaml content.
func ParseMeta(data []byte) (*Meta, error) {
	v, err := decodeYAML(MetadataFile, data)
	if err != nil {
		return nil, err
	}
	return metaFromValue(MetadataFile, v)
}

// metaFromValue validates an already decoded document; charmcraft.yaml
// reuses it with the metadata keys it splits off.
func metaFromValue(file string, v any) (*Meta, error) {
	p := &problems{file: file}
	top, ok := v.(map[string]any)
	if !ok {
		if v == nil {
			return nil, invalid(file, "", "empty document")
		}
		return nil, invalid(file, "", "must be a map, not %s", typeName(v))
	}
	for _, k := range sortedKeys(top) {
		if !isMetaKey(k) {
			p.add(k, "unknown key")
		}
	}
	m := &Meta{
		Name:           getString(p, "name", top["name"]),
		DisplayName:    getString(p, "display-name", top["display-name"]),
		Summary:        getString(p, "summary", top["summary"]),
		Description:    getString(p, "description", top["description"]),
		Subordinate:    getBool(p, "subordinate", top["subordinate"]),
		Terms:          getStringList(p, "terms", top["terms"]),
		Categories:     getStringList(p, "categories", top["categories"]),
		Tags:           getStringList(p, "tags", top["tags"]),
		Series:         getStringList(p, "series", top["series"]),
		MinJujuVersion: getString(p, "min-juju-version", top["min-juju-version"]),
	}
	if top["name"] == nil {
		p.add("name", "required")
	} else if _, isString := top["name"].(string); isString && !ValidName(m.Name) {
		p.add("name", "invalid charm name %q", m.Name)
	}
	checkVersions(p, top)

	m.Provides = parseEndpoints(p, "provides", RoleProvider, top["provides"])
	m.Requires = parseEndpoints(p, "requires", RoleRequirer, top["requires"])
	m.Peers = parseEndpoints(p, "peers", RolePeer, top["peers"])
	m.ExtraBindings = parseExtraBindings(p, top["extra-bindings"])
	m.Storage = parseStorage(p, top["storage"])
	m.Resources = parseResources(p, top["resources"])
	m.Containers = parseContainers(p, top["containers"])
	m.Devices = parseDevices(p, top["devices"])
	m.Payloads = parsePayloads(p, top["payloads"])
	m.Assumes = parseAssumes(p, "assumes", top["assumes"])
	m.Deployment = parseDeployment(p, top["deployment"])
	if cu := getString(p, "charm-user", top["charm-user"]); cu != "" || top["charm-user"] != nil {
		m.CharmUser = CharmUser(cu)
		if !m.CharmUser.valid() {
			p.add("charm-user", "must be one of root, sudoer, non-root, not %q", cu)
		}
	}
	for i, s := range m.Series {
		if s == "" {
			p.add(fmt.Sprintf("series[%d]", i), "must be a non-empty string")
		}
	}
	m.checkEndpoints(p)
	m.checkContainers(p)
	if !p.ok() {
		return nil, p.err()
	}
	return m, nil
}

// checkVersions enforces that legacy (v1) and current (v2) keys are not mixed,
// because Juju decides the metadata format from which keys are present.
func checkVersions(p *problems, top map[string]any) {
	var v1, v2 []string
	for _, k := range []string{"series", "deployment", "min-juju-version"} {
		if _, ok := top[k]; ok {
			v1 = append(v1, k)
		}
	}
	for _, k := range []string{"containers", "assumes", "charm-user"} {
		if _, ok := top[k]; ok {
			v2 = append(v2, k)
		}
	}
	if len(v1) > 0 && len(v2) > 0 {
		p.add("", "v1 keys (%s) cannot be mixed with v2 keys (%s)",
			strings.Join(v1, ", "), strings.Join(v2, ", "))
	}
}

func parseEndpoints(p *problems, section string, role Role, v any) map[string]Endpoint {
	m, ok := getMap(p, section, v)
	if !ok || len(m) == 0 {
		return nil
	}
	out := make(map[string]Endpoint, len(m))
	for _, name := range sortedKeys(m) {
		field := join(section, name)
		ep := Endpoint{Name: name, Role: role, Scope: ScopeGlobal}
		switch t := m[name].(type) {
		case string:
			ep.Interface = t
		case map[string]any:
			checkKeys(p, field, t, "interface", "limit", "scope", "optional", "description")
			ep.Interface = getString(p, field+".interface", t["interface"])
			if t["limit"] != nil {
				if n, ok := getInt(p, field+".limit", t["limit"]); ok {
					if n < 0 || n > 1<<31 {
						p.add(field+".limit", "must be a non-negative integer")
					} else {
						ep.Limit = int(n)
					}
				}
			}
			if t["scope"] != nil {
				ep.Scope = Scope(getString(p, field+".scope", t["scope"]))
				if ep.Scope != ScopeGlobal && ep.Scope != ScopeContainer {
					p.add(field+".scope", "must be global or container, not %q", ep.Scope)
				}
			}
			ep.Optional = getBool(p, field+".optional", t["optional"])
		default:
			p.add(field, "must be an interface name or a map, not %s", typeName(t))
			continue
		}
		if ep.Interface == "" {
			p.add(field+".interface", "must be a non-empty string")
		}
		out[name] = ep
	}
	return out
}

// reserved reports whether name is in Juju's reserved namespace.
func reserved(name string) bool { return name == "juju" || strings.HasPrefix(name, "juju-") }

// checkEndpoints applies the cross-section endpoint rules of §1.2.
func (m *Meta) checkEndpoints(p *problems) {
	seen := map[string]string{}
	hasContainerRequire := false
	for _, sec := range []struct {
		name string
		eps  map[string]Endpoint
	}{{"provides", m.Provides}, {"requires", m.Requires}, {"peers", m.Peers}} {
		for _, name := range sortedKeys(sec.eps) {
			ep := sec.eps[name]
			field := join(sec.name, name)
			if prev, dup := seen[name]; dup {
				p.add(field, "endpoint name already used in %s", prev)
			}
			seen[name] = sec.name
			if !endpointRE.MatchString(name) {
				p.add(field, "invalid endpoint name")
			}
			// The one exception Juju makes: a subordinate may require a
			// reserved endpoint (typically juju-info) with container scope,
			// which is how it attaches to any principal.
			subordinateHook := m.Subordinate && ep.Role == RoleRequirer && ep.Scope == ScopeContainer
			if reserved(name) && !subordinateHook {
				p.add(field, "endpoint name %q is reserved", name)
			}
			if ep.Role != RoleRequirer && reserved(ep.Interface) {
				p.add(field+".interface", "interface name %q is reserved", ep.Interface)
			}
			if ep.Role == RoleRequirer && ep.Scope == ScopeContainer {
				hasContainerRequire = true
			}
		}
	}
	if m.Subordinate && !hasContainerRequire {
		p.add("subordinate", "a subordinate charm needs at least one requires endpoint with scope: container")
	}
	for _, b := range m.ExtraBindings {
		if sec, dup := seen[b]; dup {
			p.add(join("extra-bindings", b), "name already used as an endpoint in %s", sec)
		}
	}
}

func parseExtraBindings(p *problems, v any) []string {
	m, ok := getMap(p, "extra-bindings", v)
	if !ok || len(m) == 0 {
		return nil
	}
	out := sortedKeys(m)
	for _, k := range out {
		if !endpointRE.MatchString(k) {
			p.add(join("extra-bindings", k), "invalid binding name")
		}
		// Charmcraft documents `{}` as the value; Juju wants null. Both
		// mean "no settings", so accept an empty map too.
		if e, isMap := m[k].(map[string]any); m[k] != nil && !(isMap && len(e) == 0) {
			p.add(join("extra-bindings", k), "value must be empty")
		}
	}
	return out
}

// Endpoints returns every endpoint of the charm sorted by name, including the
// implicit juju-info provider. A declared endpoint named juju-info (only a
// subordinate may declare one) takes precedence over the implicit one, so
// names in the result are unique.
func (m *Meta) Endpoints() []Endpoint {
	var out []Endpoint
	for _, sec := range []map[string]Endpoint{m.Provides, m.Requires, m.Peers} {
		for _, ep := range sec {
			out = append(out, ep)
		}
	}
	if _, ok := m.declared(JujuInfo); !ok {
		out = append(out, Endpoint{Name: JujuInfo, Role: RoleProvider, Interface: JujuInfo, Scope: ScopeGlobal})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Endpoint finds an endpoint by name, including the implicit juju-info.
func (m *Meta) Endpoint(name string) (Endpoint, bool) {
	if ep, ok := m.declared(name); ok {
		return ep, true
	}
	if name == JujuInfo {
		return Endpoint{Name: JujuInfo, Role: RoleProvider, Interface: JujuInfo, Scope: ScopeGlobal}, true
	}
	return Endpoint{}, false
}

func (m *Meta) declared(name string) (Endpoint, bool) {
	for _, sec := range []map[string]Endpoint{m.Provides, m.Requires, m.Peers} {
		if ep, ok := sec[name]; ok {
			return ep, true
		}
	}
	return Endpoint{}, false
}

// IsV2 reports whether the metadata uses the current format: it carries no
// legacy keys (series, deployment, min-juju-version).
func (m *Meta) IsV2() bool {
	return len(m.Series) == 0 && m.Deployment == nil && m.MinJujuVersion == ""
}
