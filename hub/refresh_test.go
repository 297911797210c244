package hub_test

import (
	"net/http"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/droverhq/drover/hub"
	"github.com/droverhq/drover/hub/devidp"
	"github.com/droverhq/drover/hub/internal/hubtest"
	"github.com/droverhq/drover/hub/internal/store"
)

// TestRefreshTokenReuseEndsTheSession: a refresh token presented again
// after its session was renewed with it means a copy is in other hands
// (the holder's, or a thief's who renewed first): the session ends for
// both, and the attempt is audited. Within a minute of the renewal (a
// retry whose answer was lost, two browser tabs) it is only refused.
// While the hub's database is down a refresh is answered 503, which the
// client retries, not invalid_grant, which sends its user to log in again.
func TestRefreshTokenReuseEndsTheSession(t *testing.T) {
	var skew atomic.Int64
	dsn := hubtest.DSN(t)
	e := newEnvOn(t, dsn, func(c *hub.Config) {
		c.Now = func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	})
	refresh := func(rt string) (int, tokenResp) {
		t.Helper()
		return e.form("/v1/auth/token", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}})
	}
	first := e.deviceLogin(devidp.DemoEmail, devidp.DemoPassword)
	code, second := refresh(first.RefreshToken) // the holder renews
	if code != http.StatusOK {
		t.Fatalf("refresh: %d %+v", code, second)
	}
	// The same token again at once: refused, the session kept.
	if code, r := refresh(first.RefreshToken); code != http.StatusBadRequest || r.Error != "invalid_grant" || r.ErrorDescription != "" {
		t.Fatalf("a renewal's token again within the minute: %d %+v", code, r)
	}
	code, third := refresh(second.RefreshToken)
	if code != http.StatusOK {
		t.Fatalf("the session renewed after a refused retry: %d %+v", code, third)
	}

	// Two minutes on, the token the session was renewed with comes back.
	skew.Store(int64(2 * time.Minute))
	code, r := refresh(second.RefreshToken)
	if code != http.StatusBadRequest || r.Error != "invalid_grant" ||
		r.ErrorDescription != "this refresh token was used before, so a copy of it is in other hands: its session is ended (log in again)" {
		t.Fatalf("a used refresh token presented again: %d %+v", code, r)
	}
	if code, r := refresh(third.RefreshToken); code != http.StatusBadRequest || r.Error != "invalid_grant" {
		t.Errorf("the session's current refresh token after the reuse: %d %+v", code, r)
	}
	// The session's access tokens end with it: the thief's, minted by
	// their renewal, no longer works either.
	e.want(t, "the ended session's access token", http.StatusUnauthorized, third.AccessToken, http.MethodGet, "/v1/whoami", nil)
	entries, _, err := e.st.Audit.Query(t.Context(), store.AuditQuery{All: true, Operation: "refresh-reused", Limit: 10})
	if err != nil || len(entries) != 1 || entries[0].Actor != devidp.DemoEmail || entries[0].Result != store.ResultDenied {
		t.Errorf("the reuse in the audit log: %+v %v", entries, err)
	}

	// The database down: 503 unavailable, and the token still works after.
	fourth := e.deviceLogin(devidp.DemoEmail, devidp.DemoPassword)
	restore := cutDatabase(t, dsn)
	code, r = refresh(fourth.RefreshToken)
	restore()
	if code != http.StatusServiceUnavailable || r.Error != "temporarily_unavailable" {
		t.Errorf("a refresh while the database is down: %d %+v", code, r)
	}
	if code, r := refresh(fourth.RefreshToken); code != http.StatusOK {
		t.Errorf("the refresh token after the outage: %d %+v", code, r)
	}
}
