package hub_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/droverhq/drover/authz"
	"github.com/droverhq/drover/hub/devidp"
)

// TestLogoutEndsTheSessionsWatches (issue 26, finding 12): a watch opened
// through the hub with a session's access token ends when that session
// logs out, well before the token would expire; a watch of another session
// of the same person goes on.
func TestLogoutEndsTheSessionsWatches(t *testing.T) {
	f := newProxyFixture(t)
	person := f.deviceLogin(devidp.DemoEmail, devidp.DemoPassword)
	other := f.deviceLogin(devidp.DemoEmail, devidp.DemoPassword)
	me := f.whoami(person.AccessToken)
	f.grant(authz.UserObject(me.ID), authz.Reader, authz.ModelObject(f.model))
	f.settle()
	watch := func(tok string) *websocket.Conn {
		t.Helper()
		return f.openWatch(t, t.Context(), tok)
	}
	// ended reads until the connection ends or within passes.
	ended := func(conn *websocket.Conn, within time.Duration) bool {
		_ = conn.SetReadDeadline(time.Now().Add(within))
		for {
			if _, _, err := conn.ReadMessage(); err != nil {
				return !strings.Contains(err.Error(), "timeout")
			}
		}
	}
	mine, theirs := watch(person.AccessToken), watch(other.AccessToken)
	f.want(t, "log out", http.StatusNoContent, person.AccessToken, http.MethodPost, "/v1/auth/logout",
		map[string]string{"refresh_token": person.RefreshToken})
	if !ended(mine, 30*time.Second) {
		t.Error("the watch went on 30 s after its session logged out")
	}
	if ended(theirs, 2*time.Second) {
		t.Error("another session's watch ended with the logout")
	}
}
