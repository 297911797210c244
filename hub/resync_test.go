package hub_test

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/gorilla/websocket"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/authz"
	"github.com/droverhq/drover/hub"
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
	cfg, stop, admin, cred := runRegisteredNode(t, e, live)
	defer func() { stop() }()
	addModel := func(name string) string {
		t.Helper()
		code, out := e.do(http.MethodPost, "/v1/models", tok, map[string]string{"name": name, "region": "east"})
		if code != http.StatusCreated {
			t.Fatalf("add-model %s: %d %s", name, code, out)
		}
		m, err := e.st.Models.ByName(ctx, "acme", name)
		if err != nil {
			t.Fatal(err)
		}
		return m.UUID
	}
	controller := func() store.Controller { return e.controllerNamed("east") }

	kept := addModel("kept")
	// The backup: the controller's data directory while it is stopped.
	stop()
	copyDir(t, live, backup)
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
	if _, err := admin.Model(kept).Deploy(ctx, api.DeployRequest{Application: "kv", CharmSHA256: ch.SHA256}); err != nil {
		t.Fatal(err)
	}
	direct, err := admin.AddModel(ctx, api.AddModelRequest{Name: "lost-direct"})
	if err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyWithin(t, 30*time.Second, func() (bool, error) {
		_, err := e.st.Models.ByUUID(ctx, direct.UUID)
		m, errKept := e.st.Models.ByUUID(ctx, kept)
		return err == nil && errKept == nil && m.ApplicationCount == 1 && controller().EventIndex >= admin.Index(), nil
	}, "the hub follows the controller past the backup")
	ahead := controller().EventIndex

	// The restore.
	stop()
	copyDir(t, backup, live)
	stop = runNode(t, cfg)
	// A new client: the old one remembers the highest index it saw.
	admin = adminClient(t, cfg.Listen, cred)
	since, err := admin.AddModel(ctx, api.AddModelRequest{Name: "since"})
	if err != nil {
		t.Fatal(err)
	}
	if admin.Index() >= ahead {
		t.Fatalf("the restored controller is at index %d, past the hub's %d: the test shows nothing", admin.Index(), ahead)
	}
	testkit.EventuallyWithin(t, 30*time.Second, func() (bool, error) {
		_, errSince := e.st.Models.ByUUID(ctx, since.UUID)
		_, errLost := e.st.Models.ByUUID(ctx, lost)
		return errSince == nil && errors.Is(errLost, store.ErrNotFound), nil
	}, "the hub adopts the model created since the restore and forgets the one the restore lost")
	testkit.EventuallyWithin(t, 10*time.Second, func() (bool, error) {
		m, err := e.st.Models.ByUUID(ctx, kept)
		return err == nil && m.ApplicationCount == 0, err
	}, "the model from before the backup summarised as restored (no application)")
	if c := controller(); c.EventIndex >= ahead {
		t.Errorf("the hub's index of the controller is %d, want it back below %d", c.EventIndex, ahead)
	}
	for op, model := range map[string]string{store.OpControllerRewound: "", store.OpModelForgotten: lost} {
		es, _, err := e.st.Audit.Query(ctx, store.AuditQuery{All: true, Operation: op, ModelUUID: model, Limit: 10})
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
		_, err := e.st.Models.ByName(ctx, "acme", "next")
		return err == nil, nil
	}, "the next model adopted")
}

// runRegisteredNode runs a one-node controller "east" on dataDir (stop
// ends it; runNode(t, cfg) starts it again on the same directory) and
// registers it with the hub by a join token, as the hub's administrator.
func runRegisteredNode(t *testing.T, e *env, dataDir string, opts ...func(*spoke.Config)) (spoke.Config, func(), *api.Client, *spoke.AdminCredential) {
	t.Helper()
	cfg := spoke.Config{DataDir: dataDir, Listen: testkit.FreeAddr(t), RaftListen: testkit.FreeAddr(t), Name: "east",
		Bootstrap: true, RaftHeartbeat: 100 * time.Millisecond, RaftElection: 100 * time.Millisecond,
		Logger: slog.New(slog.DiscardHandler), NoProvisioner: true}
	for _, o := range opts {
		o(&cfg)
	}
	stop := runNode(t, cfg)
	cred, err := spoke.ReadAdminCredential(dataDir)
	if err != nil {
		t.Fatal(err)
	}
	admin := adminClient(t, cfg.Listen, cred)
	var ht *api.JoinToken
	testkit.EventuallyWithin(t, 30*time.Second, func() (bool, error) {
		ht, err = admin.CreateHubToken(t.Context(), 0)
		return err == nil, nil
	}, "controller bootstrapped")
	if code, out := e.do(http.MethodPost, "/v1/controllers", e.hubAdmin(), map[string]string{"name": "east", "url": "https://" + cfg.Listen,
		"ca-cert": cred.CACert, "region": "east", "join-token": ht.Token}); code != http.StatusCreated {
		t.Fatalf("register: %d %s", code, out)
	}
	return cfg, stop, admin, cred
}

