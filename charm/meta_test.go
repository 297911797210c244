package charm

import (
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
)

func readTestdata(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestParseMetaPostgres(t *testing.T) {
	m, err := ParseMeta(readTestdata(t, "postgresql-metadata.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if m.Name != "postgresql" || m.DisplayName != "PostgreSQL" || m.Subordinate {
		t.Errorf("unexpected header: %+v", m)
	}
	if got := m.Peers["database-peers"]; got != (Endpoint{Name: "database-peers", Role: RolePeer, Interface: "postgresql_peers", Scope: ScopeGlobal}) {
		t.Errorf("peer: %+v", got)
	}
	if got := m.Requires["certificates"]; !got.Optional || got.Limit != 1 || got.Role != RoleRequirer {
		t.Errorf("certificates: %+v", got)
	}
	pg := m.Storage["pgdata"]
	if pg.Type != StorageFilesystem || pg.MinimumSize != 10*1024 || pg.CountMin != 1 || pg.CountMax != 1 {
		t.Errorf("pgdata: %+v", pg)
	}
	if l := m.Storage["logs"]; l.CountMin != 0 || l.CountMax != 1 {
		t.Errorf("logs: %+v", l)
	}
	if a := m.Storage["archive"]; a.Type != StorageBlock || a.CountMin != 1 || a.CountMax != -1 || a.Properties[0] != "transient" {
		t.Errorf("archive: %+v", a)
	}
	if len(m.Assumes) != 2 || m.Assumes[0].Feature != "juju" || len(m.Assumes[1].AnyOf) != 2 || len(m.Assumes[1].AnyOf[1].AllOf) != 2 {
		t.Errorf("assumes: %+v", m.Assumes)
	}
	if !reflect.DeepEqual(m.ExtraBindings, []string{"replication"}) {
		t.Errorf("extra-bindings: %v", m.ExtraBindings)
	}
	if !m.IsV2() {
		t.Error("expected v2 metadata")
	}
	var names []string
	for _, ep := range m.Endpoints() {
		names = append(names, ep.Name)
	}
	want := []string{"certificates", "cos-agent", "database", "database-peers", "db", "db-admin",
		"juju-info", "restart", "s3-parameters", "tracing", "upgrade"}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("endpoints = %v, want %v", names, want)
	}
	ji, ok := m.Endpoint("juju-info")
	if !ok || ji.Role != RoleProvider || ji.Interface != "juju-info" || ji.Scope != ScopeGlobal {
		t.Errorf("juju-info = %+v, %v", ji, ok)
	}
	if _, ok := m.Endpoint("nope"); ok {
		t.Error("found a nonexistent endpoint")
	}
}

func TestParseMetaSidecar(t *testing.T) {
	m, err := ParseMeta(readTestdata(t, "sidecar-metadata.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	g := m.Containers["grafana"]
	if g.Resource != "grafana-image" || *g.UID != 472 || *g.GID != 472 ||
		!reflect.DeepEqual(g.Mounts, []Mount{{Storage: "database", Location: "/var/lib/grafana"}}) {
		t.Errorf("grafana container: %+v", g)
	}
	if l := m.Containers["litestream"]; l.UID != nil {
		t.Errorf("litestream uid should be unset: %+v", l)
	}
	if r := m.Resources["dashboards"]; r.Type != ResourceFile || r.Filename != "dashboards.tar.gz" {
		t.Errorf("dashboards: %+v", r)
	}
	if m.CharmUser != CharmUserNonRoot {
		t.Errorf("charm-user %q", m.CharmUser)
	}
	if ep := m.Requires["catalogue"]; ep.Interface != "catalogue" || ep.Scope != ScopeGlobal {
		t.Errorf("shorthand endpoint: %+v", ep)
	}
}

func TestParseMetaSubordinate(t *testing.T) {
	m, err := ParseMeta(readTestdata(t, "subordinate-metadata.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !m.Subordinate || m.IsV2() {
		t.Errorf("subordinate=%v v2=%v", m.Subordinate, m.IsV2())
	}
	// The declared container-scoped requirer wins over the implicit provider.
	ep, _ := m.Endpoint("juju-info")
	if ep.Role != RoleRequirer || ep.Scope != ScopeContainer {
		t.Errorf("juju-info = %+v", ep)
	}
	count := 0
	for _, e := range m.Endpoints() {
		if e.Name == "juju-info" {
			count++
		}
	}
	if count != 1 {
		t.Errorf("juju-info appears %d times", count)
	}
}

func TestParseMetaErrors(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"empty", "", "empty document"},
		{"not a map", "- a", "must be a map"},
		{"bad yaml", "name: [", "cannot parse YAML"},
		{"missing name", "summary: x", "name: required"},
		{"name type", "name: 3", "name: must be a string"},
		{"uppercase name", "name: Foo", "invalid charm name"},
		{"double hyphen", "name: a--b", "invalid charm name"},
		{"trailing hyphen", "name: ab-", "invalid charm name"},
		{"digit word", "name: app-0", "invalid charm name"},
		{"unknown key", "name: a\nfoo: 1", "metadata.yaml: foo: unknown key"},
		{"empty interface", "name: a\nprovides:\n  db:\n    interface: ''", "metadata.yaml: provides.db.interface: must be a non-empty string"},
		{"missing interface", "name: a\nprovides:\n  db: {limit: 1}", "provides.db.interface: must be a non-empty string"},
		{"bad scope", "name: a\nrequires:\n  db: {interface: x, scope: machine}", "must be global or container"},
		{"negative limit", "name: a\nrequires:\n  db: {interface: x, limit: -1}", "non-negative"},
		{"limit type", "name: a\nrequires:\n  db: {interface: x, limit: lots}", "limit: must be an integer"},
		{"optional type", "name: a\nrequires:\n  db: {interface: x, optional: maybe}", "optional: must be a boolean"},
		{"endpoint unknown key", "name: a\nrequires:\n  db: {interface: x, scpoe: global}", "requires.db.scpoe: unknown key"},
		{"endpoint list", "name: a\nrequires:\n  db: [x]", "must be an interface name or a map"},
		{"duplicate endpoint", "name: a\nprovides:\n  db: x\nrequires:\n  db: y", "endpoint name already used in provides"},
		{"duplicate peer", "name: a\nrequires:\n  db: x\npeers:\n  db: y", "already used in requires"},
		{"reserved juju", "name: a\nprovides:\n  juju: x", "reserved"},
		{"reserved juju-", "name: a\nrequires:\n  juju-info: juju-info", "reserved"},
		{"reserved principal container", "name: a\nrequires:\n  juju-info: {interface: juju-info, scope: container}", "reserved"},
		{"reserved subordinate global", "name: a\nsubordinate: true\nrequires:\n  juju-x: {interface: y}\n  c: {interface: z, scope: container}", "requires.juju-x: endpoint name \"juju-x\" is reserved"},
		{"reserved interface", "name: a\nprovides:\n  info: juju-info", "interface name \"juju-info\" is reserved"},
		{"reserved peer interface", "name: a\npeers:\n  p: juju", "reserved"},
		{"subordinate without container", "name: a\nsubordinate: true\nrequires:\n  db: x", "subordinate charm needs"},
		{"subordinate container provides only", "name: a\nsubordinate: true\nprovides:\n  db: {interface: x, scope: container}", "subordinate charm needs"},
		{"bad endpoint name", "name: a\nprovides:\n  Db: x", "invalid endpoint name"},
		{"mixed v1 v2", "name: a\nseries: [jammy]\nassumes: [juju]", "cannot be mixed"},
		{"mixed v1 v2 containers", "name: a\nmin-juju-version: 2.9.0\ncharm-user: root", "cannot be mixed"},
		{"charm-user", "name: a\ncharm-user: admin", "charm-user: must be one of"},
		{"storage no type", "name: a\nstorage:\n  data: {}", "storage.data.type: required"},
		{"storage bad type", "name: a\nstorage:\n  data: {type: tmpfs}", "must be filesystem or block"},
		{"block location", "name: a\nstorage:\n  data: {type: block, location: /x}", "not allowed for block"},
		{"storage range", "name: a\nstorage:\n  data: {type: block, multiple: {range: x}}", "must be m, m-n, m+ or m-"},
		{"storage range inverted", "name: a\nstorage:\n  data: {type: block, multiple: {range: 3-1}}", "less than minimum"},
		{"storage range zero", "name: a\nstorage:\n  data: {type: block, multiple: {range: 0}}", "greater than zero"},
		{"storage size", "name: a\nstorage:\n  data: {type: block, minimum-size: 10Q}", "must be <n>[MGTPEZY]"},
		{"storage size overflow", "name: a\nstorage:\n  data: {type: block, minimum-size: 99999Y}", "out of range"},
		{"storage property", "name: a\nstorage:\n  data: {type: block, properties: [durable]}", "unknown property"},
		{"storage unknown", "name: a\nstorage:\n  data: {type: block, size: 1G}", "storage.data.size: unknown key"},
		{"resource type", "name: a\nresources:\n  r: {type: docker}", "must be file or oci-image"},
		{"resource filename", "name: a\nresources:\n  r: {type: file}", "filename: required"},
		{"container uid", "name: a\ncontainers:\n  c: {uid: 1000}", "reserved range"},
		{"container gid", "name: a\ncontainers:\n  c: {gid: 9999}", "reserved range"},
		{"container negative uid", "name: a\ncontainers:\n  c: {uid: -1}", "must be between"},
		{"container resource missing", "name: a\ncontainers:\n  c: {resource: img}", "not declared in resources"},
		{"container resource not oci", "name: a\ncontainers:\n  c: {resource: img}\nresources:\n  img: {type: file, filename: x}", "must be of type oci-image"},
		{"mount storage missing", "name: a\ncontainers:\n  c:\n    mounts: [{storage: s, location: /x}]", "not declared in storage"},
		{"mount location missing", "name: a\nstorage: {s: {type: filesystem}}\ncontainers:\n  c:\n    mounts: [{storage: s}]", "location: required"},
		{"assumes bad", "name: a\nassumes: ['juju >> 3']", "invalid feature expression"},
		{"assumes map", "name: a\nassumes: [{none-of: [juju]}]", "any-of or all-of"},
		{"extra binding value", "name: a\nextra-bindings:\n  b: 1", "value must be empty"},
		{"extra binding clash", "name: a\nprovides: {b: x}\nextra-bindings:\n  b:", "already used as an endpoint"},
		{"deployment type", "name: a\ndeployment: {type: random}", "invalid value"},
		{"device type", "name: a\ndevices:\n  gpu: {countmin: 1}", "devices.gpu.type: required"},
		{"device count", "name: a\ndevices:\n  gpu: {type: nvidia.com/gpu, countmin: 2, countmax: 1}", "invalid count range"},
		{"payload", "name: a\npayloads:\n  p: {}", "payloads.p.type: required"},
		{"series type", "name: a\nseries: jammy", "must be a list of strings"},
		{"tags element", "name: a\ntags: [1]", "tags[0]: must be a string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseMeta([]byte(tt.yaml))
			if err == nil {
				t.Fatalf("no error, want %q", tt.want)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("error %v does not match ErrInvalid", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
		})
	}
}

func TestParseMetaValid(t *testing.T) {
	tests := []struct {
		name, yaml string
		check      func(*Meta) bool
	}{
		{"minimal", "name: a", func(m *Meta) bool { return len(m.Endpoints()) == 1 }},
		{"hyphenated", "name: my-app2-x", nil},
		{"subordinate reserved container", "name: a\nsubordinate: true\nrequires:\n  juju-info: {interface: juju-info, scope: container}", nil},
		{"interface juju-info on requirer", "name: a\nrequires:\n  host: juju-info", nil},
		{"range single int", "name: a\nstorage:\n  d: {type: block, multiple: {range: 3}}", func(m *Meta) bool {
			return m.Storage["d"].CountMin == 3 && m.Storage["d"].CountMax == 3
		}},
		{"range m-", "name: a\nstorage:\n  d: {type: block, multiple: {range: 2-}}", func(m *Meta) bool {
			return m.Storage["d"].CountMin == 2 && m.Storage["d"].CountMax == -1
		}},
		{"range m-n", "name: a\nstorage:\n  d: {type: block, multiple: {range: 2-5}}", func(m *Meta) bool {
			return m.Storage["d"].CountMax == 5
		}},
		{"size default unit", "name: a\nstorage:\n  d: {type: block, minimum-size: 512}", func(m *Meta) bool {
			return m.Storage["d"].MinimumSize == 512
		}},
		{"size T", "name: a\nstorage:\n  d: {type: block, minimum-size: 2T}", func(m *Meta) bool {
			return m.Storage["d"].MinimumSize == 2<<20
		}},
		{"uid boundaries", "name: a\ncontainers:\n  c: {uid: 999, gid: 10000}", func(m *Meta) bool {
			return *m.Containers["c"].UID == 999 && *m.Containers["c"].GID == 10000
		}},
		{"resource default type", "name: a\nresources:\n  r: {filename: r.tgz}", func(m *Meta) bool {
			return m.Resources["r"].Type == ResourceFile
		}},
		{"extra binding empty map", "name: a\nextra-bindings:\n  b: {}", nil},
		{"v1 legacy", "name: a\nseries: [focal]\nmin-juju-version: 2.9.0\ndeployment: {type: stateful, service: cluster}", func(m *Meta) bool {
			return m.Deployment.Type == "stateful" && !m.IsV2()
		}},
		{"devices", "name: a\ndevices:\n  gpu: {type: nvidia.com/gpu, countmax: 2}", func(m *Meta) bool {
			return m.Devices["gpu"].CountMin == 1 && m.Devices["gpu"].CountMax == 2
		}},
		{"limit null", "name: a\nrequires:\n  db: {interface: x, limit: null}", func(m *Meta) bool { return m.Requires["db"].Limit == 0 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := ParseMeta([]byte(tt.yaml))
			if err != nil {
				t.Fatal(err)
			}
			if tt.check != nil && !tt.check(m) {
				t.Errorf("check failed: %+v", m)
			}
		})
	}
}

func TestMetaCollectsSeveralProblems(t *testing.T) {
	_, err := ParseMeta([]byte("name: Bad\nfoo: 1\nprovides:\n  db: {interface: ''}\n"))
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"invalid charm name", "foo: unknown key", "provides.db.interface"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q missing %q", err, want)
		}
	}
	var e *Error
	if !errors.As(err, &e) || e.File != MetadataFile {
		t.Errorf("errors.As: %#v", e)
	}
}
