package api_test

import (
	"testing"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/tests/testkit"
)

// TestModelClientsShareTheClient checks that model clients send through
// their Client: a write through one raises the Client's index, and a
// ReadYourWrites read through another model client waits for it.
func TestModelClientsShareTheClient(t *testing.T) {
	testkit.CheckLeaks(t)
	ca := newTestCA(t)
	node := newFakeNode()
	srv := ca.serve(t, node)
	c := newClient(t, api.ClientConfig{Addresses: []string{addr(srv)}, CACert: ca.pem, ReadYourWrites: true})
	ctx := t.Context()

	a, b := c.Model("m-a"), c.Model("m-b")
	if a.UUID() != "m-a" || b.UUID() != "m-b" {
		t.Fatalf("UUIDs %q, %q; want m-a, m-b", a.UUID(), b.UUID())
	}
	if _, err := a.Deploy(ctx, api.DeployRequest{Application: "kv"}); err != nil {
		t.Fatal(err)
	}
	if c.Index() != 11 {
		t.Fatalf("client index %d after a model client's write, want 11", c.Index())
	}
	apps, err := b.Applications(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(apps) != 1 || apps[0].ModelUUID != "m-b" {
		t.Fatalf("applications %+v, want one of model m-b", apps)
	}
	got := node.received()
	want := []call{
		{Method: "POST", Path: "/v1/models/m-a/applications"},
		{Method: "GET", Path: "/v1/models/m-b/applications", Query: "index=11"},
	}
	if len(got) != len(want) {
		t.Fatalf("node saw %+v, want %+v", got, want)
	}
	for i, w := range want {
		if got[i] != w {
			t.Errorf("request %d: %+v, want %+v", i, got[i], w)
		}
	}
}