// resyncingModel is a served hub that asks every controller for a reset
// every second, the controller east registered with it (its stop is the
// test's cleanup), and a model shop added on east.
func resyncingModel(t *testing.T) (*env, *api.Client, *api.Model) {
	t.Helper()
	e := newServedEnv(t, func(c *hub.Config) { c.IndexResyncEvery = time.Second })
	_, stop, admin, _ := runRegisteredNode(t, e, t.TempDir(), func(c *spoke.Config) { c.KeepaliveInterval = 200 * time.Millisecond })
	t.Cleanup(stop)
	m, err := admin.AddModel(t.Context(), api.AddModelRequest{Name: "shop"})
	if err != nil {
		t.Fatal(err)
	}
	return e, admin, m
}

// indexedModel waits until the hub's index holds the model as the
// controller has it at the admin client's last write, and returns it.
func indexedModel(t *testing.T, e *env, admin *api.Client, uuid string) store.Model {
	t.Helper()
	var indexed store.Model
	testkit.EventuallyWithin(t, 30*time.Second, func() (bool, error) {
		var err error
		indexed, err = e.st.Models.ByUUID(t.Context(), uuid)
		c, cerr := e.st.Controllers.ByName(t.Context(), "east")
		return err == nil && cerr == nil && c.EventIndex >= admin.Index(), nil
	}, "the model indexed")
	return indexed
}

// TestIndexDriftIsRepaired: whatever the hub's index comes to hold wrong
// about a controller's models (here written into it behind the indexer's
// back: a summary, and a model the controller does not have) is repaired
// by the reset the indexer asks for every IndexResyncEvery, and counted.
// Before, the index was only ever corrected by the controller's next
// event on that model, so an event lost to a bug left it wrong for good.
func TestIndexDriftIsRepaired(t *testing.T) {
	e, admin, m := resyncingModel(t)
	ctx := t.Context()
	// A model placed through the hub is indexed by the hub as the
	// controller summarises it: no drift either.
	if code, out := e.do(http.MethodPost, "/v1/models", e.hubAdmin(), map[string]string{"name": "placed", "region": "east"}); code != http.StatusCreated {
		t.Fatalf("add-model placed: %d %s", code, out)
	}
	indexed := indexedModel(t, e, admin, m.UUID)
	resyncs := e.metric("drover_hub_index_resyncs_total")

	wrong := indexed
	wrong.ApplicationCount, wrong.Status = 7, "blocked"
	if _, err := e.st.Models.UpdateSummary(ctx, wrong, time.Now()); err != nil {
		t.Fatal(err)
	}
	ghost := store.Model{UUID: uuid.NewString(), Name: "ghost", Org: "acme", ControllerUUID: indexed.ControllerUUID}
	if err := e.st.Models.Insert(ctx, ghost); err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyWithin(t, 30*time.Second, func() (bool, error) {
		got, err := e.st.Models.ByUUID(ctx, m.UUID)
		_, gerr := e.st.Models.ByUUID(ctx, ghost.UUID)
		return err == nil && got.ApplicationCount == 0 && got.Status == indexed.Status && errors.Is(gerr, store.ErrNotFound), nil
	}, "the index repaired")
	if n := e.metric("drover_hub_index_drift_repaired_total"); n != 2 {
		t.Errorf("drift repaired: %v models, want 2", n)
	}
	if n := e.metric("drover_hub_index_resyncs_total"); n <= resyncs {
		t.Errorf("resyncs: %v, was %v", n, resyncs)
	}
	// A reset that finds the index right writes nothing to it.
	repaired, err := e.st.Models.ByUUID(ctx, m.UUID)
	if err != nil {
		t.Fatal(err)
	}
	resyncs = e.metric("drover_hub_index_resyncs_total")
	testkit.EventuallyWithin(t, 30*time.Second, func() (bool, error) {
		return e.metric("drover_hub_index_resyncs_total") >= resyncs+2, nil
	}, "two more resyncs")
	if again, err := e.st.Models.ByUUID(ctx, m.UUID); err != nil || !again.UpdatedAt.Equal(repaired.UpdatedAt) {
		t.Errorf("the model after resyncs that found it right: updated %v, was %v (%v)", again.UpdatedAt, repaired.UpdatedAt, err)
	}
	if n := e.metric("drover_hub_index_drift_repaired_total"); n != 2 {
		t.Errorf("drift repaired after resyncs that found none: %v models, want 2", n)
	}
}

