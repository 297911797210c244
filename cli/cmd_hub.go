package cli

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
	"os"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/droverhq/drover/api"
)

// hubSession is a hub token answer (RFC 6749 names).
type hubSession struct {
	AccessToken      string `json:"access_token"`
	RefreshToken     string `json:"refresh_token"`
	ExpiresIn        int    `json:"expires_in"`
	Error            string `json:"error"`
	ErrorDescription string `json:"error_description"`
}

// loginError says why a login call to the hub at base failed and what to
// check: the CA, the address, that it is a hub at all, the credentials.
func loginError(base string, status int, sess hubSession, err error) error {
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

type deviceStart struct {
	DeviceCode              string `json:"device_code"`
	UserCode                string `json:"user_code"`
	VerificationURI         string `json:"verification_uri"`
	VerificationURIComplete string `json:"verification_uri_complete"`
	Interval                int    `json:"interval"`
	// A refusal (RFC 6749's error shape).
	Error            string `json:"error"`
	ErrorDescription string `json:"error_description"`
}

// hubHTTP is a client pinned to the hub's CA for the login routes, which
// sit outside the API client's authenticated calls.
func hubHTTP(caPEM []byte) (*http.Client, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, errors.New("no certificate in the hub CA")
	}
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}, nil
}

func hubPost(ctx context.Context, hc *http.Client, u, contentType string, body []byte, out any) (int, error) {
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
func refreshHubSession(ctx context.Context, name string, d *ControllerDetails, acct *Account) (string, error) {
	if acct.store == nil {
		return renewHubSession(ctx, d, acct)
	}
	var tok string
	err := acct.store.Update(func(s *State) error {
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
func renewHubSession(ctx context.Context, d *ControllerDetails, acct *Account) (string, error) {
	hc, err := hubHTTP([]byte(d.CACert))
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
	var s hubSession
	status, err := hubPost(ctx, hc, "https://"+d.APIAddresses[0]+"/v1/auth/token", "application/x-www-form-urlencoded", []byte(form.Encode()), &s)
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

func (a *App) loginCmd() *cobra.Command {
	var caFile, name, clientID, clientSecret string
	cmd := &cobra.Command{
		Use:   "login [HUB]",
		Short: "Log in to a hub (device flow, or a service account's client credentials)",
		Long: `Logs in to a hub and makes it the current controller. Without --client-id the
hub starts a device login: open the URL printed, sign in, and the command
finishes by itself. The hub session is renewed transparently when it
expires, once for all the drover processes sharing the client store (a
'status --watch' and the commands run beside it). HUB is
https://HOST:PORT; --ca names the hub's CA certificate.
A hub logged in to before needs neither: 'drover login' alone logs in to
the current hub again, and HUB alone reuses the CA and name the client
store has for it; a service account logged in to it is logged in again
with the credentials the store keeps (until 'drover logout' forgets
them). Logging in as someone else forgets the models and current model
of the identity before.

Scripts and CI may give a service account's credentials in the environment
instead of flags (which other users of the machine can read in its process
list): DROVER_CLIENT_ID and DROVER_CLIENT_SECRET.`,
		Example: "  drover login https://127.0.0.1:17080 --ca ~/.local/share/drover/dev/hub/hub-ca.crt\n" +
			"  drover login https://hub.example.com --ca hub-ca.crt --client-id ci --client-secret S\n" +
			"  DROVER_CLIENT_ID=ci DROVER_CLIENT_SECRET=S drover login https://hub.example.com --ca hub-ca.crt\n" +
			"  drover login",
		Args: rangeArgs(0, 1, "at most the hub's URL"),
		RunE: func(cmd *cobra.Command, args []string) error {
			hub := ""
			if len(args) == 1 {
				hub = args[0]
			}
			if clientID == "" {
				clientID = a.Getenv("DROVER_CLIENT_ID")
			}
			if clientSecret == "" {
				clientSecret = a.Getenv("DROVER_CLIENT_SECRET")
			}
			return a.login(cmd.Context(), hub, caFile, name, cmd.Flags().Changed("name"), clientID, clientSecret)
		},
	}
	cmd.Flags().StringVar(&caFile, "ca", "", "the hub's CA certificate (PEM file)")
	cmd.Flags().StringVar(&name, "name", "hub", "name of the hub in the client store")
	cmd.Flags().StringVar(&clientID, "client-id", "", "service account client id (default $DROVER_CLIENT_ID)")
	cmd.Flags().StringVar(&clientSecret, "client-secret", "", "service account client secret (default $DROVER_CLIENT_SECRET)")
	return cmd
}

func (a *App) login(ctx context.Context, hubURL, caFile, name string, named bool, clientID, clientSecret string) error {
	s, err := a.store.Load()
	if err != nil {
		return err
	}
	if hubURL == "" { // the current hub, again
		d := s.Controllers[s.CurrentController]
		if d == nil || !d.Hub || len(d.APIAddresses) == 0 {
			return usageError{errors.New("no current hub to log in to again: give its URL, as in 'drover login https://HOST:PORT --ca FILE'")}
		}
		hubURL = "https://" + d.APIAddresses[0]
		if !named {
			name = s.CurrentController
		}
	}
	u, err := url.Parse(hubURL)
	if err != nil || u.Host == "" {
		if u, err = url.Parse("https://" + hubURL); err != nil || u.Host == "" {
			return usageError{fmt.Errorf("hub %q: want https://HOST:PORT", hubURL)}
		}
	}
	var ca []byte
	if caFile != "" {
		if ca, err = os.ReadFile(caFile); err != nil {
			return err
		}
	} else { // a hub this client knows: its CA, and its name unless given
		for _, known := range s.ControllerNames() {
			if d := s.Controllers[known]; d.Hub && slices.Contains(d.APIAddresses, u.Host) {
				ca = []byte(d.CACert)
				if !named {
					name = known
				}
				break
			}
		}
		if ca == nil {
			return usageError{errors.New("--ca is required for a hub this client has not logged in to (the hub's CA certificate)")}
		}
	}
	hc, err := hubHTTP(ca)
	if err != nil {
		return err
	}
	if prev := s.Accounts[name]; clientID == "" && prev != nil && prev.ClientID != "" && prev.ClientSecret != "" &&
		s.Controllers[name] != nil && slices.Contains(s.Controllers[name].APIAddresses, u.Host) {
		// The same hub again, as the service account logged in to it (Juju
		// logs the current user in again); 'drover logout' forgets it.
		clientID, clientSecret = prev.ClientID, prev.ClientSecret
	}
	base := "https://" + u.Host
	acct := &Account{store: a.store}
	var sess hubSession
	if clientID != "" {
		form := url.Values{"grant_type": {"client_credentials"}, "client_id": {clientID}, "client_secret": {clientSecret}}
		status, err := hubPost(ctx, hc, base+"/v1/auth/token", "application/x-www-form-urlencoded", []byte(form.Encode()), &sess)
		if err != nil || status != http.StatusOK {
			return loginError(base, status, sess, err)
		}
		acct.ClientID, acct.ClientSecret = clientID, clientSecret
	} else {
		if sess, err = a.deviceLogin(ctx, hc, base); err != nil {
			return err
		}
	}
	acct.Token, acct.RefreshToken = sess.AccessToken, sess.RefreshToken
	d := &ControllerDetails{APIAddresses: []string{u.Host}, CACert: string(ca), Hub: true}
	c, err := newConn(name, d, acct)
	if err != nil {
		return err
	}
	defer c.client.Close()
	who, err := c.client.WhoAmI(ctx)
	if err != nil {
		return err
	}
	acct.User, acct.Access = who.User, who.Access
	if err := a.store.Update(func(s *State) error {
		if prev := s.Accounts[name]; prev == nil || prev.User != acct.User {
			delete(s.Models, name) // another identity's models, and its current one
		}
		s.Controllers[name] = d
		s.Accounts[name] = acct
		s.CurrentController = name
		return nil
	}); err != nil {
		return err
	}
	fmt.Fprintf(a.Stdout, "Logged in to %s as %s.\n", name, who.User)
	return nil
}

func (a *App) deviceLogin(ctx context.Context, hc *http.Client, base string) (hubSession, error) {
	var ds deviceStart
	status, err := hubPost(ctx, hc, base+"/v1/auth/device", "application/json", []byte("{}"), &ds)
	if err != nil || status == http.StatusNotFound {
		return hubSession{}, loginError(base, status, hubSession{}, err)
	}
	if ds.Error != "" {
		return hubSession{}, loginError(base, status, hubSession{Error: ds.Error, ErrorDescription: ds.ErrorDescription}, nil)
	}
	if status != http.StatusOK || ds.DeviceCode == "" {
		return hubSession{}, fmt.Errorf("the hub could not start a device login (HTTP %d)", status)
	}
	verify := ds.VerificationURIComplete
	if verify == "" {
		verify = ds.VerificationURI
	}
	fmt.Fprintf(a.Stdout, "Open %s\nand enter the code %s to log in.\n", verify, ds.UserCode)
	interval := time.Duration(max(ds.Interval, 1)) * time.Second
	body, _ := json.Marshal(map[string]string{"device_code": ds.DeviceCode})
	said := false // that the hub is unavailable
	for {
		select {
		case <-ctx.Done():
			return hubSession{}, ctx.Err()
		case <-time.After(interval):
		}
		var s hubSession
		status, err := hubPost(ctx, hc, base+"/v1/auth/device/token", "application/json", body, &s)
		if err != nil {
			return hubSession{}, err
		}
		switch {
		case status == http.StatusOK && s.AccessToken != "":
			return s, nil
		case s.Error == "authorization_pending":
		case s.Error == "temporarily_unavailable":
			// The hub could not ask its issuer or database this time: the
			// code may well be approved already, so keep asking.
			if !said {
				fmt.Fprintf(a.Stderr, "Still waiting: %s\n", cmp.Or(s.ErrorDescription, "the hub is unavailable"))
				said = true
			}
		case s.Error == "slow_down":
			interval += 5 * time.Second
		case s.Error == "expired_token":
			return hubSession{}, errors.New("the login code expired before it was approved; run 'drover login' again")
		case s.Error == "access_denied":
			return hubSession{}, fmt.Errorf("login refused: %s", cmp.Or(s.ErrorDescription, "denied at the identity provider"))
		default:
			return hubSession{}, fmt.Errorf("device login failed: %s", cmp.Or(s.ErrorDescription, s.Error))
		}
	}
}

func (a *App) logoutCmd() *cobra.Command {
	var ctl controllerOpt
	cmd := &cobra.Command{
		Use:     "logout",
		Short:   "Log out of a hub (ends the session and forgets the token)",
		Example: "  drover logout\n  drover logout -c hub",
		Args:    exactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if a.loggedOut(ctl.name) {
				return nil
			}
			c, err := a.dial(ctl.name)
			if err != nil {
				return err
			}
			defer c.client.Close()
			// The hub ends the session of the token presented and of the
			// refresh token given: every copy of either stops working. A
			// service account's session has no refresh token.
			if c.account.Token != "" || c.account.RefreshToken != "" {
				body := map[string]string{}
				if c.account.RefreshToken != "" {
					body["refresh_token"] = c.account.RefreshToken
				}
				_ = c.client.Call(cmd.Context(), http.MethodPost, "/v1/auth/logout", nil, body, nil)
			}
			return a.store.Update(func(s *State) error {
				if acct := s.Accounts[c.name]; acct != nil {
					acct.Token, acct.RefreshToken, acct.ClientSecret = "", "", ""
				}
				return nil
			})
		},
	}
	ctl.add(cmd)
	return cmd
}

// loggedOut reports whether ctl (empty: the current controller) is a hub
// this client has logged out of.
func (a *App) loggedOut(ctl string) bool {
	s, err := a.store.Load()
	if err != nil {
		return false
	}
	name, err := a.controllerName(s, ctl)
	d, acct := s.Controllers[name], s.Accounts[name]
	return err == nil && d != nil && d.Hub && acct != nil && acct.Token == ""
}

// hubCall runs one call against a hub's own API and prints the answer.
func (a *App) hubCall(ctx context.Context, ctl, method, path string, q url.Values, in any, show func(any) error) error {
	var out any
	if err := a.hubDo(ctx, ctl, method, path, q, in, &out); err != nil {
		return err
	}
	if show != nil {
		return show(out)
	}
	return nil
}

// hubDo runs one call against a hub's own API and decodes the answer
// into out.
func (a *App) hubDo(ctx context.Context, ctl, method, path string, q url.Values, in, out any) error {
	c, err := a.dial(ctl)
	if err != nil {
		return err
	}
	defer c.client.Close()
	if !c.details.Hub {
		return fmt.Errorf("controller %q is not a hub: log in to one with 'drover login HUB'", c.name)
	}
	return c.client.Call(ctx, method, path, q, in, out)
}

func splitLevelTarget(target string) (string, string) {
	if strings.Count(target, "-") == 4 && len(target) == 36 {
		return "model", target
	}
	return "controller", target
}
