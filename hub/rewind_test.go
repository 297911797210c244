package hub_test

import (
	"bytes"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/authz"
	"github.com/droverhq/drover/hub/internal/store"
	"github.com/droverhq/drover/spoke"
	"github.com/droverhq/drover/tests/testkit"
)

// TestControllerRestoredFromABackup: a controller whose state is restored
// from an older backup (stopped, its data directory replaced by a copy
// taken earlier, started again) goes back to lower event indexes than the
// hub has followed. The hub follows it there: a model created on it since
// is adopted, a model created after the backup (gone with the restore)
// leaves the index, and both are audited. Before, the controller's stream
// sent only events past the hub's index and the hub ignored summaries
// older than its own, so the hub's view of the controller froze until the
// controller's new history outgrew the old one.
func TestControllerRestoredFromABackup(t *testing.T) {
	e := newServedEnv(t)
	tok := e.hubAdmin()
	ctx := t.Context()
	root := t.TempDir()
	live, backup := filepath.Join(root, "live"), filepath.Join(root, "backup")
	cfg := spoke.Config{DataDir: live, Listen: testkit.FreeAddr(t), RaftListen: testkit.FreeAddr(t), Name: "east",
		Bootstrap: true, RaftHeartbeat: 100 * time.Millisecond, RaftElection: 100 * time.Millisecond,
		Logger: slog.New(slog.DiscardHandler), NoProvisioner: true}
	stop := runNode(t, cfg)
	defer func() { stop() }()
	cred, err := spoke.ReadAdminCredential(live)
	if err != nil {
		t.Fatal(err)
	}
	admin, err := api.NewClient(api.ClientConfig{Addresses: []string{cfg.Listen}, CACert: []byte(cred.CACert),
		User: cred.User, Password: cred.Password, Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { admin.Close() }()
	var ht *api.JoinToken
	testkit.EventuallyWithin(t, 30*time.Second, func() (bool, error) {
		ht, err = admin.CreateHubToken(ctx, 0)
		return err == nil, nil
	}, "controller bootstrapped")
	if code, out := e.do(http.MethodPost, "/v1/controllers", tok, map[string]string{"name": "east", "url": "https://" + cfg.Listen,
		"ca-cert": cred.CACert, "region": "east", "join-token": ht.Token}); code != http.StatusCreated {
		t.Fatalf("register: %d %s", code, out)
	}
	addModel := func(name string) string {
		t.Helper()
		code, out := e.do(http.MethodPost, "/v1/models", tok, map[string]string{"name": name, "region": "east"})
		if code != http.StatusCreated {
			t.Fatalf("add-model %s: %d %s", name, code, out)
		}
		m, err := e.st.ModelByName(ctx, "acme", name)
		if err != nil {
			t.Fatal(err)
		}
		return m.UUID
	}
	controller := func() store.Controller {
		t.Helper()
		c, err := e.st.ControllerByName(ctx, "east")
		if err != nil {
			t.Fatal(err)
		}
		return c
	}

	kept := addModel("kept")
	// The backup: the controller's data directory while it is stopped.
	stop()
	if err := os.CopyFS(backup, os.DirFS(live)); err != nil {
		t.Fatal(err)
	}
	stop = runNode(t, cfg)
	lost := addModel("lost")
	// More of the history the restore loses, so that the restored
	// controller's next change is still behind the hub's index.
	for _, name := range []string{"lost-2", "lost-3", "lost-4"} {
		addModel(name)
	}
	rita := e.user("rita", "acme")
	e.grant(authz.UserObject(rita.ID), authz.Reader, authz.ModelObject(lost))
	// And an application in the model kept, which the restore takes away.
	ch, err := admin.UploadCharm(ctx, bytes.NewReader(charmArchive(t, "kvstore")))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Deploy(ctx, kept, api.DeployRequest{Application: "kv", CharmSHA256: ch.SHA256}); err != nil {
		t.Fatal(err)
	}
	direct, err := admin.AddModel(ctx, api.AddModelRequest{Name: "lost-direct"})
	if err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyWithin(t, 30*time.Second, func() (bool, error) {
		_, err := e.st.ModelByUUID(ctx, direct.UUID)
		m, errKept := e.st.ModelByUUID(ctx, kept)
		return err == nil && errKept == nil && m.ApplicationCount == 1 && controller().EventIndex >= admin.Index(), nil
	}, "the hub follows the controller past the backup")
	ahead := controller().EventIndex

	// The restore.
	stop()
	if err := os.RemoveAll(live); err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(live, os.DirFS(backup)); err != nil {
		t.Fatal(err)
	}
	stop = runNode(t, cfg)
	admin.Close()
	// A new client: the old one remembers the highest index it saw.
	admin, err = api.NewClient(api.ClientConfig{Addresses: []string{cfg.Listen}, CACert: []byte(cred.CACert),
		User: cred.User, Password: cred.Password, Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	since, err := admin.AddModel(ctx, api.AddModelRequest{Name: "since"})
	if err != nil {
		t.Fatal(err)
	}
	if admin.Index() >= ahead {
		t.Fatalf("the restored controller is at index %d, past the hub's %d: the test shows nothing", admin.Index(), ahead)
	}
	testkit.EventuallyWithin(t, 30*time.Second, func() (bool, error) {
		_, errSince := e.st.ModelByUUID(ctx, since.UUID)
		_, errLost := e.st.ModelByUUID(ctx, lost)
		return errSince == nil && errors.Is(errLost, store.ErrNotFound), nil
	}, "the hub adopts the model created since the restore and forgets the one the restore lost")
	testkit.EventuallyWithin(t, 10*time.Second, func() (bool, error) {
		m, err := e.st.ModelByUUID(ctx, kept)
		return err == nil && m.ApplicationCount == 0, err
	}, "the model from before the backup summarised as restored (no application)")
	if c := controller(); c.EventIndex >= ahead {
		t.Errorf("the hub's index of the controller is %d, want it back below %d", c.EventIndex, ahead)
	}
	for op, model := range map[string]string{store.OpControllerRewound: "", store.OpModelForgotten: lost} {
		es, _, err := e.st.QueryAudit(ctx, store.AuditQuery{All: true, Operation: op, ModelUUID: model, Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		if len(es) != 1 || es[0].Actor != "hub" || es[0].ModelUUID != model || !strings.Contains(es[0].ControllerUUID, cred.ControllerUUID) {
			t.Errorf("audit %q: %+v, want one entry by the hub on the controller (model %q)", op, es, model)
		}
	}
	// The controller's next changes apply at once.
	if _, err := admin.AddModel(ctx, api.AddModelRequest{Name: "next"}); err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyWithin(t, 30*time.Second, func() (bool, error) {
		_, err := e.st.ModelByName(ctx, "acme", "next")
		return err == nil, nil
	}, "the next model adopted")
}
