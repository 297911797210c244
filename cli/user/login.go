package user

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/droverhq/drover/cli/internal/clientstore"
	"github.com/droverhq/drover/cli/internal/modelcmd"
)

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

// LoginCmd is 'drover login'.
func (a *Commands) LoginCmd() *cobra.Command {
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
		Args: modelcmd.RangeArgs(0, 1, "at most the hub's URL"),
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

func (a *Commands) login(ctx context.Context, hubURL, caFile, name string, named bool, clientID, clientSecret string) error {
	s, err := a.Store.Load()
	if err != nil {
		return err
	}
	host, ca, name, err := whichHub(s, hubURL, caFile, name, named)
	if err != nil {
		return err
	}
	hc, err := modelcmd.HubHTTP(ca)
	if err != nil {
		return err
	}
	if prev := s.Accounts[name]; clientID == "" && prev != nil && prev.ClientID != "" && prev.ClientSecret != "" &&
		s.Controllers[name] != nil && slices.Contains(s.Controllers[name].APIAddresses, host) {
		// The same hub again, as the service account logged in to it (Juju
		// logs the current user in again); 'drover logout' forgets it.
		clientID, clientSecret = prev.ClientID, prev.ClientSecret
	}
	acct, err := a.hubSession(ctx, hc, "https://"+host, clientID, clientSecret)
	if err != nil {
		return err
	}
	d := &clientstore.ControllerDetails{APIAddresses: []string{host}, CACert: string(ca), Hub: true}
	return a.saveLogin(ctx, name, d, acct)
}

// whichHub is the hub to log in to: its host, its CA and the name the
// client calls it. Without hubURL it is the current hub, again; without
// caFile, a hub this client knows (whose name it keeps unless named).
func whichHub(s *clientstore.State, hubURL, caFile, name string, named bool) (host string, ca []byte, _ string, err error) {
	if hubURL == "" { // the current hub, again
		d := s.Controllers[s.CurrentController]
		if d == nil || !d.Hub || len(d.APIAddresses) == 0 {
			return "", nil, "", modelcmd.UsageError{Err: errors.New("no current hub to log in to again: give its URL, as in 'drover login https://HOST:PORT --ca FILE'")}
		}
		hubURL = "https://" + d.APIAddresses[0]
		if !named {
			name = s.CurrentController
		}
	}
	u, err := url.Parse(hubURL)
	if err != nil || u.Host == "" {
		if u, err = url.Parse("https://" + hubURL); err != nil || u.Host == "" {
			return "", nil, "", modelcmd.UsageError{Err: fmt.Errorf("hub %q: want https://HOST:PORT", hubURL)}
		}
	}
	if caFile != "" {
		if ca, err = os.ReadFile(caFile); err != nil {
			return "", nil, "", err
		}
		return u.Host, ca, name, nil
	}
	// a hub this client knows: its CA, and its name unless given
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
		return "", nil, "", modelcmd.UsageError{Err: errors.New("--ca is required for a hub this client has not logged in to (the hub's CA certificate)")}
	}
	return u.Host, ca, name, nil
}

// hubSession logs in to the hub at base: as the service account clientID
// when given, else by the device flow. The account has the session, and
// not yet its user.
func (a *Commands) hubSession(ctx context.Context, hc *http.Client, base, clientID, clientSecret string) (*clientstore.Account, error) {
	acct := &clientstore.Account{Store: a.Store}
	var sess modelcmd.HubSession
	if clientID != "" {
		form := url.Values{"grant_type": {"client_credentials"}, "client_id": {clientID}, "client_secret": {clientSecret}}
		status, err := modelcmd.HubPost(ctx, hc, base+"/v1/auth/token", "application/x-www-form-urlencoded", []byte(form.Encode()), &sess)
		if err != nil || status != http.StatusOK {
			return nil, modelcmd.LoginError(base, status, sess, err)
		}
		acct.ClientID, acct.ClientSecret = clientID, clientSecret
	} else {
		var err error
		if sess, err = a.deviceLogin(ctx, hc, base); err != nil {
			return nil, err
		}
	}
	acct.Token, acct.RefreshToken = sess.AccessToken, sess.RefreshToken
	return acct, nil
}

