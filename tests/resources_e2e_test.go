package tests

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/spoke/provider/local"
	"github.com/droverhq/drover/tests/testkit"
)

// TestResourcesEndToEnd deploys a charm archive with a file resource and
// Juju's deploy flags, as a script would; the charm's hooks read the
// resource with resource-get. refresh --resource with new content runs
// upgrade-charm, whose resource-get sees the new content, and so does
// attach-resource; the model is then destroyed with --no-prompt
// --destroy-storage --force.
func TestResourcesEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs real processes")
	}
	d := newDroverCLI(t)
	dataDir := filepath.Join(t.TempDir(), "ctl")
	t.Cleanup(func() { killLeftover(dataDir) })
	d.ok("bootstrap", "resources", "--data-dir", dataDir, "--listen", testkit.FreeAddr(t), "--raft-listen", testkit.FreeAddr(t))
	d.ok("add-model", "res", "--no-switch")
	d.ok("model-config", "-m", "res", "update-status-hook-interval=1h")

	files := t.TempDir()
	// The res charm: a file resource "conf", which every hook reads with
	// resource-get, logging "<hook> <content>" to hooks.log in the charm
	// directory; and a filesystem storage "data".
	archive := packCharm(t, filepath.Join("testdata", "charms", "res"), files)
	v1, v2 := filepath.Join(files, "conf-v1.txt"), filepath.Join(files, "conf-v2.txt")
	os.WriteFile(v1, []byte("first"), 0o644)
	os.WriteFile(v2, []byte("second"), 0o644)

	// Refused before anything is uploaded.
	if _, errs, code := d.run("deploy", "-m", "res", archive, "--resource", "nope="+v1); code != 2 || !strings.Contains(errs, `charm "res" has no resource "nope" (it has conf)`) {
		t.Errorf("deploy with an unknown resource: exit %d\n%s", code, errs)
	}
	if _, errs, code := d.run("deploy", "-m", "res", archive, "--storage", "data=512M"); code != 2 || !strings.Contains(errs, "below the charm's minimum-size") {
		t.Errorf("deploy with storage under its minimum: exit %d\n%s", code, errs)
	}

	d.ok("deploy", "-m", "res", archive, "--resource", "conf="+v1, "--storage", "data=rootfs,2G", "--base", "ubuntu@24.04",
		"--channel", "latest/edge", "--constraints", "mem=1G", "--num-units", "1", "--trust", "--wait=5m")
	dirs, _ := filepath.Glob(filepath.Join(local.DefaultDir(dataDir), "*", "*", "agents", "unit-res-0", "charm"))
	if len(dirs) != 1 {
		t.Fatalf("res/0's charm directory: %q", dirs)
	}
	hooks := func() []string {
		data, _ := os.ReadFile(filepath.Join(dirs[0], "hooks.log"))
		return strings.Split(strings.TrimSpace(string(data)), "\n")
	}
	if got := hooks(); !slices.Equal(got, []string{"install first", "config-changed first", "start first"}) {
		t.Fatalf("hooks after deploy: %q", got)
	}
	unitStatus := func() api.UnitStatus {
		var fs api.FullStatus
		if err := json.Unmarshal([]byte(d.ok("status", "-m", "res", "--format", "json")), &fs); err != nil {
			t.Fatal(err)
		}
		return fs.Applications["res"].Units["res/0"]
	}
	if u := unitStatus(); u.WorkloadStatus.Message != "conf: first" {
		t.Errorf("res/0 after deploy: %+v", u.WorkloadStatus)
	}
	out := d.ok("show-application", "-m", "res", "res")
	for _, want := range []string{"  trust: true\n", "  constraints: mem=1024M\n", "  base: ubuntu@24.04\n", "  channel: latest/edge\n", "  storage:\n    data: rootfs,2G\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("show-application lacks %q:\n%s", want, out)
		}
	}

	// New content: upgrade-charm runs, and resource-get sees it.
	out = d.ok("refresh", "-m", "res", "res", "--path", archive, "--resource", "conf="+v2)
	if !strings.Contains(out, "already runs local charm") || !strings.Contains(out, "conf revision 2") {
		t.Errorf("refresh --resource:\n%s", out)
	}
	testkit.EventuallyWithin(t, 90*time.Second, func() (bool, error) {
		return slices.Contains(hooks(), "upgrade-charm second") && unitStatus().WorkloadStatus.Message == "conf: second", nil
	}, "upgrade-charm with the new content; hooks.log: %q", hooks())
	if out := d.ok("resources", "-m", "res", "res"); !regexp.MustCompile(`(?m)^Resource\s+Supplied by\s+Revision\nconf\s+upload\s+2$`).MatchString(out) {
		t.Errorf("resources:\n%s", out)
	}
	// attach-resource is the same change: back to the first content.
	d.ok("attach-resource", "-m", "res", "res", "conf="+v1)
	testkit.EventuallyWithin(t, 90*time.Second, func() (bool, error) {
		return slices.Contains(hooks(), "upgrade-charm first") && unitStatus().WorkloadStatus.Message == "conf: first", nil
	}, "upgrade-charm after attach-resource; hooks.log: %q", hooks())
	// The same content again changes nothing.
	if out := d.ok("refresh", "-m", "res", "res", "--path", archive, "--resource", "conf="+v1); !strings.Contains(out, "conf unchanged (revision 3)") {
		t.Errorf("refresh with the same content:\n%s", out)
	}

	d.ok("destroy-model", "res", "--no-prompt", "--destroy-storage", "--force")
	if out := d.ok("models"); regexp.MustCompile(`(?m)^res\*?\s`).MatchString(out) {
		t.Errorf("model still listed after destroy-model:\n%s", out)
	}
}
