package hub_test

import (
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/droverhq/drover/authz"
	"github.com/droverhq/drover/hub"
	"github.com/droverhq/drover/hub/internal/store"
)

// TestSilentControllerIsReportedInTime: a controller that takes the hub's
// calls and answers nothing (hung, stopped with SIGSTOP, overloaded) is
// reported as such once the hub has waited long enough for the head of an
// answer, a read as "did not answer" and a change as "may or may not have
// been made", rather than the caller waiting until it gives up (drover
// after 30 s, saying it could not reach the hub). A call that asks the
// controller to wait (a task's ?wait=D) is given D more.
func TestSilentControllerIsReportedInTime(t *testing.T) {
	release := make(chan struct{})
	silent := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("wait") != "" { // answers, slowly
			select {
			case <-time.After(600 * time.Millisecond):
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(`{"id":"1","status":"completed"}`))
			case <-r.Context().Done():
			}
			return
		}
		select { // until the hub gives up and closes the connection, or the test ends
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(silent.Close)
	t.Cleanup(func() { close(release) }) // first: a handler that never read its body sees no close
	e := newEnv(t, func(c *hub.Config) { hub.SetAnswerHeadTimeout(c, 300*time.Millisecond) })
	e.client = &http.Client{Timeout: 30 * time.Second} // unbounded, the test fails here
	ctrl := store.Controller{UUID: uuid.NewString(), Name: "hung", Org: "acme", Region: "r",
		APIAddresses: []string{strings.TrimPrefix(silent.URL, "https://")},
		CACert:       string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: silent.Certificate().Raw}))}
	if err := e.st.Controllers.Upsert(t.Context(), ctrl); err != nil {
		t.Fatal(err)
	}
	alice := e.user("alice", "acme")
	m := store.Model{UUID: uuid.NewString(), Name: "prod", Org: "acme", Owner: alice.ID, ControllerUUID: ctrl.UUID}
	if err := e.st.Models.Insert(t.Context(), m); err != nil {
		t.Fatal(err)
	}
	e.grant(authz.UserObject(alice.ID), authz.Administrator, authz.OrgObject("acme"))
	e.settle()
	tok := e.token(alice, 5*time.Minute, "")

	for _, c := range []struct{ method, path, want string }{
		{http.MethodGet, "/status", "controller hung did not answer within 300ms (it is overloaded or hung; 'drover controllers' shows its health)"},
		{http.MethodPost, "/applications/kv/expose", "controller hung did not answer within 300ms: the change may or may not have been made " +
			"(check 'drover status' before retrying)"},
	} {
		code, b := e.do(c.method, "/v1/models/"+m.UUID+c.path, tok, map[string]any{})
		var ae struct{ Code, Message string }
		if err := json.Unmarshal(b, &ae); err != nil || code != http.StatusGatewayTimeout || ae.Code != "timeout" || ae.Message != c.want {
			t.Errorf("%s %s on a silent controller: %d %s", c.method, c.path, code, b)
		}
	}
	if code, b := e.do(http.MethodGet, "/v1/models/"+m.UUID+"/tasks/1?wait=1s", tok, nil); code != http.StatusOK {
		t.Errorf("a task waited for, answered within its wait: %d %s", code, b)
	}
}
