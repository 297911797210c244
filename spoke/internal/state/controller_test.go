package state

import (
	"testing"

	"github.com/droverhq/drover/api"
)

// TestSetPlacement: a hub's placement is recorded on the controller, kept
// when the controller is initialised again (every start), and checked.
func TestSetPlacement(t *testing.T) {
	h := newHarness(t)
	h.fails(SetPlacementType, &SetPlacementRequest{Region: "east"}, api.ErrNotFound) // before ControllerInit
	h.must(ControllerInitType, &ControllerInitRequest{UUID: "c1", Name: "east", CACert: "PEM"})
	for _, bad := range []SetPlacementRequest{{}, {Cloud: "lab"}, {Region: "East US"}, {Cloud: "a/b", Region: "east"}, {Region: "-east"}} {
		h.fails(SetPlacementType, &bad, api.ErrInvalid)
	}
	c := h.must(SetPlacementType, &SetPlacementRequest{Cloud: "lab", Region: "eu-west-1"}).(*api.Controller)
	if c.Cloud != "lab" || c.Region != "eu-west-1" || c.Name != "east" || c.CACert != "PEM" {
		t.Fatalf("placed controller: %+v", c)
	}
	h.must(ControllerInitType, &ControllerInitRequest{UUID: "c1", Name: "east", CACert: "PEM2"})
	got, err := h.snap().Controller()
	if err != nil || got.Cloud != "lab" || got.Region != "eu-west-1" || got.CACert != "PEM2" {
		t.Fatalf("after ControllerInit again: %+v %v", got, err)
	}
	// A hub that registers the controller without a cloud: the local one.
	h.must(SetPlacementType, &SetPlacementRequest{Region: "west"})
	if got, _ := h.snap().Controller(); got.Cloud != "" || got.Region != "west" {
		t.Fatalf("placed without a cloud: %+v", got)
	}
}
