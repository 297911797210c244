package api

import "time"

// Hub trust routes of the controller (spoke) API:
//
//	GET    /v1/controller/hub                            HubTrust (superuser; 404 when none)
//	DELETE /v1/controller/hub                            204 (local superuser, not a hub): trust no hub
//	POST   /v1/controller/hub-tokens  JoinTokenRequest → JoinToken (local superuser, not a hub; single use)
//	POST   /v1/internal/hub-trust     TrustHubRequest  → HubTrust (authenticated by the token)

// Sources of a controller's hub trust.
const (
	HubTrustFromFlags = "flags"      // droverd spoke --hub-url ...
	HubTrustFromToken = "join-token" // a hub registered the controller with a hub token
)

// HubTrust is the hub a controller trusts: it accepts bearer tokens signed
// by the keys published at JWKSURL (fetched over TLS pinned to CACert, or
// the system roots when empty) with issuer URL.
type HubTrust struct {
	URL     string    `json:"url"`
	JWKSURL string    `json:"jwks-url,omitempty"`
	CACert  string    `json:"ca-cert,omitempty"`
	Source  string    `json:"source"`
	SetAt   time.Time `json:"set-at"`
}

// TrustHubRequest is what a hub sends a controller to be trusted, with a
// hub token a controller superuser created (POST /v1/controller/hub-tokens).
// HubURL is the hub's public URL (its tokens' issuer), HubCA its CA (PEM;
// empty: the controller uses its system roots), JWKSURL defaults to
// HubURL/.well-known/jwks.json.
type TrustHubRequest struct {
	Token   string `json:"token"`
	HubURL  string `json:"hub-url"`
	HubCA   string `json:"hub-ca,omitempty"`
	JWKSURL string `json:"jwks-url,omitempty"`
}
