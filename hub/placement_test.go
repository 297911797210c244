package hub_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/authz"
	"github.com/droverhq/drover/hub"
	"github.com/droverhq/drover/hub/internal/store"
	"github.com/droverhq/drover/tests/testkit"
)

// TestPlacementByHealthThenLoadWithRetry: add-model tries the connected
// controllers before the others, the least loaded first, and moves on to
// the next when one fails. Here: "dead" (connected as far as the index
// knows, no models, but nothing listens at its address) is tried first
// and fails; "light" (one model) takes the model, before "heavy" (two) and
// before "idle" (no models, but disconnected), both of which would have
// taken it.
func TestPlacementByHealthThenLoadWithRetry(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	alice := e.user("alice", "acme")
	light, heavy, idle := startNamedSpoke(t, e, "light", "", true), startNamedSpoke(t, e, "heavy", "", true),
		startNamedSpoke(t, e, "idle", "", true)
	info, err := light.Admin.ControllerInfo(ctx) // a valid CA; nothing listens at the address
	if err != nil {
		t.Fatal(err)
	}
	dead := store.Controller{UUID: uuid.NewString(), Name: "dead", Region: "r1", Cloud: "localhost",
		APIAddresses: []string{testkit.FreeAddr(t)}, CACert: info.CACert}
	if err := e.st.Controllers.Upsert(ctx, dead); err != nil {
		t.Fatal(err)
	}
	e.grant(authz.Everyone, authz.CanAddModel, authz.ControllerObject(dead.UUID))
	e.grant(authz.Everyone, authz.Reader, authz.ControllerObject(dead.UUID))
	// Load is models, machines and units: light has more models than
	// heavy, and far fewer agents.
	for uuid, models := range map[string][]int{light.UUID: {0, 0}, heavy.UUID: {12}} {
		for _, units := range models {
			if err := e.st.Models.Insert(ctx, store.Model{UUID: newUUID(), Name: "load-" + newUUID()[:8], Org: "acme",
				Owner: alice.ID, ControllerUUID: uuid, UnitCount: units, MachineCount: units / 3}); err != nil {
				t.Fatal(err)
			}
		}
	}
	now := time.Now()
	for uuid, status := range map[string]string{dead.UUID: "connected", light.UUID: "connected", heavy.UUID: "connected",
		idle.UUID: "disconnected"} {
		if err := e.st.Controllers.SetHealth(ctx, uuid, status, nil, 0, "", now); err != nil {
			t.Fatal(err)
		}
	}
	e.settle()

	code, b := e.do(http.MethodPost, "/v1/models", e.token(alice, time.Minute, ""), map[string]string{"name": "placed"})
	if code != http.StatusCreated {
		t.Fatalf("add model: %d %s", code, b)
	}
	var m struct {
		ControllerUUID string `json:"controller-uuid"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if m.ControllerUUID != light.UUID {
		names := map[string]string{dead.UUID: "dead", light.UUID: "light", heavy.UUID: "heavy", idle.UUID: "idle"}
		t.Errorf("the model went to %q, want light", names[m.ControllerUUID])
	}
	// It exists on light, and nowhere else.
	if ms, err := light.Admin.Models(ctx); err != nil || len(ms) != 1 || ms[0].Name != "placed" {
		t.Errorf("light's models: %+v %v", ms, err)
	}
	for _, other := range []testSpoke{heavy, idle} {
		if ms, err := other.Admin.Models(ctx); err != nil || len(ms) != 0 {
			t.Errorf("another controller's models: %+v %v", ms, err)
		}
	}
	// When no candidate answers, the error names each, on one line, and
	// where to see their health.
	code, b = e.do(http.MethodPost, "/v1/models", e.token(alice, time.Minute, ""), map[string]string{"name": "nowhere", "controller": "dead"})
	var ae api.Error
	if err := json.Unmarshal(b, &ae); err != nil || code != http.StatusBadGateway || ae.Code != api.CodeUnavailable ||
		!strings.HasPrefix(ae.Message, "controller unavailable: no controller could add the model: dead: ") ||
		!strings.HasSuffix(ae.Message, "('drover controllers' shows their health)") || strings.Contains(ae.Message, "\n") {
		t.Errorf("no controller answering: %d %s", code, b)
	}
	// A controller named where it is not is the caller's mistake: said with
	// where the controller is.
	code, b = e.do(http.MethodPost, "/v1/models", e.token(alice, time.Minute, ""),
		map[string]string{"name": "misplaced", "controller": "light", "region": "elsewhere"})
	if err := json.Unmarshal(b, &ae); err != nil || code != http.StatusBadRequest ||
		ae.Message != "bad request: controller light is in localhost/light, not in region elsewhere" {
		t.Errorf("a controller outside the region asked for: %d %s", code, b)
	}
	// A model the controller refuses (here its config) is the caller's
	// mistake: said as the controller says it, and not tried elsewhere.
	code, b = e.do(http.MethodPost, "/v1/models", e.token(alice, time.Minute, ""),
		map[string]any{"name": "badly-configured", "config": map[string]any{"update-status-hook-interval": "often"}})
	if code != http.StatusUnprocessableEntity || !strings.Contains(string(b), "update-status-hook-interval") {
		t.Errorf("a model config the controller refuses: %d %s", code, b)
	}
	for _, other := range []testSpoke{heavy, idle} {
		if ms, err := other.Admin.Models(ctx); err != nil || len(ms) != 0 {
			t.Errorf("a controller tried after the refusal: %+v %v", ms, err)
		}
	}
}

func newUUID() string { return uuid.NewString() }

// TestRacingAddModels: add-models of one name racing through the hub
// leave one model, and every loser is told by the hub that the name is
// taken or being added, before any controller is asked, in the hub's
// words rather than the controller's ("already exists for ...").
func TestRacingAddModels(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	alice := e.user("alice", "acme")
	spokes := []testSpoke{startNamedSpoke(t, e, "one", "", true), startNamedSpoke(t, e, "two", "", true)}
	e.settle()
	tok := e.token(alice, time.Minute, "")
	const racers = 6
	for _, name := range []string{"twin-a", "twin-b", "twin-c"} {
		type answer struct {
			code int
			body string
		}
		answers := make(chan answer, racers)
		start := make(chan struct{})
		for range racers {
			go func() {
				<-start
				code, b := e.do(http.MethodPost, "/v1/models", tok, map[string]string{"name": name})
				answers <- answer{code, string(b)}
			}()
		}
		close(start)
		created := 0
		for range racers {
			a := <-answers
			switch {
			case a.code == http.StatusCreated:
				created++
			case a.code != http.StatusConflict || (!strings.Contains(a.body, `"model \"`+name+`\" already exists in organization acme"`) &&
				!strings.Contains(a.body, `"model \"`+name+`\" is being added in organization acme by another request (if none is running`)):
				t.Errorf("%s: a losing add-model answered %d %s", name, a.code, a.body)
			}
		}
		alive := 0
		for _, sp := range spokes {
			ms, err := sp.Admin.Models(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range ms {
				if m.Name == name && m.Life == api.Alive {
					alive++
				}
			}
		}
		if created != 1 || alive != 1 {
			t.Errorf("%s: %d add-models succeeded and %d models are alive on the controllers; want 1 and 1", name, created, alive)
		}
	}
	// A claim left by an add-model that never ended (its hub crashed) says
	// so, until its lease (30 s, not renewed) runs out.
	if ok, err := e.st.Models.ClaimName(ctx, "acme", "stuck", 2*time.Second); err != nil || !ok {
		t.Fatalf("claim: %v %v", ok, err)
	}
	code, b := e.do(http.MethodPost, "/v1/models", tok, map[string]string{"name": "stuck"})
	if code != http.StatusConflict || !strings.Contains(string(b), "one was interrupted: the name is free again within 30s") {
		t.Errorf("add-model of a name an interrupted add-model claimed: %d %s", code, b)
	}
	testkit.EventuallyWithin(t, 10*time.Second, func() (bool, error) {
		code, b := e.do(http.MethodPost, "/v1/models", tok, map[string]string{"name": "stuck"})
		if code != http.StatusCreated {
			return false, fmt.Errorf("%d %s", code, b)
		}
		return true, nil
	}, "add-model once the interrupted one's claim ran out")
}

