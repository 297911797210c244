package state

import (
	"bytes"
	"testing"

	"github.com/droverhq/drover/api"
)

// TestMachineArea: a provisioned machine's area is recorded, kept by a
// later SetMachineProvisioned that names none (a retry, a backfill of
// other fields), replaced by one that names another, and carried by a
// model's export to the controller that imports it.
func TestMachineArea(t *testing.T) {
	h := newHarness(t)
	h.seed()
	h.must(AddMachineType, &AddMachineRequest{ModelUUID: testModel})
	const area = "/var/lib/drover-machines/east/" + testModel + "/0"
	mc := h.must(SetMachineProvisionedType, &SetMachineProvisionedRequest{ModelUUID: testModel, ID: "0",
		ProviderID: "local:host:0", Addresses: []string{"127.0.0.1"}, Area: area}).(*api.Machine)
	if mc.Area != area {
		t.Fatalf("area %q, want %q", mc.Area, area)
	}
	h.must(SetMachineProvisionedType, &SetMachineProvisionedRequest{ModelUUID: testModel, ID: "0",
		ProviderID: "local:host:0", Addresses: []string{"127.0.0.1"}})
	if got, _ := h.snap().MachineByID(testModel, "0"); got == nil || got.Area != area {
		t.Fatalf("a request without an area changed it: %+v", got)
	}

	var export bytes.Buffer
	if _, err := ExportModel(h.snap(), testModel, "east", 1, &export); err != nil {
		t.Fatal(err)
	}
	dst := newHarness(t)
	dst.must(ImportModelType, &ImportModelRequest{MigrationID: "mig-1", Export: export.Bytes(), Now: t0})
	if got, _ := dst.snap().MachineByID(testModel, "0"); got == nil || got.Area != area {
		t.Fatalf("the imported machine's area: %+v", got)
	}
}
