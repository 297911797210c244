package spoke

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/charm"
	"github.com/droverhq/drover/tests/testkit"
)

func archive(t *testing.T, dir string) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := charm.ArchiveDir(dir, &buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// deployKV adds a model named model through cl and deploys the kv test
// charm in it, one unit, as application kv. It returns the model's UUID.
func deployKV(t *testing.T, cl *api.Client, model string) string {
	t.Helper()
	m, err := cl.AddModel(t.Context(), api.AddModelRequest{Name: model})
	if err != nil {
		t.Fatal(err)
	}
	ch, err := cl.UploadCharm(t.Context(), bytes.NewReader(archive(t, "testdata/charms/kv")))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Model(m.UUID).Deploy(t.Context(), api.DeployRequest{Application: "kv", CharmSHA256: ch.SHA256, NumUnits: 1}); err != nil {
		t.Fatal(err)
	}
	return m.UUID
}

func TestClusterForwardsWritesAndServesConsistentReads(t *testing.T) {
	c := newTestCluster(t, 3)
	ctx := t.Context()
	l := c.leader()
	f1, f2 := (l+1)%3, (l+2)%3

	// A write sent to a follower is forwarded to the leader.
	m, err := c.client(f1).AddModel(ctx, api.AddModelRequest{Name: "prod"})
	if err != nil {
		t.Fatalf("add model through a follower: %v", err)
	}
	// Read-your-writes on the other follower by index.
	other := c.client(f2)
	got, err := other.Model(m.UUID).Info(ctx, api.ReadOptions{Index: m.ModifyIndex})
	if err != nil || got.Name != "prod" {
		t.Fatalf("read at index on another follower: %+v, %v", got, err)
	}
	// A consistent read on a follower sees a write acknowledged elsewhere.
	// A config write answers with the new values of the keys it changed,
	// whether the leader applied it for this node or for a follower.
	changed, err := c.client(l).Model(m.UUID).SetConfig(ctx, api.ConfigChange{Set: map[string]any{"k": "v1", "n": 7}})
	if err != nil {
		t.Fatal(err)
	}
	if len(changed) != 2 || changed["k"] != "v1" || changed["n"] != float64(7) {
		t.Fatalf("config write through the leader answered %v", changed)
	}
	changed, err = c.client(f1).Model(m.UUID).SetConfig(ctx, api.ConfigChange{Set: map[string]any{"j": true}, Reset: []string{"n"}})
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := changed["n"]; len(changed) != 2 || changed["j"] != true || !ok || v != nil {
		t.Fatalf("config write through a follower answered %v", changed)
	}
	// Resetting a key with a default restores the default, as in Juju.
	if _, err := c.client(l).Model(m.UUID).SetConfig(ctx, api.ConfigChange{Set: map[string]any{"update-status-hook-interval": "1m"}}); err != nil {
		t.Fatal(err)
	}
	changed, err = c.client(l).Model(m.UUID).SetConfig(ctx, api.ConfigChange{Reset: []string{"update-status-hook-interval"}})
	if err != nil || changed["update-status-hook-interval"] != "5m" {
		t.Fatalf("reset of update-status-hook-interval answered %v, %v; want its default", changed, err)
	}
	cfg, err := other.Model(m.UUID).Config(ctx, api.ReadOptions{Consistent: true})
	if err != nil || cfg["k"] != "v1" || cfg["update-status-hook-interval"] != "5m" {
		t.Fatalf("consistent read: %v, %v", cfg, err)
	}
	// Every node knows every API address.
	info, err := other.ControllerInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(info.APIAddresses) != 3 || len(info.Nodes) != 3 {
		t.Fatalf("controller info: %+v", info)
	}
	leaders := 0
	for _, n := range info.Nodes {
		if n.Leader {
			leaders++
		}
	}
	if leaders != 1 {
		t.Fatalf("want exactly one leader in %+v", info.Nodes)
	}
}

func TestClusterPartitionHealKillRestart(t *testing.T) {
	c := newTestCluster(t, 3)
	ctx := t.Context()
	old := c.leader()
	a, b := (old+1)%3, (old+2)%3
	majority := c.client(a, b)
	if _, err := majority.AddModel(ctx, api.AddModelRequest{Name: "before"}); err != nil {
		t.Fatal(err)
	}

	// Cut the leader off: the majority elects a new leader and commits.
	c.isolate(old)
	var m *api.Model
	testkit.EventuallyWithin(t, 30*time.Second, func() (bool, error) {
		var err error
		m, err = majority.AddModel(ctx, api.AddModelRequest{Name: "during"})
		return err == nil || errors.Is(err, api.ErrAlreadyExists), nil
	}, "write to the majority during the partition")
	// The isolated node can neither commit nor serve a consistent read.
	short, cancel := context.WithTimeout(ctx, 2*time.Second)
	_, err := c.client(old).AddModel(short, api.AddModelRequest{Name: "lost"})
	cancel()
	if err == nil {
		t.Fatal("the isolated old leader acknowledged a write")
	}
	short, cancel = context.WithTimeout(ctx, 2*time.Second)
	_, err = c.client(old).Models(short, api.ReadOptions{Consistent: true})
	cancel()
	if err == nil {
		t.Fatal("the isolated node served a consistent read")
	}

	// Heal: the old leader catches up and the lost write never appears.
	c.faults.Heal()
	testkit.EventuallyWithin(t, 30*time.Second, func() (bool, error) {
		models, err := c.client(old).Models(ctx, api.ReadOptions{Consistent: true})
		if err != nil {
			return false, nil
		}
		names := map[string]bool{}
		for _, m := range models {
			names[m.Name] = true
		}
		if names["lost"] {
			return false, errors.New("a write refused during the partition was applied")
		}
		return names["before"] && names["during"], nil
	}, "healed node catches up")

	// Kill the current leader, keep writing, restart it on its data dir.
	l := c.leader()
	c.stop(l)
	rest := []int{}
	for i := range c.nodes {
		if i != l {
			rest = append(rest, i)
		}
	}
	cl := c.client(rest[0], rest[1])
	testkit.EventuallyWithin(t, 30*time.Second, func() (bool, error) {
		_, err := cl.Model(m.UUID).SetConfig(ctx, api.ConfigChange{Set: map[string]any{"after-kill": "yes"}})
		return err == nil, nil
	}, "write after the leader was killed")
	c.start(l)
	testkit.EventuallyWithin(t, 30*time.Second, func() (bool, error) {
		cfg, err := c.client(l).Model(m.UUID).Config(ctx, api.ReadOptions{Consistent: true})
		return err == nil && cfg["after-kill"] == "yes", nil
	}, "restarted node catches up")
}

func TestClusterReplicatesCharmArchives(t *testing.T) {
	c := newTestCluster(t, 3)
	ctx := t.Context()
	l := c.leader()
	f := (l + 1) % 3
	data := archive(t, "testdata/charms/kv")
	ch, err := c.client(f).UploadCharm(ctx, bytes.NewReader(data))
	if err != nil {
		t.Fatalf("upload: %v", err)
	}
	sum := sha256.Sum256(data)
	if ch.SHA256 != hex.EncodeToString(sum[:]) || ch.Name != "kv" {
		t.Fatalf("charm record: %+v", ch)
	}
	// Every node gets the archive; then the uploader dies and the others
	// still serve it.
	testkit.EventuallyWithin(t, 20*time.Second, func() (bool, error) {
		for _, n := range c.nodes {
			if !n.srv.Blobs().Has(ch.SHA256) {
				return false, nil
			}
		}
		return true, nil
	}, "archive on every node")
	other := (f + 1) % 3
	if _, err := c.client(other).Charm(ctx, ch.SHA256, api.ReadOptions{Index: ch.ModifyIndex}); err != nil {
		t.Fatalf("charm record on another node: %v", err)
	}
	c.stop(f)
	rc, err := c.client(other).DownloadCharm(ctx, ch.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	got, _ := io.ReadAll(rc)
	if !bytes.Equal(got, data) {
		t.Fatal("downloaded archive differs from the upload")
	}
}
