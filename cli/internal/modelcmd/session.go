package modelcmd

import (
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/cli/internal/clientstore"
)

// HubSession is a hub token answer (RFC 6749 names).
type HubSession struct {
	AccessToken      string `json:"access_token"`
	RefreshToken     string `json:"refresh_token"`
	ExpiresIn        int    `json:"expires_in"`
	Error            string `json:"error"`
	ErrorDescription string `json:"error_description"`
}

// LoginError says why a login call to the hub at base failed and what to
// Check: the CA, the address, that it is a hub at all, the credentials.
func LoginError(base string, status int, sess HubSession, err error) error {
	var uae x509.UnknownAuthorityError
	var cie x509.CertificateInvalidError
	var hne x509.HostnameError
	switch {
	case err == nil && status == http.StatusNotFound:
		return fmt.Errorf("%s is not a hub: it has no login route (log in to the hub's URL; a controller behind it is reached through it)", base)
	case err == nil && sess.Error == "temporarily_unavailable":
		// Not a refusal: the hub could not check the credentials.
		return errors.New("login failed: " + cmp.Or(sess.ErrorDescription, "the hub is unavailable; try again shortly"))
	case err == nil:
		msg := "login refused: " + cmp.Or(sess.Error, http.StatusText(status))
		if sess.ErrorDescription != "" {
			msg += ": " + sess.ErrorDescription
		}
		if sess.Error == "invalid_client" {
			msg += " (check --client-id and --client-secret)"
		}
		return errors.New(msg)
	case errors.As(err, &uae), errors.As(err, &cie), errors.As(err, &hne):
		return fmt.Errorf("%w\n(--ca must be the certificate of the CA that signed the hub's; for droverd dev it is STATE_DIR/hub/hub-ca.crt)", err)
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Errorf("%w\n(is a hub running at %s?)", err, base)
	}
	return err
}

// HubHTTP is a client pinned to the hub's CA for the login routes, which
// sit outside the API client's authenticated calls.
func HubHTTP(caPEM []byte) (*http.Client, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, errors.New("no certificate in the hub CA")
	}
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}, nil
}

// HubPost posts body to the hub's u and decodes the JSON answer into
// out, returning the HTTP status.
func HubPost(ctx context.Context, hc *http.Client, u, contentType string, body []byte, out any) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", contentType)
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if len(b) > 0 && out != nil {
		_ = json.Unmarshal(b, out)
	}
	return resp.StatusCode, nil
}

// refreshHubSession renews an expired hub session (refresh token, or the
// service account's credentials) and saves it to the client store.
//
// Several drover processes share the store (a 'status --watch' in one
// terminal, commands in another), and the hub rotates refresh tokens: the
// one a process loaded is spent once another process renewed the session.
// So the renewal runs under the store's lock, and a process whose session
// another renewed meanwhile takes that renewal from the store instead of
// spending its stale refresh token. A session the store no longer holds
// (logged out, or logged in as someone else since) is renewed for this
// process alone, and the store is left as it is.
func refreshHubSession(ctx context.Context, name string, d *clientstore.ControllerDetails, acct *clientstore.Account) (string, error) {
	if acct.Store == nil {
		return renewHubSession(ctx, d, acct)
	}
	var tok string
	err := acct.Store.Update(func(s *clientstore.State) error {
		stored := s.Accounts[name]
		ours := stored != nil && stored.User == acct.User && stored.ClientID == acct.ClientID && stored.Token != ""
		if ours && stored.Token != acct.Token {
			// Renewed by another process since this one loaded it: its
			// token, or, once that has expired too, its refresh token.
			*acct = *stored
			if !tokenExpired(stored.Token, time.Now()) {
				tok = stored.Token
				return nil
			}
		}
		if !ours && acct.ClientID != "" {
			// A service account renews with its secret, which a logout
			// cannot revoke: its processes stop with the store's session.
			return fmt.Errorf("service account %s is no longer logged in to hub %q; run 'drover login' again", acct.ClientID, name)
		}
		var err error
		if tok, err = renewHubSession(ctx, d, acct); err != nil {
			return err
		}
		if ours {
			cp := *acct
			s.Accounts[name] = &cp
		}
		return nil
	})
	return tok, err
}

// tokenExpired reports whether the JWT tok expires within a few seconds of
// now, by its exp claim, unverified (the hub verifies it); one that cannot
// be read counts as expired.
func tokenExpired(tok string, now time.Time) bool {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return true
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return true
	}
	var claims struct {
		Exp int64 `json:"exp"`
	}
	if json.Unmarshal(payload, &claims) != nil || claims.Exp == 0 {
		return true
	}
	return now.Add(10 * time.Second).After(time.Unix(claims.Exp, 0))
}

// renewHubSession asks the hub for a new access token for acct, and keeps
// it (and the rotated refresh token) in acct.
func renewHubSession(ctx context.Context, d *clientstore.ControllerDetails, acct *clientstore.Account) (string, error) {
	hc, err := HubHTTP([]byte(d.CACert))
	if err != nil {
		return "", err
	}
	form := url.Values{}
	switch {
	case acct.RefreshToken != "":
		form.Set("grant_type", "refresh_token")
		form.Set("refresh_token", acct.RefreshToken)
	case acct.ClientID != "":
		form.Set("grant_type", "client_credentials")
		form.Set("client_id", acct.ClientID)
		form.Set("client_secret", acct.ClientSecret)
	default:
		return "", errors.New("the hub session cannot be renewed: run 'drover login' again")
	}
	var s HubSession
	status, err := HubPost(ctx, hc, "https://"+d.APIAddresses[0]+"/v1/auth/token", "application/x-www-form-urlencoded", []byte(form.Encode()), &s)
	if err != nil {
		return "", &api.Error{Code: api.CodeUnavailable, Message: fmt.Sprintf("cannot reach the hub to renew the session: %v", err)}
	}
	switch {
	case status == http.StatusServiceUnavailable || s.Error == "temporarily_unavailable":
		// The session is fine; the hub could not renew it just now.
		return "", &api.Error{Code: api.CodeUnavailable, Message: cmp.Or(s.ErrorDescription, "the hub is unavailable (try again shortly)")}
	case status != http.StatusOK || s.AccessToken == "":
		if s.ErrorDescription == "" {
			return "", &api.Error{Code: api.CodeUnauthorized,
				Message: fmt.Sprintf("the hub session has ended and could not be renewed (%s; run 'drover login' again)", cmp.Or(s.Error, http.StatusText(status)))}
		}
		return "", &api.Error{Code: api.CodeUnauthorized, Message: fmt.Sprintf("the hub refused to renew the session: %s (run 'drover login' again)",
			strings.TrimSuffix(s.ErrorDescription, " (log in again)"))}
	}
	acct.Token = s.AccessToken
	if s.RefreshToken != "" {
		acct.RefreshToken = s.RefreshToken
	}
	return s.AccessToken, nil
}
