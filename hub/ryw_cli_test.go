package hub_test

import (
	"bytes"
	"encoding/pem"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/authz"
	"github.com/droverhq/drover/cli"
	"github.com/droverhq/drover/hub"
	"github.com/droverhq/drover/spoke"
	"github.com/droverhq/drover/tests/testkit"
)

// TestCLIReadsItsWritesThroughTheHub: a write the CLI makes through the hub
// (add-model, model-config) raises, in the client store, the index of the
// controller the model is on (by its UUID, as for a direct connection),
// and the next drover invocation's reads of that model send it: the hub
// relays them to a node cut off from raft before the write, which must
// not answer older than the write (it waits, then relays the read to its
// leader).
func TestCLIReadsItsWritesThroughTheHub(t *testing.T) {
	e := newEnv(t)
	alice := e.user("alice", "acme")
	e.grant(authz.UserObject(alice.ID), authz.Administrator, authz.OrgObject("acme"))
	faults := spoke.NewFaults()
	root := t.TempDir()
	node := func(i int) spoke.Config {
		return spoke.Config{DataDir: filepath.Join(root, fmt.Sprint("node", i)), Listen: testkit.FreeAddr(t),
			RaftListen: testkit.FreeAddr(t), Name: "east", Logger: slog.New(slog.DiscardHandler), Faults: faults,
			ReadWait: 300 * time.Millisecond,
			// The node cut from raft keeps its leader for the test's span.
			RaftHeartbeat: 3 * time.Second, RaftElection: 3 * time.Second,
			HubURL: publicURL, HubJWKSURL: e.url + "/.well-known/jwks.json"}
	}
	first := node(0)
	first.Bootstrap = true
	runNode(t, first)
	cred, err := spoke.ReadAdminCredential(first.DataDir)
	if err != nil {
		t.Fatal(err)
	}
	admin, err := api.NewClient(api.ClientConfig{Addresses: []string{first.Listen}, CACert: []byte(cred.CACert),
		User: cred.User, Password: cred.Password, Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(admin.Close)
	for i := 1; i <= 2; i++ {
		var jt *api.JoinToken
		testkit.EventuallyWithin(t, 30*time.Second, func() (bool, error) {
			jt, err = admin.CreateJoinToken(t.Context(), time.Minute)
			return err == nil, err
		}, "a join token")
		cfg := node(i)
		cfg.Join, cfg.JoinToken = first.Listen, jt.Token
		runNode(t, cfg)
	}
	var leader, lag api.NodeInfo
	testkit.EventuallyWithin(t, 60*time.Second, func() (bool, error) {
		info, err := admin.ControllerInfo(t.Context())
		if err != nil {
			return false, err
		}
		leader, lag = api.NodeInfo{}, api.NodeInfo{}
		voters := 0
		for _, n := range info.Nodes {
			if n.Voter && !n.Unreachable && n.Lag == 0 {
				voters++
			}
			if n.Leader {
				leader = n
			} else {
				lag = n
			}
		}
		if voters != 3 || leader.ID == "" {
			return false, fmt.Errorf("nodes %+v", info.Nodes)
		}
		return true, nil
	}, "three voters caught up")

	req := hub.AddControllerRequest{Name: "east", URL: "https://" + first.Listen, CACert: cred.CACert, Region: "east", Cloud: "localhost"}
	testkit.EventuallyWithin(t, 30*time.Second, func() (bool, error) {
		_, err := e.hub.RegisterController(t.Context(), req, true)
		return err == nil, err
	}, "controller registered with the hub")
	// The hub reaches the controller through the follower about to lag
	// only (no indexer runs to tell it the other nodes).
	if _, err := e.st.Controllers.SetAddresses(t.Context(), cred.ControllerUUID, []string{lag.APIAddress}); err != nil {
		t.Fatal(err)
	}
	e.settle()

	// The CLI logs in to the hub (served over TLS, as drover needs) as a
	// service account.
	tlsHub := httptest.NewTLSServer(e.hub.Handler())
	t.Cleanup(tlsHub.Close)
	store := t.TempDir()
	caFile := filepath.Join(store, "hub-ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: tlsHub.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	drover := func(args ...string) string {
		t.Helper()
		var out, errb bytes.Buffer
		a := &cli.App{Stdin: bytes.NewReader(nil), Stdout: &out, Stderr: &errb,
			Getenv: func(k string) string {
				if k == "DROVER_DATA" {
					return store
				}
				return ""
			}}
		if code := a.Run(t.Context(), args); code != 0 {
			t.Fatalf("drover %s: exit %d\n%s%s", strings.Join(args, " "), code, out.String(), errb.String())
		}
		return out.String()
	}
	drover("login", tlsHub.URL, "--ca", caFile, "--client-id", saAcme.ID, "--client-secret", saAcme.Secret)
	drover("add-model", "prod", "--region", "east")
	testkit.EventuallyWithin(t, 30*time.Second, func() (bool, error) {
		info, err := admin.ControllerInfo(t.Context())
		if err != nil {
			return false, err
		}
		for _, n := range info.Nodes {
			if n.ID == lag.ID && n.Lag == 0 && !n.Unreachable {
				return true, nil
			}
		}
		return false, fmt.Errorf("nodes %+v", info.Nodes)
	}, "the follower has the model")

	faults.CutRaft(lag.ID, leader.ID)
	t.Cleanup(faults.Heal)
	// Issue 34's reproduction through the hub: a model added, then
	// configured and read by the next invocations, through a node that
	// has not heard of it.
	drover("add-model", "second", "--region", "east")
	drover("model-config", "k=second")
	if got := strings.TrimSpace(drover("model-config", "k")); got != "second" {
		t.Fatalf("model-config k of the model just added = %q; want second", got)
	}
	var before uint64
	for i := range 3 {
		want := fmt.Sprint("through-hub-", i)
		drover("model-config", "-m", "prod", "k="+want)
		written, err := (&cli.Store{Dir: store}).LastIndex(cred.ControllerUUID)
		if err != nil || written <= before {
			t.Fatalf("round %d: the client store keeps index %d for controller %s after a write through the hub, %d before it (%v)", i, written, cred.ControllerUUID, before, err)
		}
		before = written
		if got := strings.TrimSpace(drover("model-config", "-m", "prod", "k")); got != want {
			t.Fatalf("round %d: model-config k through the hub = %q; want %q (the write's index %d)", i, got, want, written)
		}
		info, err := admin.ControllerInfo(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range info.Nodes {
			if n.ID == lag.ID && !n.Unreachable && n.AppliedIndex >= written {
				t.Fatalf("round %d: the node cut from raft has applied %d, past the write's %d: the read was not served by a lagging node", i, n.AppliedIndex, written)
			}
		}
	}
}
