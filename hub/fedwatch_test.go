package hub_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/gorilla/websocket"
	"github.com/jackc/pgx/v5"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/authz"
	"github.com/droverhq/drover/hub"
	"github.com/droverhq/drover/hub/internal/store"
	"github.com/droverhq/drover/tests/testkit"
)

// fedFixture is a hub with a controller and models in acme, and the same
// in globex, whose models acme's people must never see.
type fedFixture struct {
	*env
	ctrl, otherCtrl store.Controller
	m1, m2, other   string
	ada             store.Identity // acme's administrator
	tok             string
}

func newFedFixture(t *testing.T, opts ...func(*hub.Config)) *fedFixture {
	t.Helper()
	f := &fedFixture{env: newEnv(t, opts...)}
	ctx := t.Context()
	f.ada = f.user("ada", "acme")
	f.user("gus", "globex")
	f.ctrl = store.Controller{UUID: uuid.NewString(), Name: "east", Org: "acme", Region: "r1", APIAddresses: []string{"127.0.0.1:1"}}
	f.otherCtrl = store.Controller{UUID: uuid.NewString(), Name: "west", Org: "globex", Region: "r2", APIAddresses: []string{"127.0.0.1:1"}}
	for _, c := range []store.Controller{f.ctrl, f.otherCtrl} {
		if err := f.st.Controllers.Upsert(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	f.m1, f.m2 = f.model("acme", "m1", f.ctrl), f.model("acme", "m2", f.ctrl)
	f.other = f.model("globex", "g1", f.otherCtrl)
	f.grant(authz.UserObject(f.ada.ID), authz.Administrator, authz.OrgObject("acme"))
	f.settle()
	f.tok = f.token(f.ada, 5*time.Minute, "")
	return f
}

func (f *fedFixture) model(org, name string, c store.Controller) string {
	f.t.Helper()
	m := store.Model{UUID: uuid.NewString(), Name: name, Org: org, ControllerUUID: c.UUID}
	if err := f.st.Models.Insert(f.t.Context(), m); err != nil {
		f.t.Fatal(err)
	}
	return m.UUID
}

// touch writes model id's summary again (a new version).
func (f *fedFixture) touch(id string, ctrl store.Controller, units int) {
	f.t.Helper()
	if _, err := f.st.Models.UpdateSummary(f.t.Context(), store.Model{UUID: id, ControllerUUID: ctrl.UUID, Life: "alive",
		Status: "available", UnitCount: units, EventIndex: uint64(units)}, time.Now()); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fedFixture) remove(id string) {
	f.t.Helper()
	if err := f.st.Models.Delete(f.t.Context(), id); err != nil {
		f.t.Fatal(err)
	}
}

// dial opens GET /v1/watch?since=since with header h (a bearer token when
// h is nil).
func (f *fedFixture) dial(t *testing.T, tok string, since int64, h http.Header) (*websocket.Conn, *http.Response, error) {
	t.Helper()
	if h == nil {
		h = http.Header{"Authorization": {"Bearer " + tok}}
	}
	u := "ws" + strings.TrimPrefix(f.url, "http") + fmt.Sprintf("/v1/watch?since=%d", since)
	conn, resp, err := websocket.DefaultDialer.DialContext(t.Context(), u, h)
	if err == nil {
		t.Cleanup(func() { _ = conn.Close() })
	}
	return conn, resp, err
}

func (f *fedFixture) open(t *testing.T, tok string, since int64) *websocket.Conn {
	t.Helper()
	conn, _, err := f.dial(t, tok, since, nil)
	if err != nil {
		t.Fatalf("dial /v1/watch: %v", err)
	}
	return conn
}

func next(t *testing.T, conn *websocket.Conn) api.FederationFrame {
	t.Helper()
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	var fr api.FederationFrame
	if err := conn.ReadJSON(&fr); err != nil {
		t.Fatalf("read frame: %v", err)
	}
	return fr
}

// ids returns the frame's model UUIDs and controller names, sorted.
func ids(t *testing.T, fr api.FederationFrame) (models, ctrls []string) {
	t.Helper()
	for _, m := range fr.Models {
		var v struct{ UUID string }
		if err := json.Unmarshal(m, &v); err != nil {
			t.Fatal(err)
		}
		models = append(models, v.UUID)
	}
	for _, c := range fr.Controllers {
		var v struct{ Name string }
		if err := json.Unmarshal(c, &v); err != nil {
			t.Fatal(err)
		}
		ctrls = append(ctrls, v.Name)
	}
	slices.Sort(models)
	slices.Sort(ctrls)
	return models, ctrls
}

func sorted(xs ...string) []string { slices.Sort(xs); return xs }

// until reads frames until one satisfies ok, failing on any that carries
// another organization's model.
func (f *fedFixture) until(t *testing.T, conn *websocket.Conn, what string, ok func(api.FederationFrame) bool) api.FederationFrame {
	t.Helper()
	for range 20 {
		fr := next(t, conn)
		if ms, cs := ids(t, fr); slices.Contains(ms, f.other) || slices.Contains(cs, f.otherCtrl.Name) {
			t.Fatalf("a frame carries globex's rows: %+v", fr)
		}
		if ok(fr) {
			return fr
		}
	}
	t.Fatalf("no frame: %s", what)
	return api.FederationFrame{}
}

// TestFederationStreamResetDeltasAndResume: a stream starts with a reset
// of what the caller reads (its organization's controller and models,
// each as GET /v1/models answers it), then sends deltas as models are
// changed and removed; resumed with since it sends only what changed
// after, removals included; since pruned past or ahead of the index gets
// a reset. Another organization's rows never appear.
func TestFederationStreamResetDeltasAndResume(t *testing.T) {
	testkit.CheckLeaks(t)
	f := newFedFixture(t)
	north := store.Controller{UUID: uuid.NewString(), Name: "north", Org: "acme", Region: "r3", APIAddresses: []string{"127.0.0.1:1"}}
	if err := f.st.Controllers.Upsert(t.Context(), north); err != nil {
		t.Fatal(err)
	}
	f.settle() // its link to acme
	conn := f.open(t, f.tok, 0)
	reset := next(t, conn)
	ms, cs := ids(t, reset)
	if reset.Type != api.FederationFrameReset || !slices.Equal(ms, sorted(f.m1, f.m2)) || !slices.Equal(cs, []string{"east", "north"}) {
		t.Fatalf("first frame %s models %v controllers %v, want a reset of m1, m2, east and north", reset.Type, ms, cs)
	}
	// Rows exactly as the listings answer them.
	var listed struct{ Models []json.RawMessage }
	if err := json.Unmarshal(f.want(t, "list models", http.StatusOK, f.tok, http.MethodGet, "/v1/models", nil), &listed); err != nil {
		t.Fatal(err)
	}
	for _, m := range reset.Models {
		if !slices.ContainsFunc(listed.Models, func(l json.RawMessage) bool { return string(l) == string(m) }) {
			t.Errorf("streamed model %s is not as GET /v1/models lists it: %s", m, listed.Models)
		}
	}
	var ctrls struct{ Controllers []json.RawMessage }
	if err := json.Unmarshal(f.want(t, "list controllers", http.StatusOK, f.tok, http.MethodGet, "/v1/controllers", nil), &ctrls); err != nil {
		t.Fatal(err)
	}
	if len(ctrls.Controllers) != 2 || string(ctrls.Controllers[0]) != string(reset.Controllers[0]) || string(ctrls.Controllers[1]) != string(reset.Controllers[1]) {
		t.Errorf("streamed controller %s, listed %s", reset.Controllers[0], ctrls.Controllers)
	}

	f.touch(f.m1, f.ctrl, 3)
	f.touch(f.other, f.otherCtrl, 3) // never told
	d := f.until(t, conn, "m1 changed", func(fr api.FederationFrame) bool { ms, _ := ids(t, fr); return slices.Contains(ms, f.m1) })
	if d.Type != api.FederationFrameDelta || d.Index <= reset.Index || len(d.Models) != 1 {
		t.Fatalf("delta %+v after reset at %d, want m1 alone at a higher index", d, reset.Index)
	}
	f.remove(f.m2)
	f.remove(f.other)
	d = f.until(t, conn, "m2 removed", func(fr api.FederationFrame) bool { return len(fr.Removed) > 0 })
	if want := []api.FederationKey{{Kind: "model", ID: f.m2}}; !slices.Equal(d.Removed, want) {
		t.Fatalf("removed %v, want %v", d.Removed, want)
	}
	_ = conn.Close()

	// Away: m3 added, m1 and north removed, globex changed.
	at := d.Index
	m3 := f.model("acme", "m3", f.ctrl)
	f.remove(f.m1)
	if _, err := f.st.Controllers.Remove(t.Context(), north.UUID, false); err != nil {
		t.Fatal(err)
	}
	f.model("globex", "g2", f.otherCtrl)
	conn = f.open(t, f.tok, at)
	// The hub may serve the resumption in more than one delta (as its
	// horizon rises past the writes).
	var got []string
	var removed []api.FederationKey
	d = f.until(t, conn, "m1's removal after resuming", func(fr api.FederationFrame) bool {
		ms, cs := ids(t, fr)
		if fr.Type != api.FederationFrameDelta || len(cs) != 0 {
			t.Fatalf("resumed from %d: %s with controllers %v, want deltas of models", at, fr.Type, cs)
		}
		got, removed = append(got, ms...), append(removed, fr.Removed...)
		return len(removed) >= 2
	})
	if want := []api.FederationKey{{Kind: "model", ID: f.m1}, {Kind: "controller", ID: "north"}}; !slices.Equal(got, []string{m3}) || !slices.Equal(removed, want) {
		t.Fatalf("resumed from %d: models %v removed %v; want m3, and the removals %v", at, got, removed, want)
	}
	_ = conn.Close()

	// Ahead of the index, and behind the removals kept: resets.
	if fr := next(t, f.open(t, f.tok, d.Index+1_000_000)); fr.Type != api.FederationFrameReset {
		t.Fatalf("since ahead of the index: %s, want a reset", fr.Type)
	}
	if _, err := f.st.PruneRemovals(t.Context(), time.Now().Add(time.Hour), 0); err != nil {
		t.Fatal(err)
	}
	fr := next(t, f.open(t, f.tok, at))
	if ms, _ := ids(t, fr); fr.Type != api.FederationFrameReset || !slices.Equal(ms, []string{m3}) {
		t.Fatalf("since before pruned removals: %s %v, want a reset of m3", fr.Type, ms)
	}
}

// TestFederationStreamRevoke: a reader's stream loses the model when its
// grant is revoked (a removal), and gains it back with the grant.
func TestFederationStreamRevoke(t *testing.T) {
	f := newFedFixture(t)
	bea := f.user("bea", "acme")
	grant := authz.Tuple{User: authz.UserObject(bea.ID), Relation: authz.Reader, Object: authz.ModelObject(f.m1)}
	f.grant(grant.User, grant.Relation, grant.Object)
	f.settle()
	conn := f.open(t, f.token(bea, 5*time.Minute, ""), 0)
	if ms, cs := ids(t, next(t, conn)); !slices.Equal(ms, []string{f.m1}) || len(cs) != 0 {
		t.Fatalf("reset: models %v controllers %v, want m1 alone", ms, cs)
	}
	if err := f.st.Grants.Revoke(t.Context(), []authz.Tuple{grant}, nil); err != nil {
		t.Fatal(err)
	}
	f.settle()
	f.until(t, conn, "m1 removed on revoke", func(fr api.FederationFrame) bool {
		return slices.Equal(fr.Removed, []api.FederationKey{{Kind: "model", ID: f.m1}})
	})
	f.grant(grant.User, grant.Relation, grant.Object)
	f.settle()
	f.until(t, conn, "m1 back on grant", func(fr api.FederationFrame) bool { ms, _ := ids(t, fr); return slices.Equal(ms, []string{f.m1}) })
}

// TestFederationStreamKeepalive: a quiet stream sends keepalives at the
// current index.
func TestFederationStreamKeepalive(t *testing.T) {
	f := newFedFixture(t, func(c *hub.Config) { hub.SetFederationStream(c, 50*time.Millisecond, 0, 0) })
	conn := f.open(t, f.tok, 0)
	reset := next(t, conn)
	for range 2 {
		if k := next(t, conn); k.Type != api.FederationFrameKeepalive || k.Index != reset.Index {
			t.Fatalf("frame %+v, want a keepalive at %d", k, reset.Index)
		}
	}
}

// TestFederationStreamSlowConsumer: a client that reads nothing while the
// index changes is disconnected (the hub holds no frames for it), and the
// hub goes on serving others.
func TestFederationStreamSlowConsumer(t *testing.T) {
	f := newFedFixture(t, func(c *hub.Config) { hub.SetFederationStream(c, 0, 200*time.Millisecond, 2) })
	ctx := t.Context()
	db, err := pgx.Connect(ctx, f.cfg.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(ctx)
	// Many models: each delta frame is large.
	if _, err := db.Exec(ctx, `INSERT INTO models (uuid, name, org, controller_uuid)
		SELECT gen_random_uuid(), 'bulk-' || i, 'acme', $1 FROM generate_series(1, 2000) i`, f.ctrl.UUID); err != nil {
		t.Fatal(err)
	}
	f.open(t, f.tok, 0) // never read
	testkit.Eventually(ctx, t, func() (bool, error) {
		if _, slow := f.hub.FederationStreams(); slow > 0 {
			return true, nil
		}
		_, err := db.Exec(ctx, `UPDATE models SET unit_count = unit_count + 1 WHERE org = 'acme'`)
		return false, err
	}, "the slow stream ended")
	testkit.Eventually(ctx, t, func() (bool, error) { open, _ := f.hub.FederationStreams(); return open == 0, nil }, "no stream left")
	if fr := next(t, f.open(t, f.tok, 0)); fr.Type != api.FederationFrameReset {
		t.Fatalf("another stream: %s, want a reset", fr.Type)
	}
}

// TestFederationStreamRefusals: a cookie-authenticated upgrade from
// another origin is refused (cross-site websocket hijacking) while one
// from the hub's own is served; past the per-identity bound a stream is
// refused too-many; a bad since is a bad request.
func TestFederationStreamRefusals(t *testing.T) {
	f := newFedFixture(t, func(c *hub.Config) { c.MaxLiveCalls = 1 })
	cookie := "__Host-drover_session=" + f.tok
	_, resp, err := f.dial(t, "", 0, http.Header{"Cookie": {cookie}, "Origin": {"https://evil.test"}})
	if !errors.Is(err, websocket.ErrBadHandshake) || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("cross-origin cookie upgrade: %v %v, want 403", err, resp)
	}
	conn, _, err := f.dial(t, "", 0, http.Header{"Cookie": {cookie}, "Origin": {publicURL}})
	if err != nil {
		t.Fatalf("same-origin cookie upgrade: %v", err)
	}
	next(t, conn)
	_, resp, err = f.dial(t, f.tok, 0, nil)
	if !errors.Is(err, websocket.ErrBadHandshake) || resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("a second stream past the bound: %v %v, want 429", err, resp)
	}
	_ = conn.Close()
	_, resp, err = f.dial(t, f.tok, -1, nil)
	if !errors.Is(err, websocket.ErrBadHandshake) || resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("since=-1: %v %v, want 400", err, resp)
	}
}

// TestFederationStreamResetsAfterLostNotifications: when the replica's
// LISTEN connection is lost (its backend terminated), the changes
// committed meanwhile were not announced: once it listens again, every
// stream sends a reset.
func TestFederationStreamResetsAfterLostNotifications(t *testing.T) {
	f := newFedFixture(t)
	ctx := t.Context()
	conn := f.open(t, f.tok, 0)
	if fr := next(t, conn); fr.Type != api.FederationFrameReset {
		t.Fatalf("first frame %s", fr.Type)
	}
	db, err := pgx.Connect(ctx, f.cfg.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(ctx)
	var n int
	if err := db.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE datname = current_database() AND query = 'LISTEN drover_index_changed'`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("terminated %d listeners (%v), want 1", n, err)
	}
	m3 := f.model("acme", "m3", f.ctrl)
	fr := f.until(t, conn, "a reset", func(fr api.FederationFrame) bool { return fr.Type == api.FederationFrameReset })
	// m3 is in the reset, or comes after it should it commit later.
	if ms, _ := ids(t, fr); !slices.Contains(ms, m3) {
		f.until(t, conn, "m3", func(fr api.FederationFrame) bool { ms, _ := ids(t, fr); return slices.Contains(ms, m3) })
	}
}
