package hub_test

import (
	"errors"
	"net"
	"net/http"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/droverhq/drover/authz"
	"github.com/droverhq/drover/hub"
	"github.com/droverhq/drover/hub/devidp"
	"github.com/droverhq/drover/tests/testkit"
)

// TestLogoutReachesOtherReplicasPrecisely (issue 26, item 11): a logout
// through one replica ends, on another, the session's token and the watch
// opened with it there, at once; and nothing else: another caller's
// verified token, remembered route and watch on that replica stay, and the
// replica drops none of its caches whole. The replicas' clock stands still
// while it runs, so that only what the logout drops leaves their caches.
func TestLogoutReachesOtherReplicasPrecisely(t *testing.T) {
	var frozen atomic.Pointer[time.Time]
	f := newProxyFixture(t, func(c *hub.Config) {
		c.Now = func() time.Time {
			if at := frozen.Load(); at != nil {
				return *at
			}
			return time.Now()
		}
	})
	other := *f
	other.env = f.replica()
	b := &other

	person := f.deviceLogin(devidp.DemoEmail, devidp.DemoPassword) // A
	serviceLogin := func() string {
		t.Helper()
		code, sa := f.form("/v1/auth/token", url.Values{"grant_type": {"client_credentials"}, "client_id": {saAcme.ID}, "client_secret": {saAcme.Secret}})
		if code != http.StatusOK {
			t.Fatalf("service account login: %d %+v", code, sa)
		}
		return sa.AccessToken
	}
	robot := serviceLogin() // B, another identity
	f.grant(authz.UserObject(f.whoami(person.AccessToken).ID), authz.Reader, authz.ModelObject(f.model))
	f.grant(authz.UserObject(f.whoami(robot).ID), authz.Reader, authz.ModelObject(f.model))
	f.settle()
	now := time.Now()
	frozen.Store(&now)

	whoami := func(e *proxyFixture, tok string) int {
		code, _ := e.do(http.MethodGet, "/v1/whoami", tok, nil)
		return code
	}
	refused := func(tok, what string) {
		t.Helper()
		testkit.EventuallyWithin(t, 10*time.Second, func() (bool, error) {
			return whoami(b, tok) == http.StatusUnauthorized, nil
		}, "%s refused on the other replica", what)
	}
	// Every notification announced before this one has been acted on
	// once the other replica refuses a token it had verified: the
	// deliveries of the grants above cannot be counted below.
	barrier := serviceLogin()
	if code := whoami(b, barrier); code != http.StatusOK {
		t.Fatalf("a session of one replica on the other: %d", code)
	}
	f.want(t, "log out", http.StatusNoContent, barrier, http.MethodPost, "/v1/auth/logout", nil)
	refused(barrier, "a logged-out token")

	mine, theirs := b.openWatch(t, t.Context(), person.AccessToken), b.openWatch(t, t.Context(), robot)
	status := "/v1/models/" + f.model + "/status"
	for range 2 {
		b.want(t, "B's read through the other replica", http.StatusOK, robot, http.MethodGet, status, nil)
	}
	if !b.hub.RemembersRead(robot, f.model) {
		t.Fatal("the other replica does not remember B's read")
	}
	if code := whoami(b, person.AccessToken); code != http.StatusOK {
		t.Fatalf("A on the other replica: %d", code)
	}
	drops, ended := b.hub.AuthzCacheDrops()
	principals := b.hub.CachedPrincipals()

	f.want(t, "A logs out", http.StatusNoContent, person.AccessToken, http.MethodPost, "/v1/auth/logout",
		map[string]string{"refresh_token": person.RefreshToken})
	refused(person.AccessToken, "A's token")
	if !watchEnds(mine, 10*time.Second) {
		t.Error("A's watch through the other replica went on 10 s after A logged out")
	}
	if watchEnds(theirs, time.Second) {
		t.Error("B's watch through the other replica ended with A's logout")
	}
	if !b.hub.RemembersRead(robot, f.model) {
		t.Error("A's logout dropped B's remembered route on the other replica")
	}
	if got := b.hub.CachedPrincipals(); got != principals-1 {
		t.Errorf("the other replica holds %d verified tokens after A's logout, want %d: all but A's", got, principals-1)
	}
	if d, e := b.hub.AuthzCacheDrops(); d != drops || e != ended+1 {
		t.Errorf("A's logout: the other replica dropped every cache %d times and ended %d sessions, want 0 and 1", d-drops, e-ended)
	}
}

// watchEnds reads conn until it ends, and reports whether it did within
// within.
func watchEnds(conn *websocket.Conn, within time.Duration) bool {
	_ = conn.SetReadDeadline(time.Now().Add(within))
	for {
		if _, _, err := conn.ReadMessage(); err != nil {
			var ne net.Error
			return !errors.As(err, &ne) || !ne.Timeout()
		}
	}
}
