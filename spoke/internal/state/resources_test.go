package state

import (
	"testing"

	"github.com/droverhq/drover/api"
)

func TestResources(t *testing.T) {
	h := newHarness(t)
	h.seed()
	up := func(name, content string) ResourceUpload {
		return ResourceUpload{Name: name, Type: "file", Path: name + ".txt", SHA256: sha(content), Size: int64(len(content))}
	}
	h.must(AddApplicationType, &AddApplicationRequest{ModelUUID: testModel, Name: "kv", CharmSHA256: sha("kv"), NumUnits: 1,
		OriginBase: "ubuntu@22.04", Channel: "latest/stable", Storage: map[string]string{"data": "rootfs,1G"},
		Resources: []ResourceUpload{up("conf", "a")}, Now: t0})
	a := h.app("kv")
	if a.Base != "ubuntu@22.04" || a.Channel != "latest/stable" || a.Storage["data"] != "rootfs,1G" || a.CharmModifiedVersion != 0 {
		t.Fatalf("application %+v", a)
	}
	res, err := h.snap().ResourceByName(testModel, "kv", "conf")
	if err != nil || res == nil || res.Revision != 1 || res.SHA256 != sha("a") || res.Origin != api.ResourceOriginUpload || !res.Uploaded.Equal(t0) {
		t.Fatalf("resource after deploy: %+v, %v", res, err)
	}

	// New content: the next revision, and the units see a charm change.
	a = h.must(AttachResourcesType, &AttachResourcesRequest{ModelUUID: testModel, App: "kv", Resources: []ResourceUpload{up("conf", "b")}, Now: t0}).(*api.Application)
	if a.CharmModifiedVersion != 1 {
		t.Fatalf("charm-modified-version %d after new content, want 1", a.CharmModifiedVersion)
	}
	if res, _ := h.snap().ResourceByName(testModel, "kv", "conf"); res.Revision != 2 || res.SHA256 != sha("b") {
		t.Fatalf("resource after attach: %+v", res)
	}
	// The same content again changes nothing.
	a = h.must(AttachResourcesType, &AttachResourcesRequest{ModelUUID: testModel, App: "kv", Resources: []ResourceUpload{up("conf", "b")}, Now: t0}).(*api.Application)
	if a.CharmModifiedVersion != 1 {
		t.Fatalf("charm-modified-version %d after the same content, want 1", a.CharmModifiedVersion)
	}
	if res, _ := h.snap().ResourceByName(testModel, "kv", "conf"); res.Revision != 2 {
		t.Fatalf("revision %d after the same content, want 2", res.Revision)
	}

	bad := up("img", "c")
	bad.Type = "oci-image"
	h.fails(AttachResourcesType, &AttachResourcesRequest{ModelUUID: testModel, App: "kv", Resources: []ResourceUpload{bad}}, api.ErrInvalid)
	h.fails(AttachResourcesType, &AttachResourcesRequest{ModelUUID: testModel, App: "kv", Resources: []ResourceUpload{{Name: "x", Type: "file"}}}, api.ErrInvalid)
	h.fails(AttachResourcesType, &AttachResourcesRequest{ModelUUID: testModel, App: "nope", Resources: []ResourceUpload{up("conf", "b")}}, api.ErrNotFound)

	// The resources go with the application.
	h.must(DestroyApplicationType, &DestroyApplicationRequest{ModelUUID: testModel, App: "kv", Force: true})
	if list, err := h.snap().ResourcesByApplication(testModel, "kv"); err != nil || len(list) != 0 {
		t.Fatalf("resources left after the application: %v, %v", list, err)
	}
}