// TestClaimsLastAsLongAsTheAddModel: an add-model's claims are leased
// briefly (so a crashed hub's free the name soon) and renewed while it
// runs: another add-model of the name is refused as being added however
// long the controller takes to create the model.
func TestClaimsLastAsLongAsTheAddModel(t *testing.T) {
	e := newEnv(t, func(c *hub.Config) {
		hub.SetClaimLease(c, 2*time.Second) // renewed every 667 ms: slack for a loaded machine
	})
	alice := e.user("alice", "acme")
	id := uuid.NewString()
	im := newImpostor(t, id)
	arrived, release := make(chan struct{}), make(chan struct{})
	var calls atomic.Int32
	im.handle("POST /v1/models", func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 { // the first add-model takes long; any other is answered at once
			close(arrived)
			<-release
		}
		json.NewEncoder(w).Encode(api.Model{UUID: uuid.NewString(), Name: "held", Life: api.Alive})
	})
	if _, err := e.hub.RegisterController(t.Context(), hub.AddControllerRequest{Name: "slow", URL: im.srv.URL,
		CACert: im.caPEM(), Region: "slow"}, true); err != nil {
		t.Fatal(err)
	}
	e.settle()
	tok := e.token(alice, time.Minute, "")
	first := make(chan int, 1)
	go func() {
		code, _ := e.do(http.MethodPost, "/v1/models", tok, map[string]string{"name": "held"})
		first <- code
	}()
	<-arrived
	before := e.hub.ClaimRenewals()
	testkit.EventuallyWithin(t, 10*time.Second, func() (bool, error) {
		return e.hub.ClaimRenewals() >= before+6, nil // each claim renewed 3 times: past the lease
	}, "the claims renewed")
	code, b := e.do(http.MethodPost, "/v1/models", tok, map[string]string{"name": "held"})
	close(release)
	if code != http.StatusConflict || !strings.Contains(string(b), "is being added in organization acme by another request") {
		t.Fatalf("a second add-model while the first runs past the lease: %d %s", code, b)
	}
	if code := <-first; code != http.StatusCreated {
		t.Fatalf("the first add-model: %d", code)
	}
}

