package hub_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/authz"
	"github.com/droverhq/drover/hub"
	"github.com/droverhq/drover/spoke"
	"github.com/droverhq/drover/tests/testkit"
)

// TestHubFollowsAControllersNodes registers a one-node controller, grows
// it to three nodes (as enable-ha does after registration), then stops the
// node the hub was registered with: the hub must have learned the new
// nodes' addresses from the controller's event stream, so that the model
// is still reached, and the controller followed, through the other two.
func TestHubFollowsAControllersNodes(t *testing.T) {
	e := newEnv(t)
	runIndexer(t, e)
	alice := e.user("alice", "acme")
	e.grant(authz.UserObject(alice.ID), authz.Administrator, authz.OrgObject("acme"))
	root := t.TempDir()
	node := func(i int) spoke.Config {
		return spoke.Config{DataDir: filepath.Join(root, "node"+string(rune('0'+i))), Listen: testkit.FreeAddr(t),
			RaftListen: testkit.FreeAddr(t), Name: "east", RaftHeartbeat: 100 * time.Millisecond,
			RaftElection: 100 * time.Millisecond, Logger: slog.New(slog.DiscardHandler),
			HubURL: publicURL, HubJWKSURL: e.url + "/.well-known/jwks.json"}
	}
	first := node(0)
	first.Bootstrap = true
	stopFirst := runNode(t, first)
	cred, err := spoke.ReadAdminCredential(first.DataDir)
	if err != nil {
		t.Fatal(err)
	}
	req := hub.AddControllerRequest{Name: "east", URL: "https://" + first.Listen, CACert: cred.CACert, Region: "east", Cloud: "localhost"}
	testkit.EventuallyWithin(t, 30*time.Second, func() (bool, error) {
		_, err := e.hub.RegisterController(t.Context(), req, true)
		return err == nil, err
	}, "controller registered with the hub")
	e.settle()
	tok := e.token(alice, 10*time.Minute, "")
	model := e.addModel(tok, "prod", "east")

	admin, err := api.NewClient(api.ClientConfig{Addresses: []string{first.Listen}, CACert: []byte(cred.CACert),
		User: cred.User, Password: cred.Password, Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(admin.Close)
	want := []string{first.Listen}
	for i := 1; i <= 2; i++ {
		jt, err := admin.CreateJoinToken(t.Context(), time.Minute)
		if err != nil {
			t.Fatalf("join token: %v", err)
		}
		cfg := node(i)
		cfg.Join, cfg.JoinToken = first.Listen, jt.Token
		runNode(t, cfg)
		want = append(want, cfg.Listen)
	}
	slices.Sort(want)
	testkit.EventuallyWithin(t, 30*time.Second, func() (bool, error) {
		c, err := e.st.Controllers.ByName(t.Context(), "east")
		got := slices.Sorted(slices.Values(c.APIAddresses))
		if err != nil || !slices.Equal(got, want) {
			return false, fmt.Errorf("the hub has %v, the controller's nodes are %v (%v)", got, want, err)
		}
		return true, nil
	}, "the hub records every node's address")

	stopFirst()
	testkit.EventuallyWithin(t, 30*time.Second, func() (bool, error) {
		if code, b := e.do(http.MethodGet, "/v1/models/"+model+"/status", tok, nil); code != http.StatusOK {
			return false, fmt.Errorf("status through the hub: %d %s", code, b)
		}
		return true, nil
	}, "the model reached through the nodes left")
	// Changes too, once the nodes left have elected a leader (the change
	// is the same however often it is made).
	testkit.EventuallyWithin(t, 30*time.Second, func() (bool, error) {
		if code, b := e.do(http.MethodPatch, "/v1/models/"+model+"/config", tok,
			api.ConfigChange{Set: map[string]any{"logging-config": "<root>=DEBUG"}}); code != http.StatusOK {
			return false, fmt.Errorf("model config through the hub: %d %s", code, b)
		}
		return true, nil
	}, "a change through the nodes left")
	// The subscription moves too: a model added with the first node down
	// keeps the controller's health current.
	e.addModel(tok, "after", "east")
	testkit.EventuallyWithin(t, 60*time.Second, func() (bool, error) {
		c, err := e.st.Controllers.ByName(t.Context(), "east")
		if err != nil || c.Status != "connected" || c.LastSeen.Before(time.Now().Add(-5*time.Second)) {
			return false, fmt.Errorf("controller %s, last seen %s (%v)", c.Status, c.LastSeen, err)
		}
		return true, nil
	}, "the hub follows the controller through the nodes left")
}

// runNode runs an in-process controller node until the test ends, or until
// the returned stop (which waits for it to end) is called.
func runNode(t *testing.T, cfg spoke.Config) (stop func()) {
	t.Helper()
	ready := make(chan struct{})
	cfg.Ready = ready
	s, err := spoke.New(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Logf("node %s stopped: %v", cfg.Listen, err)
		}
	}
	t.Cleanup(stop)
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("node %s stopped: %v", cfg.Listen, err)
	}
	return stop
}
