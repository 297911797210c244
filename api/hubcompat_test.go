package api

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

func TestModelListReadsHubIndexAndControllerShapes(t *testing.T) {
	hub := `{"models":[{"uuid":"u1","name":"prod","org":"acme","owner":"alice@example.com","owner-id":"i1",
		"controller":"east","controller-uuid":"c1","cloud":"lxd","region":"r1","life":"alive","status":"available",
		"status-since":"2026-11-22T01:02:03Z","application-count":3,"unit-count":7,"machine-count":5,"event-index":9,
		"created-at":"2026-11-22T00:00:00Z"}]}`
	var l modelList
	if err := json.Unmarshal([]byte(hub), &l); err != nil {
		t.Fatal(err)
	}
	if len(l) != 1 || l[0].Name != "prod" || l[0].Owner != "alice@example.com" || l[0].Status.Status != "available" {
		t.Fatalf("hub listing decoded as %+v", l)
	}
	want := ModelIndex{Org: "acme", OwnerID: "i1", Controller: "east", ControllerUUID: "c1", Cloud: "lxd", Region: "r1",
		Applications: 3, Units: 7, Machines: 5}
	if l[0].Index == nil || l[0].Index.StatusSince == nil {
		t.Fatalf("index = %+v, want a status-since", l[0].Index)
	}
	got := *l[0].Index
	got.StatusSince = nil
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("index = %+v, want %+v", got, want)
	}
	// The hub's index says when the status changed: the Model's since.
	if since := time.Date(2026, 11, 22, 1, 2, 3, 0, time.UTC); !l[0].Status.Since.Equal(since) {
		t.Fatalf("status since %v, want %v", l[0].Status.Since, since)
	}
	ctl := `[{"uuid":"u2","name":"dev","owner":"admin","life":"alive","status":{"status":"available"}}]`
	if err := json.Unmarshal([]byte(ctl), &l); err != nil {
		t.Fatal(err)
	}
	if len(l) != 1 || l[0].Name != "dev" || l[0].Index != nil {
		t.Fatalf("controller listing decoded as %+v (index %v)", l, l[0].Index)
	}
}
