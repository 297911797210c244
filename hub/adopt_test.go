package hub_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/authz"
	"github.com/droverhq/drover/hub/internal/store"
	"github.com/droverhq/drover/tests/testkit"
)

// runIndexer runs the hub's indexer until the test ends.
func runIndexer(t *testing.T, e *env) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- e.hub.RunIndexer(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("indexer: %v", err)
		}
	})
}

// indexed waits until the index holds the model and returns its row.
func (e *env) indexed(id string) store.Model {
	e.t.Helper()
	var m store.Model
	testkit.EventuallyWithin(e.t, time.Minute, func() (bool, error) {
		var err error
		m, err = e.st.Models.ByUUID(e.t.Context(), id)
		if errors.Is(err, store.ErrNotFound) {
			return false, nil
		}
		return err == nil, err
	}, "model %s indexed", id)
	return m
}

// listed returns the names of the models GET /v1/models shows the caller.
func (e *env) listed(id store.Identity) []string {
	e.t.Helper()
	code, b := e.do("GET", "/v1/models", e.token(id, time.Minute, ""), nil)
	if code != http.StatusOK {
		e.t.Fatalf("list models as %s: %d %s", id.Email, code, b)
	}
	var out struct{ Models []struct{ Name string } }
	if err := json.Unmarshal(b, &out); err != nil {
		e.t.Fatal(err)
	}
	var names []string
	for _, m := range out.Models {
		names = append(names, m.Name)
	}
	slices.Sort(names)
	return names
}

