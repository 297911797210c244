package spoke

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/droverhq/drover/api"
)

// TestResourcesDeployAttachAndDownload: a deploy takes uploaded content
// for the charm's file resources and records its storage directives and
// charm origin; bad names, content, storage and origins are refused; new
// content moves the charm-modified-version the agents see, and an agent
// downloads a resource of its model by hash, and nothing else.
func TestResourcesDeployAttachAndDownload(t *testing.T) {
	e := newAgentEnv(t, 1)
	ctx := t.Context()
	mc := e.cl.Model(e.model)
	dir := t.TempDir()
	meta := `name: files
resources:
  conf: {type: file, filename: conf.txt}
  image: {type: oci-image}
storage:
  data: {type: filesystem, minimum-size: 1G}
`
	if err := os.WriteFile(filepath.Join(dir, "metadata.yaml"), []byte(meta), 0o644); err != nil {
		t.Fatal(err)
	}
	ch, err := mc.UploadCharm(ctx, bytes.NewReader(archive(t, dir)))
	if err != nil {
		t.Fatal(err)
	}
	v1, err := mc.UploadResource(ctx, strings.NewReader("v1 content"))
	if err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256([]byte("v1 content")); v1.SHA256 != hex.EncodeToString(sum[:]) || v1.Size != 10 {
		t.Fatalf("upload answered %+v", v1)
	}
	deploy := func(mod func(*api.DeployRequest)) error {
		req := api.DeployRequest{Application: "files", CharmSHA256: ch.SHA256, NumUnits: 1, Base: "ubuntu@24.04",
			Channel: "latest/edge", Storage: map[string]string{"data": "rootfs,2G"},
			Resources: map[string]api.ResourceContent{"conf": *v1}}
		mod(&req)
		_, err := mc.Deploy(ctx, req)
		return err
	}
	for _, tc := range []struct {
		what, phrase string
		mod          func(*api.DeployRequest)
	}{
		{"an unknown resource", `has no resource "nope" (it declares "conf", "image")`, func(r *api.DeployRequest) {
			r.Resources = map[string]api.ResourceContent{"nope": *v1}
		}},
		{"an oci-image", "only file resources", func(r *api.DeployRequest) { r.Resources = map[string]api.ResourceContent{"image": *v1} }},
		{"content never uploaded", "was not uploaded", func(r *api.DeployRequest) {
			r.Resources = map[string]api.ResourceContent{"conf": {SHA256: strings.Repeat("ab", 32), Size: 1}}
		}},
		{"unknown storage", `has no storage "logs"`, func(r *api.DeployRequest) { r.Storage = map[string]string{"logs": "1G"} }},
		{"storage under its minimum", "below the charm's minimum-size", func(r *api.DeployRequest) { r.Storage = map[string]string{"data": "512M"} }},
		{"a bad base", "NAME@VERSION", func(r *api.DeployRequest) { r.Base = "noble" }},
		{"a bad channel", `risk "nightly"`, func(r *api.DeployRequest) { r.Channel = "2/nightly" }},
	} {
		wantCode(t, tc.what, deploy(tc.mod), api.CodeInvalid, tc.phrase)
	}
	if err := deploy(func(*api.DeployRequest) {}); err != nil {
		t.Fatal(err)
	}
	a, err := mc.Application(ctx, "files")
	if err != nil {
		t.Fatal(err)
	}
	if a.Base != "ubuntu@24.04" || a.Channel != "latest/edge" || a.Storage["data"] != "rootfs,2G" || a.CharmModifiedVersion != 0 {
		t.Fatalf("application %+v", a)
	}

	// The unit's machine agent sees the resource and downloads it.
	if err := e.c.nodes[0].srv.SetAgentSecret(ctx, e.model, "3", "secret-3"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.nodes[0].srv.WaitRead(ctx, 0, true); err != nil {
		t.Fatal(err)
	}
	ag := e.dial(t, 0, "3")
	ag.waitState(t, "the resource", func(st *api.MachineState) bool {
		u := st.Units["files/0"]
		return u != nil && u.Resources["conf"] == api.AgentResource{Path: "conf.txt", Revision: 1, SHA256: v1.SHA256, Size: 10}
	})
	download := func(sha string) (int, string) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+e.c.nodes[0].cfg.Listen+"/v1/agent/resources/"+sha, nil)
		req.SetBasicAuth("machine-"+e.model+"-3", "secret-3")
		resp, err := e.c.rawClient().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := download(v1.SHA256); code != http.StatusOK || body != "v1 content" {
		t.Fatalf("agent download: %d %q", code, body)
	}
	if code, _ := download(ch.SHA256); code != http.StatusNotFound {
		t.Fatalf("agent download of a charm's hash as a resource: %d, want 404", code)
	}

	// New content: revision 2, and the agents see the charm modified.
	v2, err := mc.UploadResource(ctx, strings.NewReader("v2 content!"))
	if err != nil {
		t.Fatal(err)
	}
	if a, err = mc.AttachResources(ctx, "files", map[string]api.ResourceContent{"conf": *v2}); err != nil || a.CharmModifiedVersion != 1 {
		t.Fatalf("attach: %+v %v", a, err)
	}
	ag.waitState(t, "the new content", func(st *api.MachineState) bool {
		u := st.Units["files/0"]
		return u != nil && u.CharmModifiedVersion == 1 && u.Resources["conf"].SHA256 == v2.SHA256 && u.Resources["conf"].Revision == 2
	})
	list, err := mc.Resources(ctx, "files")
	if err != nil || len(list) != 1 || list[0].Revision != 2 || list[0].Origin != api.ResourceOriginUpload || list[0].Size != 11 {
		t.Fatalf("resources: %+v %v", list, err)
	}
	_, err = mc.AttachResources(ctx, "files", map[string]api.ResourceContent{"image": *v2})
	wantCode(t, "attaching an oci-image", err, api.CodeInvalid, "only file resources")
}
