package application

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/droverhq/drover/charm"
)

// TestDeployFlagsPlan: deploy's Juju flags are checked before a model is
// dialled, each with an error naming the flag.
func TestDeployFlagsPlan(t *testing.T) {
	dir := t.TempDir()
	ch := filepath.Join(dir, "c")
	if err := os.MkdirAll(ch, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ch, "metadata.yaml"), []byte("name: c\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	good := deployFlags{resources: []string{"conf=./x"}, storage: []string{"data=rootfs,1G"}, base: "ubuntu@24.04", channel: "2/edge"}
	p, err := good.plan(ch)
	if err != nil {
		t.Fatal(err)
	}
	if p.resources["conf"] != "./x" || p.storage["data"] != "rootfs,1G" {
		t.Errorf("plan %+v", p)
	}
	for _, tc := range []struct {
		f    deployFlags
		want string
	}{
		{deployFlags{resources: []string{"conf"}}, "--resource \"conf\": want NAME=VALUE"},
		{deployFlags{resources: []string{"a=1", "a=2"}}, `--resource: "a" given twice`},
		{deployFlags{storage: []string{"=1G"}}, "--storage"},
		{deployFlags{base: "noble"}, "--base \"noble\": want NAME@VERSION"},
		{deployFlags{channel: "latest/nightly"}, `--channel "latest/nightly": risk "nightly"`},
		{deployFlags{constraints: "cores=many"}, "--constraints"},
		{deployFlags{overlay: []string{"o.yaml"}}, "--overlay applies to a bundle"},
	} {
		if _, err := tc.f.plan(ch); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want one saying %q", tc.f, err, tc.want)
		}
	}
}

// TestCheckResourcesAndStorage: --resource names a file resource of the
// charm and a readable file; --storage a storage of the charm within its
// bounds.
func TestCheckResourcesAndStorage(t *testing.T) {
	meta, err := charm.ParseMeta([]byte(`name: web
resources:
  site: {type: file, filename: site.tgz}
  image: {type: oci-image}
storage:
  data: {type: filesystem, multiple: {range: 1-2}}
`))
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "site.tgz")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := checkResources(meta, map[string]string{"site": file}); err != nil {
		t.Errorf("a good resource: %v", err)
	}
	for given, want := range map[string]string{
		"nope":  `charm "web" has no resource "nope" (it has image, site)`,
		"image": "an oci-image resource cannot be uploaded",
		"site":  "no such file",
	} {
		path := file
		if given == "site" {
			path = file + ".missing"
		}
		if err := checkResources(meta, map[string]string{given: path}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("--resource %s: %v, want %q", given, err, want)
		}
	}
	if err := checkStorage(meta, map[string]string{"data": "2"}); err != nil {
		t.Errorf("good storage: %v", err)
	}
	if err := checkStorage(meta, map[string]string{"data": "3"}); err == nil || !strings.Contains(err.Error(), "outside the charm's range 1-2") {
		t.Errorf("storage count over the range: %v", err)
	}
	if err := checkStorage(meta, map[string]string{"logs": "1G"}); err == nil || !strings.Contains(err.Error(), `no storage "logs"`) {
		t.Errorf("unknown storage: %v", err)
	}
}

// TestMergeOverlays: overlays merge into a bundle as Juju's do.
func TestMergeOverlays(t *testing.T) {
	dir := t.TempDir()
	base := []byte(`applications:
  web: {charm: ./web, num_units: 1, options: {port: 80, name: a}}
  db: {charm: ./db}
relations:
- [web:db, db:db]
`)
	ov1 := filepath.Join(dir, "o1.yaml")
	ov2 := filepath.Join(dir, "o2.yaml")
	os.WriteFile(ov1, []byte("applications:\n  web: {num_units: 3, options: {port: 8080}}\n  cache: {charm: ./cache}\nrelations:\n- [web, cache]\n"), 0o644)
	os.WriteFile(ov2, []byte("applications:\n  db:\n"), 0o644)
	out, err := mergeOverlays(base, []string{ov1, ov2})
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := yaml.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"applications": map[string]any{
			"web":   map[string]any{"charm": "./web", "num_units": 3, "options": map[string]any{"port": 8080, "name": "a"}},
			"cache": map[string]any{"charm": "./cache"},
		},
		"relations": []any{[]any{"web", "cache"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("merged:\n%s", out)
	}
	if _, err := mergeOverlays(base, []string{filepath.Join(dir, "missing.yaml")}); err == nil || !strings.Contains(err.Error(), "--overlay") {
		t.Errorf("a missing overlay: %v", err)
	}
}

// TestBundleResources: a bundle's resources are files relative to the
// bundle; a store revision is refused with the reason.
func TestBundleResources(t *testing.T) {
	got, err := bundleResources("web", map[string]any{"site": "files/site.tgz", "abs": "/srv/x"}, "/bundles/shop")
	if err != nil || got["site"] != "/bundles/shop/files/site.tgz" || got["abs"] != "/srv/x" {
		t.Errorf("bundleResources: %v %v", got, err)
	}
	if _, err := bundleResources("web", map[string]any{"site": 3}, "/b"); err == nil || !strings.Contains(err.Error(), "no charm store") {
		t.Errorf("a revision: %v", err)
	}
}