// TestIndexerResumesWithTheMark: the indexer resumes a controller's event
// stream with the index and the mark of the last frame it applied,
// so that a controller whose history is no longer the one the index was
// read from (restored from an older copy, then gone past that index) can
// tell, and answers with a reset. Before, the index alone could not tell.
func TestIndexerResumesWithTheMark(t *testing.T) {
	e := newEnv(t)
	runIndexer(t, e)
	id := uuid.NewString()
	im := newImpostor(t, id)
	queries := make(chan string, 16)
	im.handle("GET /v1/events", func(w http.ResponseWriter, r *http.Request) {
		queries <- r.URL.RawQuery
		conn, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
		if err != nil {
			return
		}
		// One frame, and the stream ends: the hub resumes after it.
		conn.WriteJSON(api.EventFrame{Type: api.EventFrameReset, Index: 41, Mark: "3.1700000000000000001", Models: []api.ModelSummary{}})
		conn.Close()
	})
	if code, b := e.do(http.MethodPost, "/v1/controllers", e.hubAdmin(),
		hub.AddControllerRequest{Name: "termed", URL: im.srv.URL, CACert: im.caPEM(), Region: "east"}); code != http.StatusCreated {
		t.Fatalf("register: %d %s", code, b)
	}
	next := func() string {
		t.Helper()
		select {
		case q := <-queries:
			return q
		case <-time.After(30 * time.Second):
			t.Fatal("the hub did not subscribe")
			return ""
		}
	}
	if q := next(); q != "since=0" {
		t.Errorf("first subscription: %q, want since=0", q)
	}
	if q := next(); q != "mark=3.1700000000000000001&since=41" {
		t.Errorf("resumed subscription: %q, want mark=3.1700000000000000001&since=41", q)
	}
}

// TestControllerRestoredAndGonePastTheHub: a controller restored from an
// older copy that goes past the hub's index before the hub hears from it
// again (here it runs on another address meanwhile; in life, a busy
// controller does so within seconds) is read whole, not resumed: the
// index names the entry at the hub's position by its mark (raft term and
// when it was appended), and the restored history holds another one
// there, even with the same term (both histories restarted once from the
// same copy). Before, the hub resumed after
// its index and never heard of the models the restored history made up to
// it.
func TestControllerRestoredAndGonePastTheHub(t *testing.T) {
	e := newServedEnv(t)
	ctx := t.Context()
	root := t.TempDir()
	live, backup := filepath.Join(root, "live"), filepath.Join(root, "backup")
	cfg, stop, admin, cred := runRegisteredNode(t, e, live)
	defer func() { stop() }()
	controller := func() store.Controller { return e.controllerNamed("east") }
	addModels := func(c *api.Client, prefix string, n int) []string {
		t.Helper()
		var ids []string
		for i := range n {
			m, err := c.AddModel(ctx, api.AddModelRequest{Name: fmt.Sprintf("%s-%d", prefix, i)})
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, m.UUID)
		}
		return ids
	}
	indexed := func(c *api.Client) {
		t.Helper()
		testkit.EventuallyWithin(t, 30*time.Second, func() (bool, error) {
			return controller().EventIndex >= c.Index(), nil
		}, "the hub follows the controller")
	}
	addModels(admin, "kept", 1)
	indexed(admin)
	stop()
	copyDir(t, live, backup)
	stop = runNode(t, cfg)
	lost := addModels(admin, "lost", 3)
	indexed(admin)
	ahead := controller()

	// The restore, running where the hub does not reach it until it has
	// gone past the hub's index.
	stop()
	copyDir(t, backup, live)
	elsewhere := cfg
	elsewhere.Listen = testkit.FreeAddr(t)
	stop = runNode(t, elsewhere)
	away := adminClient(t, elsewhere.Listen, cred)
	made := addModels(away, "since", 6)
	if away.Index() <= ahead.EventIndex {
		t.Fatalf("the restored controller is at index %d, not past the hub's %d: the test shows nothing", away.Index(), ahead.EventIndex)
	}
	stop()
	stop = runNode(t, cfg)
	testkit.EventuallyWithin(t, 30*time.Second, func() (bool, error) {
		for _, id := range made {
			if _, err := e.st.Models.ByUUID(ctx, id); err != nil {
				return false, nil
			}
		}
		for _, id := range lost {
			if _, err := e.st.Models.ByUUID(ctx, id); !errors.Is(err, store.ErrNotFound) {
				return false, nil
			}
		}
		return true, nil
	}, "the hub reads the restored history whole: its models adopted, the lost ones forgotten")
}

