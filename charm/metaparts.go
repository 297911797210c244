package charm

import (
	"fmt"
	"math"
	"regexp"
)

// featureRE is an assumes feature expression: a feature name, optionally
// with a version bound ("juju >= 3.1", "k8s-api").
var featureRE = regexp.MustCompile(`^[a-z][a-z0-9-]*(?:\s*(?:>=|<)\s*[0-9]+(?:\.[0-9]+){0,3})?$`)

// ResourceType is the kind of a charm resource.
type ResourceType string

// Resource types.
const (
	ResourceFile     ResourceType = "file"
	ResourceOCIImage ResourceType = "oci-image"
)

// Resource is one entry of metadata.yaml's resources map.
type Resource struct {
	Name        string
	Type        ResourceType
	Filename    string
	Description string
}

// Container is a Kubernetes sidecar workload container.
type Container struct {
	Name     string
	Resource string
	Mounts   []Mount
	// UID and GID are nil when unset.
	UID *int
	GID *int
}

// Mount places a storage instance inside a container.
type Mount struct {
	Storage  string
	Location string
}

// Device is a requested device (for example a GPU).
type Device struct {
	Name        string
	Type        string
	Description string
	CountMin    int
	CountMax    int
}

// Payload is a legacy payload class.
type Payload struct {
	Name string
	Type string
}

// Deployment is the legacy (v1) Kubernetes deployment description.
type Deployment struct {
	Type       string
	Service    string
	MinVersion string
	Mode       string
}

// CharmUser is the user a sidecar charm's container runs as.
type CharmUser string

// Charm users accepted by charm-user.
const (
	CharmUserRoot    CharmUser = "root"
	CharmUserSudoer  CharmUser = "sudoer"
	CharmUserNonRoot CharmUser = "non-root"
)

func (u CharmUser) valid() bool {
	return u == CharmUserRoot || u == CharmUserSudoer || u == CharmUserNonRoot
}

// Assumption is one node of an assumes expression: a feature requirement
// such as "juju >= 3.1" or "k8s-api", or a composite any-of/all-of.
type Assumption struct {
	Feature string
	AnyOf   []Assumption
	AllOf   []Assumption
}

func parseResources(p *problems, v any) map[string]Resource {
	m, ok := getMap(p, "resources", v)
	if !ok || len(m) == 0 {
		return nil
	}
	out := make(map[string]Resource, len(m))
	for _, name := range sortedKeys(m) {
		field := join("resources", name)
		rm, ok := getMap(p, field, m[name])
		if !ok {
			continue
		}
		checkKeys(p, field, rm, "type", "filename", "description", "upstream-source")
		r := Resource{
			Name:        name,
			Type:        ResourceType(getString(p, field+".type", rm["type"])),
			Filename:    getString(p, field+".filename", rm["filename"]),
			Description: getString(p, field+".description", rm["description"]),
		}
		switch r.Type {
		case "":
			// Juju's default: a resource without a type is a file.
			r.Type = ResourceFile
			fallthrough
		case ResourceFile:
			if r.Filename == "" {
				p.add(field+".filename", "required for file resources")
			}
		case ResourceOCIImage:
		default:
			p.add(field+".type", "must be file or oci-image, not %q", r.Type)
		}
		out[name] = r
	}
	return out
}

func parseContainers(p *problems, v any) map[string]Container {
	m, ok := getMap(p, "containers", v)
	if !ok || len(m) == 0 {
		return nil
	}
	out := make(map[string]Container, len(m))
	for _, name := range sortedKeys(m) {
		field := join("containers", name)
		if !endpointRE.MatchString(name) {
			p.add(field, "invalid container name")
		}
		cm, ok := getMap(p, field, m[name])
		if !ok {
			continue
		}
		checkKeys(p, field, cm, "resource", "mounts", "uid", "gid", "bases")
		c := Container{Name: name, Resource: getString(p, field+".resource", cm["resource"])}
		c.UID = parseID(p, field+".uid", cm["uid"])
		c.GID = parseID(p, field+".gid", cm["gid"])
		if cm["mounts"] != nil {
			l, ok := cm["mounts"].([]any)
			if !ok {
				p.add(field+".mounts", "must be a list, not %s", typeName(cm["mounts"]))
			}
			for i, e := range l {
				mf := fmt.Sprintf("%s.mounts[%d]", field, i)
				mm, ok := getMap(p, mf, e)
				if !ok {
					continue
				}
				checkKeys(p, mf, mm, "storage", "location")
				mt := Mount{Storage: getString(p, mf+".storage", mm["storage"]), Location: getString(p, mf+".location", mm["location"])}
				if mt.Storage == "" {
					p.add(mf+".storage", "required")
				}
				if mt.Location == "" {
					p.add(mf+".location", "required")
				}
				c.Mounts = append(c.Mounts, mt)
			}
		}
		if b, ok := cm["bases"]; ok {
			if _, isList := b.([]any); !isList {
				p.add(field+".bases", "must be a list, not %s", typeName(b))
			}
		}
		out[name] = c
	}
	return out
}

