package hub_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/droverhq/drover/authz"
	"github.com/droverhq/drover/tests/testkit"
)

// TestProxyFailsOverBetweenControllerAddresses registers a controller
// whose first address has nothing listening (a node that is down): the
// proxy must reach the model through the next address.
func TestProxyFailsOverBetweenControllerAddresses(t *testing.T) {
	e := newEnv(t)
	alice := e.user("alice", "acme")
	startSpoke(t, e)
	c, err := e.st.Controllers.ByName(t.Context(), "east")
	if err != nil {
		t.Fatal(err)
	}
	c.APIAddresses = append([]string{testkit.FreeAddr(t)}, c.APIAddresses...)
	if err := e.st.Controllers.Upsert(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	e.grant(authz.UserObject(alice.ID), authz.Administrator, authz.OrgObject("acme"))
	e.settle()
	tok := e.token(alice, time.Minute, "")
	model := e.addModel(tok, "prod", "east")
	e.settle()
	for range 3 { // the first fails over; the next go straight to the node that answered
		if code, b := e.do(http.MethodGet, "/v1/models/"+model+"/status", tok, nil); code != http.StatusOK {
			t.Fatalf("status through the hub with the first address down: %d %s", code, b)
		}
	}
}
