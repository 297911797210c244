package hub_test

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/droverhq/drover/hub/devidp"
	"github.com/droverhq/drover/tests/testkit"
)

// TestLogoutEndsTheSessionsTokens: logging out ends the session, and the
// access tokens minted for it with it, on every replica at once: a copy of
// the token (a stolen one, another terminal's) no longer works for the
// rest of its 15 minutes. The same for a service account, whose session
// has no refresh token, logging out with its access token alone. Other
// sessions of the same person go on.
func TestLogoutEndsTheSessionsTokens(t *testing.T) {
	a := newEnv(t)
	b := a.replica()
	works := func(e *env, tok string, want int, what string) {
		t.Helper()
		// Well inside the 2 s a replica reuses a verified session.
		testkit.EventuallyWithin(t, time.Second, func() (bool, error) {
			code, _ := e.do(http.MethodGet, "/v1/whoami", tok, nil)
			return code == want, nil
		}, "%s: %d", what, want)
	}

	person := a.deviceLogin(devidp.DemoEmail, devidp.DemoPassword)
	other := a.deviceLogin(devidp.DemoEmail, devidp.DemoPassword)
	works(b, person.AccessToken, http.StatusOK, "the session's token on the other replica") // verified and remembered there
	a.want(t, "log out", http.StatusNoContent, person.AccessToken, http.MethodPost, "/v1/auth/logout",
		map[string]string{"refresh_token": person.RefreshToken})
	a.want(t, "the ended session's token where it ended", http.StatusUnauthorized, person.AccessToken, http.MethodGet, "/v1/whoami", nil)
	works(b, person.AccessToken, http.StatusUnauthorized, "the ended session's token on the other replica")
	if code, r := a.form("/v1/auth/token", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {person.RefreshToken}}); code != http.StatusBadRequest {
		t.Errorf("the ended session's refresh token: %d %+v", code, r)
	}
	works(b, other.AccessToken, http.StatusOK, "another session of the same person")

	code, sa := a.form("/v1/auth/token", url.Values{"grant_type": {"client_credentials"}, "client_id": {saAcme.ID}, "client_secret": {saAcme.Secret}})
	if code != http.StatusOK || sa.RefreshToken != "" {
		t.Fatalf("service account login: %d %+v", code, sa)
	}
	works(b, sa.AccessToken, http.StatusOK, "the service account's token on the other replica")
	a.want(t, "the service account logs out", http.StatusNoContent, sa.AccessToken, http.MethodPost, "/v1/auth/logout", nil)
	works(b, sa.AccessToken, http.StatusUnauthorized, "the service account's token after its logout")
}
