package hub_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/authz"
	"github.com/droverhq/drover/hub/internal/store"
	"github.com/droverhq/drover/tests/testkit"
)

// TestRemoveController: only a controller's administrators may remove it;
// one still hosting models is refused, naming them, unless forced; forced,
// the hub forgets it and its models (its index, its tuples, its proxy
// route, its event subscription), while the models keep running on it;
// registered again, the controller's models come back into the index.
func TestRemoveController(t *testing.T) {
	e := newEnv(t) // default organization: acme
	root, alice := e.user("root", "acme"), e.user("alice", "acme")
	e.grant(authz.UserObject(root.ID), authz.Administrator, authz.HubObject())
	e.grant(authz.UserObject(alice.ID), authz.Administrator, authz.OrgObject("acme"))
	east := startSpoke(t, e) // shared
	runIndexer(t, e)
	e.settle()
	code, b := e.do("POST", "/v1/models", e.token(alice, time.Minute, ""), map[string]string{"name": "prod", "controller": "east"})
	var prod struct{ UUID string }
	if code != http.StatusCreated || json.Unmarshal(b, &prod) != nil {
		t.Fatalf("add model: %d %s", code, b)
	}
	e.indexed(prod.UUID)
	e.settle() // the model's tuples reach OpenFGA: alice administers it through its organization
	rita := e.user("rita", "acme")
	if code, b := e.do("POST", "/v1/grants", e.token(alice, time.Minute, ""),
		map[string]string{"user": "rita@example.com", "level": "read", "model": prod.UUID}); code != http.StatusNoContent {
		t.Fatalf("grant: %d %s", code, b)
	}

	del := func(who string, force bool) (int, string) {
		t.Helper()
		path := "/v1/controllers/east"
		if force {
			path += "?force=true"
		}
		code, b := e.do("DELETE", path, who, nil)
		return code, string(b)
	}
	if code, b := del(e.token(alice, time.Minute, ""), true); code != http.StatusForbidden || !strings.Contains(b, "superuser access to controller east") {
		t.Errorf("an organization's administrator removed a shared controller: %d %s", code, b)
	}
	rootTok := e.token(root, time.Minute, "")
	if code, b := del(rootTok, false); code != http.StatusConflict ||
		!strings.Contains(b, "controller east still hosts 1 model (alice@example.com/prod): destroy it first, or pass --force to make the hub forget it (it keeps running") {
		t.Errorf("removing a controller that hosts a model: %d %s", code, b)
	}
	if code, b := e.do("DELETE", "/v1/controllers/east?force=maybe", rootTok, nil); code != http.StatusBadRequest {
		t.Errorf("force=maybe: %d %s", code, b)
	}
	code, body := del(rootTok, true)
	var out struct {
		Controller      string   `json:"controller"`
		ForgottenModels []string `json:"forgotten-models"`
	}
	if code != http.StatusOK || json.Unmarshal([]byte(body), &out) != nil || out.Controller != "east" ||
		!slices.Equal(out.ForgottenModels, []string{"alice@example.com/prod"}) {
		t.Fatalf("forced removal: %d %s", code, body)
	}
	for _, path := range []string{"/v1/controllers/east", "/v1/models/" + prod.UUID, "/v1/models/" + prod.UUID + "/status"} {
		testkit.EventuallyWithin(t, 10*time.Second, func() (bool, error) {
			code, _ := e.do("GET", path, rootTok, nil)
			return code == http.StatusNotFound, nil
		}, "GET %s answers 404", path)
	}
	if got := e.listed(root); len(got) != 0 {
		t.Errorf("the hub still lists %q", got)
	}
	if code, b := del(rootTok, true); code != http.StatusNotFound {
		t.Errorf("removing it again: %d %s", code, b)
	}
	// Each attempt is audited, with its target and whether it was forced.
	entries, _, err := e.st.Audit.Query(t.Context(), store.AuditQuery{All: true, Operation: "remove-controller", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	var results []string
	for _, a := range entries {
		results = append(results, fmt.Sprintf("%s %d %v %v", a.Actor, a.Status, a.Details["target"], a.Details["force"]))
		if a.Status == http.StatusOK && a.ControllerUUID != east.UUID {
			t.Errorf("the removal's entry has controller %q, want %s", a.ControllerUUID, east.UUID)
		}
	}
	wantAudit := []string{"root@example.com 404 east <nil>", "root@example.com 200 east true", "root@example.com 400 east <nil>",
		"root@example.com 409 east false", "alice@example.com 403 east true"}
	if !slices.Equal(results, wantAudit) {
		t.Errorf("audit entries, newest first:\n%q\nwant\n%q", results, wantAudit)
	}

	// The log still names the removed controller, and finds its entries
	// by that name.
	var byName struct{ Entries []store.AuditEntry }
	if code, b := e.do("GET", "/v1/audit?controller=east&limit=100", rootTok, nil); code != http.StatusOK || json.Unmarshal(b, &byName) != nil {
		t.Fatalf("audit of the removed controller by name: %d %s", code, b)
	}
	ops := map[string]bool{}
	for _, a := range byName.Entries {
		ops[a.Operation] = true
		if a.Controller != "east" || a.ControllerUUID != east.UUID {
			t.Errorf("an entry of the removed controller names %q (%s)", a.Controller, a.ControllerUUID)
		}
	}
	if !ops["add-model"] || !ops["remove-controller"] {
		t.Errorf("audit of the removed controller by name: %v", ops)
	}

	// The model still runs on the controller.
	if _, err := east.Admin.Model(prod.UUID).Status(t.Context()); err != nil {
		t.Fatalf("the controller lost the model: %v", err)
	}

	// Registered again (it still trusts the hub): its model comes back from
	// its event stream as it was, its owner and grants restored, so the
	// indexer follows it again and its people reach it, not owner-less
	// with its owner and readers locked out.
	reg := east.Registration
	code, b = e.do("POST", "/v1/controllers", rootTok, map[string]string{"name": "east", "url": reg.URL, "ca-cert": reg.CACert,
		"region": reg.Region, "cloud": reg.Cloud})
	if code != http.StatusCreated {
		t.Fatalf("register again: %d %s", code, b)
	}
	if m := e.indexed(prod.UUID); m.Name != "prod" || m.ControllerUUID != east.UUID || m.Owner != alice.ID || m.Org != "acme" {
		t.Errorf("adopted again: %+v", m)
	}
	e.settle()
	for _, who := range []store.Identity{root, alice, rita} {
		testkit.EventuallyWithin(t, 10*time.Second, func() (bool, error) {
			code, _ := e.do("GET", "/v1/models/"+prod.UUID+"/status", e.token(who, time.Minute, ""), nil)
			return code == http.StatusOK, nil
		}, "the model reachable through the hub again by %s", who.Name())
	}
	adopted, _, err := e.st.Audit.Query(t.Context(), store.AuditQuery{All: true, Operation: store.OpModelAdopted, Limit: 10})
	if err != nil || len(adopted) != 1 || adopted[0].Details["restored"] != true {
		t.Errorf("the adoption's audit entry: %+v %v", adopted, err)
	}
}
