package tests

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/droverhq/drover/tests/testkit"
)

// TestCLIReadsItsOwnWritesOnAnHAController is issue 34's reproduction
// (bootstrap, enable-ha -n 3, add-model, model-config) fifty times over:
// each model is added through one node and configured at once through
// another (the test turns the client store's address list between
// commands), then read back through the third. Every command must succeed
// and see the one before it, and the current model must never be lost,
// even when the client store holds no index for the controller.
func TestCLIReadsItsOwnWritesOnAnHAController(t *testing.T) {
	d := newDroverCLI(t)
	dataDir := filepath.Join(t.TempDir(), "ctl")
	t.Cleanup(func() { killLeftover(dataDir) })
	listen, raftListen := testkit.FreeAddr(t), testkit.FreeAddr(t)
	d.ok("bootstrap", "c", "--data-dir", dataDir, "--listen", listen, "--raft-listen", raftListen)
	d.ok("enable-ha", "-n", "3")
	if n := len(d.addresses("c")); n != 3 {
		t.Fatalf("after enable-ha the client store knows %d addresses; want 3", n)
	}
	// enable-ha has returned: every node has caught up, and says so.
	var shown map[string]struct {
		Nodes map[string]struct {
			Applied     *uint64 `json:"applied-index"`
			Lag         *uint64 `json:"lag"`
			Unreachable bool    `json:"unreachable"`
		} `json:"controller-nodes"`
	}
	if err := json.Unmarshal([]byte(d.ok("show-controller", "--format", "json")), &shown); err != nil {
		t.Fatal(err)
	}
	if len(shown["c"].Nodes) != 3 {
		t.Fatalf("show-controller lists %d nodes; want 3", len(shown["c"].Nodes))
	}
	for id, n := range shown["c"].Nodes {
		if n.Applied == nil || *n.Applied == 0 || n.Lag == nil || *n.Lag != 0 || n.Unreachable {
			t.Errorf("node %s right after enable-ha: applied %s, lag %s, unreachable %v; want caught up", id, shownUint(n.Applied), shownUint(n.Lag), n.Unreachable)
		}
	}
	for i := range 50 {
		name := fmt.Sprintf("m%d", i)
		d.turnAddresses("c")
		d.ok("add-model", name)
		d.turnAddresses("c")
		d.ok("model-config", fmt.Sprintf("k=v%d", i))
		d.turnAddresses("c")
		if got := strings.TrimSpace(d.ok("model-config", "k")); got != fmt.Sprintf("v%d", i) {
			t.Fatalf("iteration %d: model-config k through another node = %q; want v%d", i, got, i)
		}
	}
	// A model this client has no index for (as if another client had added
	// it) is not forgotten when a lagging node does not know it yet: the
	// CLI asks the controller with a consistent read before it gives up.
	for i := range 10 {
		name := fmt.Sprintf("other%d", i)
		d.turnAddresses("c")
		d.ok("add-model", name)
		if err := os.Remove(filepath.Join(d.store, "indexes.yaml")); err != nil {
			t.Fatal(err)
		}
		d.turnAddresses("c")
		d.ok("model-config", "k=w")
		if got := strings.TrimSpace(d.ok("switch")); got != "c:"+name {
			t.Fatalf("iteration %d: the current model is %q; want c:%s", i, got, name)
		}
	}
}

// addresses is the API address list the client store holds for ctl.
func (d *droverCLI) addresses(ctl string) []string {
	d.t.Helper()
	doc := d.controllersDoc()
	c, _ := doc["controllers"].(map[string]any)[ctl].(map[string]any)
	var out []string
	for _, a := range c["api-endpoints"].([]any) {
		out = append(out, a.(string))
	}
	return out
}

// turnAddresses moves ctl's first API address to the end of the client
// store's list: the next drover command reaches another node first.
func (d *droverCLI) turnAddresses(ctl string) {
	d.t.Helper()
	doc := d.controllersDoc()
	c := doc["controllers"].(map[string]any)[ctl].(map[string]any)
	addrs := c["api-endpoints"].([]any)
	c["api-endpoints"] = append(addrs[1:len(addrs):len(addrs)], addrs[0])
	data, err := yaml.Marshal(doc)
	if err != nil {
		d.t.Fatal(err)
	}
	path := filepath.Join(d.store, "controllers.yaml")
	if err := os.WriteFile(path+".turn", data, 0o600); err != nil {
		d.t.Fatal(err)
	}
	if err := os.Rename(path+".turn", path); err != nil {
		d.t.Fatal(err)
	}
}

func (d *droverCLI) controllersDoc() map[string]any {
	d.t.Helper()
	data, err := os.ReadFile(filepath.Join(d.store, "controllers.yaml"))
	if err != nil {
		d.t.Fatal(err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		d.t.Fatal(err)
	}
	return doc
}

// shownUint prints a number a JSON answer may lack.
func shownUint(p *uint64) string {
	if p == nil {
		return "missing"
	}
	return fmt.Sprint(*p)
}