// saveLogin asks the hub d who acct is, and saves both as controller name,
// the current one (forgetting the models another identity knew there).
func (a *Commands) saveLogin(ctx context.Context, name string, d *clientstore.ControllerDetails, acct *clientstore.Account) error {
	c, err := modelcmd.NewConn(name, d, acct)
	if err != nil {
		return err
	}
	defer c.Client.Close()
	who, err := c.Client.WhoAmI(ctx)
	if err != nil {
		return err
	}
	acct.User, acct.Access = who.User, who.Access
	if err := a.Store.Update(func(s *clientstore.State) error {
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

func (a *Commands) deviceLogin(ctx context.Context, hc *http.Client, base string) (modelcmd.HubSession, error) {
	var ds deviceStart
	status, err := modelcmd.HubPost(ctx, hc, base+"/v1/auth/device", "application/json", []byte("{}"), &ds)
	if err != nil || status == http.StatusNotFound {
		return modelcmd.HubSession{}, modelcmd.LoginError(base, status, modelcmd.HubSession{}, err)
	}
	if ds.Error != "" {
		return modelcmd.HubSession{}, modelcmd.LoginError(base, status, modelcmd.HubSession{Error: ds.Error, ErrorDescription: ds.ErrorDescription}, nil)
	}
	if status != http.StatusOK || ds.DeviceCode == "" {
		return modelcmd.HubSession{}, fmt.Errorf("the hub could not start a device login (HTTP %d)", status)
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
			return modelcmd.HubSession{}, ctx.Err()
		case <-time.After(interval):
		}
		var s modelcmd.HubSession
		status, err := modelcmd.HubPost(ctx, hc, base+"/v1/auth/device/token", "application/json", body, &s)
		if err != nil {
			return modelcmd.HubSession{}, err
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
			return modelcmd.HubSession{}, errors.New("the login code expired before it was approved; run 'drover login' again")
		case s.Error == "access_denied":
			return modelcmd.HubSession{}, fmt.Errorf("login refused: %s", cmp.Or(s.ErrorDescription, "denied at the identity provider"))
		default:
			return modelcmd.HubSession{}, fmt.Errorf("device login failed: %s", cmp.Or(s.ErrorDescription, s.Error))
		}
	}
}

// LogoutCmd is 'drover logout'.
func (a *Commands) LogoutCmd() *cobra.Command {
	var ctl modelcmd.ControllerOpt
	cmd := &cobra.Command{
		Use:     "logout",
		Short:   "Log out of a hub (ends the session and forgets the token)",
		Example: "  drover logout\n  drover logout -c hub",
		Args:    modelcmd.ExactArgs(0, "no arguments"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if a.LoggedOut(ctl.Name) {
				return nil
			}
			c, err := a.Dial(ctl.Name)
			if err != nil {
				return err
			}
			defer c.Client.Close()
			// The hub ends the session of the token presented and of the
			// refresh token given: every copy of either stops working. A
			// service account's session has no refresh token.
			if c.Account.Token != "" || c.Account.RefreshToken != "" {
				body := map[string]string{}
				if c.Account.RefreshToken != "" {
					body["refresh_token"] = c.Account.RefreshToken
				}
				_ = c.Client.Call(cmd.Context(), http.MethodPost, "/v1/auth/logout", nil, body, nil)
			}
			return a.Store.Update(func(s *clientstore.State) error {
				if acct := s.Accounts[c.Name]; acct != nil {
					acct.Token, acct.RefreshToken, acct.ClientSecret = "", "", ""
				}
				return nil
			})
		},
	}
	ctl.Add(cmd)
	return cmd
}

func splitLevelTarget(target string) (string, string) {
	if strings.Count(target, "-") == 4 && len(target) == 36 {
		return "model", target
	}
	return "controller", target
}