// TestIndexAdoptsModelsCreatedOnControllers: models created on registered
// controllers directly (their local admin, not the hub) join the index,
// from a reset frame and from an event, owned by the controller's
// organization (the default one for a shared controller); their
// administrators and the hub's see and reach them through the hub, nobody
// else does; a taken name falls back to NAME-CONTROLLER; each adoption is
// audited; destroying the model on the controller removes it from the
// index with its tuples; and a model placed through the hub meanwhile stays
// its creator's, never adopted.
func TestIndexAdoptsModelsCreatedOnControllers(t *testing.T) {
	e := newEnv(t) // default organization: acme
	ctx := t.Context()
	root, alice, bob := e.user("root", "acme"), e.user("alice", "acme"), e.user("bob", "acme")
	olga, gus := e.user("olga", "globex"), e.user("gus", "globex")
	e.grant(authz.UserObject(root.ID), authz.Administrator, authz.HubObject())
	e.grant(authz.UserObject(alice.ID), authz.Administrator, authz.OrgObject("acme"))
	e.grant(authz.UserObject(olga.ID), authz.Administrator, authz.OrgObject("globex"))
	west := startNamedSpoke(t, e, "west", "globex", false) // private to globex
	east := startSpoke(t, e)                               // shared
	startNamedSpoke(t, e, "north", "", true)               // shared
	e.settle()

	// Through the hub, before the indexer runs: root places "dup" on north
	// (in root's organization, acme; never on globex's west, ADR 0021),
	// alice places "prod" on east.
	place := func(who store.Identity, name, controller string) string {
		t.Helper()
		code, b := e.do("POST", "/v1/models", e.token(who, time.Minute, ""), map[string]string{"name": name, "controller": controller})
		var m struct{ UUID string }
		if code != http.StatusCreated || json.Unmarshal(b, &m) != nil {
			t.Fatalf("add model %s on %s: %d %s", name, controller, code, b)
		}
		return m.UUID
	}
	if code, b := e.do("POST", "/v1/models", e.token(root, time.Minute, ""), map[string]string{"name": "dup", "controller": "west"}); code != http.StatusForbidden {
		t.Fatalf("acme's model on globex's controller: %d %s, want 403", code, b)
	}
	place(root, "dup", "north")
	prod := place(alice, "prod", "east")
	// Directly on west before the indexer runs: adopted from the reset.
	before, err := west.Admin.AddModel(ctx, api.AddModelRequest{Name: "w-before"})
	if err != nil {
		t.Fatal(err)
	}

	runIndexer(t, e)
	if m := e.indexed(before.UUID); m.Name != "w-before" || m.Org != "globex" || m.Owner != "" || m.ControllerUUID != west.UUID {
		t.Fatalf("adopted from a reset: %+v", m)
	} else if d := m.CreatedAt.Sub(before.CreatedAt).Abs(); d > time.Microsecond {
		t.Errorf("adopted model created at %v, the controller created it at %v", m.CreatedAt, before.CreatedAt)
	}
	// Directly on the controllers while the indexer follows them.
	after, err := west.Admin.AddModel(ctx, api.AddModelRequest{Name: "w-after"})
	if err != nil {
		t.Fatal(err)
	}
	dup, err := east.Admin.AddModel(ctx, api.AddModelRequest{Name: "dup"})
	if err != nil {
		t.Fatal(err)
	}
	if m := e.indexed(after.UUID); m.Name != "w-after" || m.Org != "globex" || m.Owner != "" {
		t.Fatalf("adopted from an event: %+v", m)
	}
	if m := e.indexed(dup.UUID); m.Name != "dup-east" || m.Org != "acme" || m.Owner != "" || m.ControllerUUID != east.UUID {
		t.Fatalf("adopted on a shared controller with its name taken in the default organization: %+v", m)
	}
	// Hub-placed models were never adopted: their owner and grants stay.
	if m, err := e.st.Models.ByUUID(ctx, prod); err != nil || m.Owner != alice.ID || m.Org != "acme" || m.Name != "prod" {
		t.Fatalf("placed model after the reset: %+v %v", m, err)
	}

	// Who sees what: administrators of the owning organization (and, for
	// west, of the controller: globex's), hub administrators; nobody else.
	e.settle()
	want := map[*store.Identity][]string{
		&root:  {"dup", "dup-east", "prod", "w-after", "w-before"},
		&alice: {"dup", "dup-east", "prod"},
		&bob:   nil,
		&olga:  {"w-after", "w-before"},
		&gus:   nil,
	}
	for who, names := range want {
		testkit.EventuallyWithin(t, 10*time.Second, func() (bool, error) {
			got := e.listed(*who)
			if !slices.Equal(got, names) {
				return false, fmt.Errorf("%s sees %q, want %q", who.Email, got, names)
			}
			return true, nil
		}, "listing of %s", who.Email)
	}

	// Reachable through the hub's proxy by those administrators only.
	status := func(who store.Identity, id string) int {
		code, _ := e.do("GET", "/v1/models/"+id+"/status", e.token(who, time.Minute, ""), nil)
		return code
	}
	for _, c := range []struct {
		who  store.Identity
		id   string
		want int
	}{
		{olga, after.UUID, http.StatusOK}, {root, after.UUID, http.StatusOK}, {gus, after.UUID, http.StatusNotFound},
		{alice, after.UUID, http.StatusNotFound}, {alice, dup.UUID, http.StatusOK}, {bob, dup.UUID, http.StatusNotFound},
		{olga, dup.UUID, http.StatusNotFound},
	} {
		if got := status(c.who, c.id); got != c.want {
			t.Errorf("status of %s as %s through the hub: %d, want %d", c.id, c.who.Email, got, c.want)
		}
	}

	// One audit entry per adoption, by the hub, scoped like the model.
	es, _, err := e.st.Audit.Query(ctx, store.AuditQuery{All: true, Operation: store.OpModelAdopted, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	adopted := map[string]string{} // model -> controller
	for _, a := range es {
		if a.Actor != "hub" || a.Result != store.ResultOK {
			t.Errorf("adoption audit entry: %+v", a)
		}
		adopted[a.ModelUUID] = a.ControllerUUID
	}
	if len(es) != 3 || adopted[before.UUID] != west.UUID || adopted[after.UUID] != west.UUID || adopted[dup.UUID] != east.UUID {
		t.Fatalf("adoption audit entries: %+v", es)
	}
	code, b := e.do("GET", "/v1/audit?operation=model+adopted", e.token(olga, time.Minute, ""), nil)
	var audit struct{ Entries []store.AuditEntry }
	if code != http.StatusOK || json.Unmarshal(b, &audit) != nil || len(audit.Entries) != 2 {
		t.Fatalf("globex's administrator reads the adoptions on its controller: %d %s", code, b)
	}

	// Destroyed on the controller: gone from the index, with its tuples.
	if _, err := west.Admin.Model(after.UUID).Destroy(ctx, true); err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyWithin(t, time.Minute, func() (bool, error) {
		_, err := e.st.Models.ByUUID(ctx, after.UUID)
		return errors.Is(err, store.ErrNotFound), nil
	}, "destroyed model removed from the index")
	if ts, err := e.st.Grants.On(ctx, authz.ModelObject(after.UUID)); err != nil || len(ts) != 0 {
		t.Fatalf("tuples left on a removed adopted model: %v %v", ts, err)
	}
	e.settle()
	if ok, err := e.hub.Authz().Check(ctx, authz.UserObject(olga.ID), authz.Reader, authz.ModelObject(after.UUID)); err != nil || ok {
		t.Fatalf("OpenFGA still lets globex's administrator read the removed model: %v %v", ok, err)
	}
	if got := status(olga, after.UUID); got != http.StatusNotFound {
		t.Fatalf("status of a removed model: %d", got)
	}

	// Placement while the indexer follows the controller: the placed row
	// wins whichever is applied first, and the event reaches it.
	live := place(alice, "live", "east")
	if _, err := east.Admin.Model(live).Info(ctx); err != nil { // reads at or after the model's creation
		t.Fatal(err)
	}
	created := east.Admin.Index()
	testkit.EventuallyWithin(t, time.Minute, func() (bool, error) {
		c, err := e.st.Controllers.ByUUID(ctx, east.UUID)
		return err == nil && c.EventIndex >= created, err
	}, "the controller's event for a placed model applied")
	m, err := e.st.Models.ByUUID(ctx, live)
	if err != nil || m.Owner != alice.ID || m.Org != "acme" || m.Name != "live" {
		t.Fatalf("placed model with the indexer running: %+v %v", m, err)
	}
	ts, err := e.st.Grants.On(ctx, authz.ModelObject(live))
	if err != nil || !slices.Contains(ts, authz.Tuple{User: authz.UserObject(alice.ID), Relation: authz.Administrator, Object: authz.ModelObject(live)}) {
		t.Fatalf("tuples of a placed model: %v %v", ts, err)
	}
	// The placement's claim kept the indexer from adopting it meanwhile.
	if es, _, err := e.st.Audit.Query(ctx, store.AuditQuery{All: true, Operation: store.OpModelAdopted, ModelUUID: live, Limit: 10}); err != nil || len(es) != 0 {
		t.Fatalf("a model placed through the hub was adopted: %+v %v", es, err)
	}
}