// TestDeprecatedControllersTakeNoNewModels: a controller its administrators
// deprecated (as jimmctl set-controller-deprecated does) is passed over by
// placement, and an add-model naming it is refused saying why and how to
// undo it, while its models go on; undeprecated, it takes models again.
// Only its administrators may deprecate it, and it is audited.
func TestDeprecatedControllersTakeNoNewModels(t *testing.T) {
	e := newEnv(t)
	alice := e.user("alice", "acme")
	old, fresh := startNamedSpoke(t, e, "old", "", true), startNamedSpoke(t, e, "fresh", "", true)
	root := e.hubAdmin()
	tok := e.token(alice, time.Minute, "")
	kept := e.addModel(tok, "kept", "")
	var m store.Model
	var err error
	if m, err = e.st.Models.ByUUID(t.Context(), kept); err != nil || m.ControllerUUID != old.UUID && m.ControllerUUID != fresh.UUID {
		t.Fatalf("first model: %+v %v", m, err)
	}
	draining, other := old, fresh
	if m.ControllerUUID == fresh.UUID {
		draining, other = fresh, old
	}
	name := map[string]string{old.UUID: "old", fresh.UUID: "fresh"}[draining.UUID]
	set := func(who string, deprecated bool, want int) {
		t.Helper()
		e.want(t, fmt.Sprintf("set-controller-deprecated %s %v", name, deprecated), want, who, http.MethodPatch,
			"/v1/controllers/"+name, map[string]bool{"deprecated": deprecated})
	}
	set(tok, true, http.StatusForbidden) // alice may add models there, not administer it
	set(root, true, http.StatusOK)
	var shown store.Controller
	if err := json.Unmarshal(e.want(t, "show-controller", http.StatusOK, root, http.MethodGet, "/v1/controllers/"+name, nil), &shown); err != nil || !shown.Deprecated {
		t.Errorf("the deprecated controller as shown: %+v %v", shown, err)
	}
	for i := range 3 {
		uuid := e.addModel(tok, fmt.Sprintf("new-%d", i), "")
		if m, err := e.st.Models.ByUUID(t.Context(), uuid); err != nil || m.ControllerUUID != other.UUID {
			t.Errorf("model %d placed on %s, want %s: %v", i, m.ControllerUUID, other.UUID, err)
		}
	}
	b := e.want(t, "add-model naming the deprecated controller", http.StatusConflict, tok, http.MethodPost, "/v1/models",
		map[string]string{"name": "refused", "controller": name})
	if !strings.Contains(string(b), "controller "+name+" takes no new models: deprecated by its administrators") ||
		!strings.Contains(string(b), "set-controller-deprecated NAME --false") {
		t.Errorf("the refusal: %s", b)
	}
	e.want(t, "status of a model on the deprecated controller", http.StatusOK, tok, http.MethodGet, "/v1/models/"+kept+"/status", nil)

	set(root, false, http.StatusOK)
	e.addModel(tok, "again", name) // the region is the controller's name in these spokes
	entries, _, err := e.st.Audit.Query(t.Context(), store.AuditQuery{All: true, Operation: "set-controller-deprecated", Limit: 10})
	if err != nil || len(entries) != 3 || entries[0].Details["target"] != name || entries[2].Result != store.ResultDenied {
		t.Errorf("audit: %+v %v", entries, err)
	}
}
