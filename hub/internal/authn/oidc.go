package authn

import (
	"github.com/droverhq/drover/hub/internal/reply"

	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// oidcAlgorithms is the allow-list for ID tokens from the issuer.
var oidcAlgorithms = []string{oidc.RS256, oidc.ES256, oidc.EdDSA}

// ErrIdPUnavailable marks a failure to reach the identity provider (no
// connection, a 5xx, its keys not fetched), as opposed to its refusal of
// a login: the hub answers 503, and the caller may try again.
var ErrIdPUnavailable = errors.New("the hub cannot reach its identity provider")

// oidcClient is the hub's view of the identity provider. Its endpoints
// are discovered at start, or, should the issuer not answer then, at the
// first login after it does: a hub restarted during an outage of the
// issuer serves everything that does not log in (sessions it issued,
// their renewal, the API) meanwhile.
type oidcClient struct {
	issuer string
	http   *http.Client
	oauth  oauth2.Config // Endpoint filled in by discovery
	found  atomic.Pointer[oidcEndpoints]

	mu       sync.Mutex // one discovery at a time
	failedAt time.Time  // the last failed discovery, and why
	failed   error
}

// oidcEndpoints is what discovery found.
type oidcEndpoints struct {
	provider       *oidc.Provider
	oauth          oauth2.Config
	deviceEndpoint string
	verifier       *oidc.IDTokenVerifier
}

// rediscoverEvery bounds how often logins make the hub try discovery
// again while the issuer is out of reach.
const rediscoverEvery = 2 * time.Second

// newOIDC makes the hub's client of cfg's issuer and tries discovery once;
// the error says why it failed (the hub still starts).
func newOIDC(ctx context.Context, cfg *Config) (*oidcClient, error) {
	o := &oidcClient{issuer: cfg.OIDCIssuer, http: cfg.OIDCHTTPClient,
		oauth: oauth2.Config{ClientID: cfg.OIDCClientID, ClientSecret: cfg.OIDCClientSecret,
			RedirectURL: cfg.PublicURL + "/auth/callback", Scopes: []string{oidc.ScopeOpenID, "email", "profile", oidc.ScopeOfflineAccess}}}
	_, err := o.endpoints(ctx)
	return o, err
}

// endpoints returns the issuer's endpoints, discovering them if that has
// not succeeded yet (at most once every rediscoverEvery).
func (o *oidcClient) endpoints(ctx context.Context) (*oidcEndpoints, error) {
	if e := o.found.Load(); e != nil {
		return e, nil
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if e := o.found.Load(); e != nil {
		return e, nil
	}
	if o.failed != nil && time.Since(o.failedAt) < rediscoverEvery {
		return nil, o.failed
	}
	e, err := o.discover(ctx)
	if err != nil {
		o.failedAt, o.failed = time.Now(), fmt.Errorf("%w: discovery at %s: %w", ErrIdPUnavailable, o.issuer, err)
		return nil, o.failed
	}
	o.found.Store(e)
	return e, nil
}

func (o *oidcClient) discover(ctx context.Context) (*oidcEndpoints, error) {
	p, err := oidc.NewProvider(o.ctx(ctx), o.issuer)
	if err != nil {
		return nil, err
	}
	var extra struct {
		Device string `json:"device_authorization_endpoint"`
	}
	if err := p.Claims(&extra); err != nil {
		return nil, err
	}
	ep := p.Endpoint()
	ep.DeviceAuthURL = extra.Device
	oc := o.oauth
	oc.Endpoint = ep
	return &oidcEndpoints{provider: p, oauth: oc, deviceEndpoint: extra.Device,
		verifier: p.Verifier(&oidc.Config{ClientID: o.oauth.ClientID, SupportedSigningAlgs: oidcAlgorithms})}, nil
}

func (o *oidcClient) ctx(ctx context.Context) context.Context { return oidc.ClientContext(ctx, o.http) }

// reachFailure wraps err, a failure to get an answer from the issuer, as
// ErrIdPUnavailable.
func reachFailure(err error) error { return fmt.Errorf("%w: %w", ErrIdPUnavailable, err) }

// exchangeFailure classifies a failed token request made through the
// oauth2 package: refused (a 4xx: reply.ErrUnauthenticated) or not answered.
func exchangeFailure(err error) error {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) && re.Response != nil && re.Response.StatusCode < 500 {
		return fmt.Errorf("%w: %w", reply.ErrUnauthenticated, err)
	}
	return reachFailure(err)
}

// idClaims are the ID token claims the hub uses.
type idClaims struct {
	Email         string `json:"email"`
	EmailVerified *bool  `json:"email_verified"`
	Name          string `json:"name"`
	Nonce         string `json:"nonce"`
}

// verify checks an ID token for the hub's client (issuer, audience, expiry,
// algorithm) and returns the token and its claims.
func (o *oidcClient) verify(ctx context.Context, v *oidc.IDTokenVerifier, raw string) (*oidc.IDToken, idClaims, error) {
	tok, err := v.Verify(o.ctx(ctx), raw)
	if err != nil {
		// go-oidc flattens the remote key set's error into text: "fetching
		// keys" is its failure to get the issuer's keys, not the token's
		// (TestIdentityProviderOutage holds this reading to the library).
		if strings.Contains(err.Error(), "fetching keys") {
			return nil, idClaims{}, reachFailure(err)
		}
		return nil, idClaims{}, fmt.Errorf("%w: %w", reply.ErrUnauthenticated, err)
	}
	var c idClaims
	if err := tok.Claims(&c); err != nil {
		return nil, idClaims{}, fmt.Errorf("%w: %w", reply.ErrUnauthenticated, err)
	}
	return tok, c, nil
}

// deviceStart is RFC 8628's device authorization response.
type deviceStart struct {
	DeviceCode              string `json:"device_code"`
	UserCode                string `json:"user_code"`
	VerificationURI         string `json:"verification_uri"`
	VerificationURIComplete string `json:"verification_uri_complete,omitempty"`
	ExpiresIn               int64  `json:"expires_in"`
	Interval                int64  `json:"interval,omitempty"`
}

func (o *oidcClient) startDevice(ctx context.Context) (deviceStart, error) {
	e, err := o.endpoints(ctx)
	if err != nil {
		return deviceStart{}, err
	}
	if e.deviceEndpoint == "" {
		return deviceStart{}, errors.New("the identity provider has no device authorization endpoint")
	}
	form := url.Values{"client_id": {o.oauth.ClientID}, "scope": {strings.Join(o.oauth.Scopes, " ")}}
	var out deviceStart
	if err := o.post(ctx, e.deviceEndpoint, form, &out); err != nil {
		return deviceStart{}, err
	}
	if out.Interval == 0 {
		out.Interval = 5
	}
	return out, nil
}

type tokenResponse struct {
	AccessToken  string `json:"access_token"`
	IDToken      string `json:"id_token"`
	RefreshToken string `json:"refresh_token"`
}

// pollDevice asks the issuer once whether the user approved the device.
func (o *oidcClient) pollDevice(ctx context.Context, deviceCode string) (string, error) {
	e, err := o.endpoints(ctx)
	if err != nil {
		return "", err
	}
	form := url.Values{"grant_type": {"urn:ietf:params:oauth:grant-type:device_code"},
		"device_code": {deviceCode}, "client_id": {o.oauth.ClientID}}
	if o.oauth.ClientSecret != "" {
		form.Set("client_secret", o.oauth.ClientSecret)
	}
	var tr tokenResponse
	if err := o.post(ctx, e.oauth.Endpoint.TokenURL, form, &tr); err != nil {
		return "", err
	}
	if tr.IDToken == "" {
		return "", errors.New("the identity provider returned no id_token")
	}
	return tr.IDToken, nil
}

// clientCredentials exchanges a service account's client id and secret at
// the issuer for an ID token (audience: the client itself).
func (o *oidcClient) clientCredentials(ctx context.Context, id, secret string) (string, error) {
	e, err := o.endpoints(ctx)
	if err != nil {
		return "", err
	}
	cc := clientcredentials.Config{ClientID: id, ClientSecret: secret, TokenURL: e.oauth.Endpoint.TokenURL,
		Scopes: []string{oidc.ScopeOpenID, "profile"}, AuthStyle: oauth2.AuthStyleInHeader}
	tok, err := cc.Token(o.ctx(ctx))
	if err != nil {
		return "", exchangeFailure(err)
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return "", errors.New("the identity provider returned no id_token for client credentials")
	}
	return raw, nil
}

func (o *oidcClient) post(ctx context.Context, endpoint string, form url.Values, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	resp, err := o.http.Do(req)
	if err != nil {
		return reachFailure(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return reachFailure(err)
	}
	if resp.StatusCode != http.StatusOK {
		oe := &reply.OAuthError{Status: resp.StatusCode}
		if resp.StatusCode < 500 && json.Unmarshal(body, oe) == nil && oe.Code != "" {
			return oe
		}
		return reachFailure(fmt.Errorf("%s answered HTTP %d", endpoint, resp.StatusCode))
	}
	return json.Unmarshal(body, out)
}
