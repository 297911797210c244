package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// oidcAlgorithms is the allow-list for ID tokens from the issuer.
var oidcAlgorithms = []string{oidc.RS256, oidc.ES256, oidc.EdDSA}

// oidcClient is the hub's view of the identity provider.
type oidcClient struct {
	issuer         string
	provider       *oidc.Provider
	oauth          oauth2.Config
	deviceEndpoint string
	http           *http.Client
	verifier       *oidc.IDTokenVerifier
}

func newOIDC(ctx context.Context, cfg *Config) (*oidcClient, error) {
	ctx = oidc.ClientContext(ctx, cfg.OIDCHTTPClient)
	p, err := oidc.NewProvider(ctx, cfg.OIDCIssuer)
	if err != nil {
		return nil, fmt.Errorf("hub: oidc discovery at %s: %w", cfg.OIDCIssuer, err)
	}
	var extra struct {
		Device string `json:"device_authorization_endpoint"`
	}
	if err := p.Claims(&extra); err != nil {
		return nil, fmt.Errorf("hub: oidc discovery: %w", err)
	}
	ep := p.Endpoint()
	ep.DeviceAuthURL = extra.Device
	return &oidcClient{
		issuer:   cfg.OIDCIssuer,
		provider: p,
		oauth: oauth2.Config{ClientID: cfg.OIDCClientID, ClientSecret: cfg.OIDCClientSecret, Endpoint: ep,
			RedirectURL: cfg.PublicURL + "/auth/callback", Scopes: []string{oidc.ScopeOpenID, "email", "profile", oidc.ScopeOfflineAccess}},
		deviceEndpoint: extra.Device,
		http:           cfg.OIDCHTTPClient,
		verifier:       p.Verifier(&oidc.Config{ClientID: cfg.OIDCClientID, SupportedSigningAlgs: oidcAlgorithms}),
	}, nil
}

func (o *oidcClient) ctx(ctx context.Context) context.Context { return oidc.ClientContext(ctx, o.http) }

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
		return nil, idClaims{}, fmt.Errorf("%w: %w", errUnauthenticated, err)
	}
	var c idClaims
	if err := tok.Claims(&c); err != nil {
		return nil, idClaims{}, fmt.Errorf("%w: %w", errUnauthenticated, err)
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
	if o.deviceEndpoint == "" {
		return deviceStart{}, errors.New("the identity provider has no device authorization endpoint")
	}
	form := url.Values{"client_id": {o.oauth.ClientID}, "scope": {strings.Join(o.oauth.Scopes, " ")}}
	var out deviceStart
	if err := o.post(ctx, o.deviceEndpoint, form, &out); err != nil {
		return deviceStart{}, err
	}
	if out.Interval == 0 {
		out.Interval = 5
	}
	return out, nil
}

// oauthError is an OAuth 2.0 error response, passed through to clients
// polling the device flow (authorization_pending, slow_down, ...).
type oauthError struct {
	Status      int    `json:"-"`
	Code        string `json:"error"`
	Description string `json:"error_description,omitempty"`
}

func (e *oauthError) Error() string { return "oauth2: " + e.Code + " " + e.Description }

type tokenResponse struct {
	AccessToken  string `json:"access_token"`
	IDToken      string `json:"id_token"`
	RefreshToken string `json:"refresh_token"`
}

// pollDevice asks the issuer once whether the user approved the device.
func (o *oidcClient) pollDevice(ctx context.Context, deviceCode string) (string, error) {
	form := url.Values{"grant_type": {"urn:ietf:params:oauth:grant-type:device_code"},
		"device_code": {deviceCode}, "client_id": {o.oauth.ClientID}}
	if o.oauth.ClientSecret != "" {
		form.Set("client_secret", o.oauth.ClientSecret)
	}
	var tr tokenResponse
	if err := o.post(ctx, o.oauth.Endpoint.TokenURL, form, &tr); err != nil {
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
	cc := clientcredentials.Config{ClientID: id, ClientSecret: secret, TokenURL: o.oauth.Endpoint.TokenURL,
		Scopes: []string{oidc.ScopeOpenID, "profile"}, AuthStyle: oauth2.AuthStyleInHeader}
	tok, err := cc.Token(o.ctx(ctx))
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) && re.Response != nil && re.Response.StatusCode < 500 {
			return "", fmt.Errorf("%w: %w", errUnauthenticated, err)
		}
		return "", err
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
		return fmt.Errorf("identity provider: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("identity provider: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		oe := &oauthError{Status: resp.StatusCode}
		if json.Unmarshal(body, oe) == nil && oe.Code != "" {
			return oe
		}
		return fmt.Errorf("identity provider: HTTP %d", resp.StatusCode)
	}
	return json.Unmarshal(body, out)
}
