package spoke

import (
	"bytes"
	"net/http"
	"strconv"
	"testing"

	"github.com/droverhq/drover/api"
)

// TestFollowerAcceptsACredentialWrittenJustBefore: an agent credential
// written through the leader is accepted by a follower dialled the moment
// the write is acknowledged, before the follower has heard that the entry
// is committed (it waits for the leader's next append, ADR 0028), every
// time.
func TestFollowerAcceptsACredentialWrittenJustBefore(t *testing.T) {
	c := newTestCluster(t, 3)
	ctx := t.Context()
	l := c.leader()
	f := (l + 1) % 3
	cl := c.client(l)
	m, err := cl.AddModel(ctx, api.AddModelRequest{Name: "fresh"})
	if err != nil {
		t.Fatal(err)
	}
	ch, err := cl.UploadCharm(ctx, bytes.NewReader(archive(t, "testdata/charms/kv")))
	if err != nil {
		t.Fatal(err)
	}
	const n = 10
	if _, err := cl.Model(m.UUID).Deploy(ctx, api.DeployRequest{Application: "kv", CharmSHA256: ch.SHA256, NumUnits: n}); err != nil {
		t.Fatal(err)
	}
	refused := 0
	for i := range n {
		id := strconv.Itoa(i)
		if err := c.nodes[l].srv.SetAgentSecret(ctx, m.UUID, id, "secret-"+id); err != nil {
			t.Fatal(err)
		}
		a, resp, err := dialAgent(ctx, c.nodes[f].cfg.Listen, []byte(c.cred.CACert), "machine-"+m.UUID+"-"+id, "secret-"+id, 0)
		if err != nil {
			if resp != nil && resp.StatusCode == http.StatusUnauthorized {
				refused++
				continue
			}
			t.Fatalf("dial machine %s on a follower: %v", id, err)
		}
		a.close()
	}
	if refused > 0 {
		t.Fatalf("a follower refused %d of %d agent credentials written through the leader just before", refused, n)
	}
}