// parseID validates a container uid or gid. Juju reserves 1000-9999 for
// its own users inside workload containers.
func parseID(p *problems, field string, v any) *int {
	if v == nil {
		return nil
	}
	n, ok := getInt(p, field, v)
	if !ok {
		return nil
	}
	if n < 0 || n > math.MaxInt32 {
		p.add(field, "must be between 0 and %d", math.MaxInt32)
		return nil
	}
	if n >= 1000 && n <= 9999 {
		p.add(field, "%d is in the reserved range 1000-9999", n)
		return nil
	}
	id := int(n)
	return &id
}

// checkContainers validates references from containers to resources and storage.
func (m *Meta) checkContainers(p *problems) {
	for _, name := range sortedKeys(m.Containers) {
		c := m.Containers[name]
		field := join("containers", name)
		if c.Resource != "" {
			r, ok := m.Resources[c.Resource]
			switch {
			case !ok:
				p.add(field+".resource", "resource %q not declared in resources", c.Resource)
			case r.Type != ResourceOCIImage:
				p.add(field+".resource", "resource %q must be of type oci-image", c.Resource)
			}
		}
		for i, mt := range c.Mounts {
			if _, ok := m.Storage[mt.Storage]; mt.Storage != "" && !ok {
				p.add(fmt.Sprintf("%s.mounts[%d].storage", field, i), "storage %q not declared in storage", mt.Storage)
			}
		}
	}
}

func parseDevices(p *problems, v any) map[string]Device {
	m, ok := getMap(p, "devices", v)
	if !ok || len(m) == 0 {
		return nil
	}
	out := make(map[string]Device, len(m))
	for _, name := range sortedKeys(m) {
		field := join("devices", name)
		dm, ok := getMap(p, field, m[name])
		if !ok {
			continue
		}
		checkKeys(p, field, dm, "type", "description", "countmin", "countmax")
		d := Device{
			Name:        name,
			Type:        getString(p, field+".type", dm["type"]),
			Description: getString(p, field+".description", dm["description"]),
			CountMin:    1,
		}
		if d.Type == "" {
			p.add(field+".type", "required")
		}
		if dm["countmin"] != nil {
			n, _ := getInt(p, field+".countmin", dm["countmin"])
			d.CountMin = int(max(min(n, math.MaxInt32), -1))
		}
		d.CountMax = d.CountMin
		if dm["countmax"] != nil {
			n, _ := getInt(p, field+".countmax", dm["countmax"])
			d.CountMax = int(max(min(n, math.MaxInt32), -1))
		}
		if d.CountMin < 0 || d.CountMax < d.CountMin {
			p.add(field, "invalid count range %d-%d", d.CountMin, d.CountMax)
		}
		out[name] = d
	}
	return out
}

func parsePayloads(p *problems, v any) map[string]Payload {
	m, ok := getMap(p, "payloads", v)
	if !ok || len(m) == 0 {
		return nil
	}
	out := make(map[string]Payload, len(m))
	for _, name := range sortedKeys(m) {
		field := join("payloads", name)
		pm, ok := getMap(p, field, m[name])
		if !ok {
			continue
		}
		checkKeys(p, field, pm, "type")
		pl := Payload{Name: name, Type: getString(p, field+".type", pm["type"])}
		if pl.Type == "" {
			p.add(field+".type", "required")
		}
		out[name] = pl
	}
	return out
}

func parseDeployment(p *problems, v any) *Deployment {
	m, ok := getMap(p, "deployment", v)
	if !ok || m == nil {
		return nil
	}
	checkKeys(p, "deployment", m, "type", "service", "min-version", "mode")
	d := &Deployment{
		Type:       getString(p, "deployment.type", m["type"]),
		Service:    getString(p, "deployment.service", m["service"]),
		MinVersion: getString(p, "deployment.min-version", m["min-version"]),
		Mode:       getString(p, "deployment.mode", m["mode"]),
	}
	oneOf := func(field, val string, allowed ...string) {
		if val == "" {
			return
		}
		for _, a := range allowed {
			if val == a {
				return
			}
		}
		p.add(field, "invalid value %q (allowed: %v)", val, allowed)
	}
	oneOf("deployment.type", d.Type, "stateless", "stateful", "daemon")
	oneOf("deployment.service", d.Service, "loadbalancer", "cluster", "omit")
	oneOf("deployment.mode", d.Mode, "operator", "workload")
	return d
}

func parseAssumes(p *problems, field string, v any) []Assumption {
	if v == nil {
		return nil
	}
	l, ok := v.([]any)
	if !ok {
		p.add(field, "must be a list, not %s", typeName(v))
		return nil
	}
	out := make([]Assumption, 0, len(l))
	for i, e := range l {
		ef := fmt.Sprintf("%s[%d]", field, i)
		switch t := e.(type) {
		case string:
			if !featureRE.MatchString(t) {
				p.add(ef, "invalid feature expression %q", t)
			}
			out = append(out, Assumption{Feature: t})
		case map[string]any:
			if len(t) != 1 {
				p.add(ef, "must have exactly one key, any-of or all-of")
				continue
			}
			var a Assumption
			switch {
			case t["any-of"] != nil:
				a.AnyOf = parseAssumes(p, ef+".any-of", t["any-of"])
			case t["all-of"] != nil:
				a.AllOf = parseAssumes(p, ef+".all-of", t["all-of"])
			default:
				p.add(ef, "must have exactly one key, any-of or all-of")
				continue
			}
			out = append(out, a)
		default:
			p.add(ef, "must be a feature expression or an any-of/all-of map, not %s", typeName(e))
		}
	}
	return out
}