// adminClient is the controller's local administrator's client at addr.
func adminClient(t *testing.T, addr string, cred *spoke.AdminCredential) *api.Client {
	t.Helper()
	c, err := api.NewClient(api.ClientConfig{Addresses: []string{addr}, CACert: []byte(cred.CACert),
		User: cred.User, Password: cred.Password, Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// copyDir copies the stopped controller's data directory from to a new
// directory to (a backup; a restore when to is the controller's, removed
// first).
func copyDir(t *testing.T, from, to string) {
	t.Helper()
	if err := os.RemoveAll(to); err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(to, os.DirFS(from)); err != nil {
		t.Fatal(err)
	}
}

// controllerNamed is the hub's record of a controller.
func (e *env) controllerNamed(name string) store.Controller {
	e.t.Helper()
	c, err := e.st.Controllers.ByName(e.t.Context(), name)
	if err != nil {
		e.t.Fatal(err)
	}
	return c
}

// TestAnotherHistoryAtTheSameIndexIsNoDrift: a reset at the very index the
// hub had reached, but of another entry (another mark: a restored copy
// that happens to stand there), changes the index as any reset does, and
// is not counted as drift, which it is not.
func TestAnotherHistoryAtTheSameIndexIsNoDrift(t *testing.T) {
	e := newEnv(t)
	runIndexer(t, e)
	im := newImpostor(t, uuid.NewString())
	shop := uuid.NewString()
	var n atomic.Int32
	im.handle("GET /v1/events", func(w http.ResponseWriter, r *http.Request) {
		conn, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer conn.Close()
		f := api.EventFrame{Type: api.EventFrameReset, Index: 41, Mark: "3.1",
			Models: []api.ModelSummary{{UUID: shop, Name: "shop", Life: api.Alive, Status: "available"}}}
		if n.Add(1) > 1 {
			f.Mark, f.Models[0].ApplicationCount = "3.2", 5
		}
		conn.WriteJSON(f)
		if n.Load() > 1 {
			conn.ReadMessage() // until the hub hangs up
		}
	})
	if code, b := e.do(http.MethodPost, "/v1/controllers", e.hubAdmin(),
		hub.AddControllerRequest{Name: "restored", URL: im.srv.URL, CACert: im.caPEM(), Region: "east"}); code != http.StatusCreated {
		t.Fatalf("register: %d %s", code, b)
	}
	testkit.EventuallyWithin(t, 30*time.Second, func() (bool, error) {
		m, err := e.st.Models.ByUUID(t.Context(), shop)
		return err == nil && m.ApplicationCount == 5, nil
	}, "the other history's reset applied")
	if d := e.metric("drover_hub_index_drift_repaired_total"); d != 0 {
		t.Errorf("drift repaired: %v, want 0 (another history, not drift)", d)
	}
}

// TestControllerThatNeverResetsIsBackedOff: a controller (broken or
// hostile) that answers a subscription from index 0 with something other
// than a reset is recorded as failing, and retried with backoff. Before,
// the due resync ended each such subscription at its first frame and
// started the next at once: the hub reconnected to it without pause.
func TestControllerThatNeverResetsIsBackedOff(t *testing.T) {
	e := newEnv(t, func(c *hub.Config) { c.IndexResyncEvery = time.Millisecond })
	runIndexer(t, e)
	id := uuid.NewString()
	im := newImpostor(t, id)
	var subs atomic.Int32
	im.handle("GET /v1/events", func(w http.ResponseWriter, r *http.Request) {
		subs.Add(1)
		conn, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer conn.Close()
		for i := uint64(1); ; i++ {
			if conn.WriteJSON(api.EventFrame{Type: api.EventFrameKeepalive, Index: i}) != nil {
				return
			}
			time.Sleep(20 * time.Millisecond) // the impostor's pace, not a wait of the test's
		}
	})
	if code, b := e.do(http.MethodPost, "/v1/controllers", e.hubAdmin(),
		hub.AddControllerRequest{Name: "stubborn", URL: im.srv.URL, CACert: im.caPEM(), Region: "east"}); code != http.StatusCreated {
		t.Fatalf("register: %d %s", code, b)
	}
	testkit.EventuallyWithin(t, 30*time.Second, func() (bool, error) {
		c := e.controllerNamed("stubborn")
		reason, _ := c.Health["error"].(string)
		return c.Status == "disconnected" && strings.Contains(reason, "without a reset"), nil
	}, "the controller recorded as failing")
	// Recorded as failing, it is retried with the backoff failures get
	// (200 ms doubling): a handful of subscriptions, not hundreds.
	if n := subs.Load(); n > 10 {
		t.Errorf("%d subscriptions before the failure was recorded: want backoff", n)
	}
}
