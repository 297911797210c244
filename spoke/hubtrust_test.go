package spoke

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/tests/testkit"
)

// fakeHub publishes a JWKS and signs tokens the way the hub does.
type fakeHub struct {
	srv  *httptest.Server
	mu   sync.Mutex
	keys map[string]*ecdsa.PrivateKey
}

func newFakeHub(t *testing.T) *fakeHub {
	h := &fakeHub{keys: map[string]*ecdsa.PrivateKey{}}
	h.srv = httptest.NewServer(h.jwks())
	t.Cleanup(h.srv.Close)
	return h
}

// newFakeHubTLS is a fake hub over HTTPS with its own CA, which a
// controller must pin to fetch the JWKS.
func newFakeHubTLS(t *testing.T) *fakeHub {
	h := &fakeHub{keys: map[string]*ecdsa.PrivateKey{}}
	h.srv = httptest.NewTLSServer(h.jwks())
	t.Cleanup(h.srv.Close)
	return h
}

// caPEM is the certificate a controller pins for a TLS fake hub.
func (h *fakeHub) caPEM() string {
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: h.srv.Certificate().Raw}))
}

func (h *fakeHub) jwks() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		defer h.mu.Unlock()
		var set jose.JSONWebKeySet
		for kid, k := range h.keys {
			set.Keys = append(set.Keys, jose.JSONWebKey{Key: &k.PublicKey, KeyID: kid, Algorithm: "ES256", Use: "sig"})
		}
		_ = json.NewEncoder(w).Encode(set)
	})
}

func newECKey(t *testing.T) *ecdsa.PrivateKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func (h *fakeHub) publish(kid string, k *ecdsa.PrivateKey) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.keys[kid] = k
}

// revoke withdraws kid from the JWKS, as drover rotate-signing-key
// --revoke-previous does.
func (h *fakeHub) revoke(kid string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.keys, kid)
}

type hubClaims struct {
	jwt.Claims
	Access string `json:"access,omitempty"`
	Model  string `json:"model,omitempty"`
}

func sign(t *testing.T, kid string, k *ecdsa.PrivateKey, c hubClaims) string {
	t.Helper()
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: jose.JSONWebKey{Key: k, KeyID: kid}},
		(&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := jwt.Signed(s).Claims(c).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func TestHubTokens(t *testing.T) {
	hub := newFakeHub(t)
	k1 := newECKey(t)
	hub.publish("k1", k1)
	c, admin, info := hubTrustingCluster(t, hub, nil)
	ctx := t.Context()
	now := time.Now()
	claims := func(access, model string) hubClaims {
		return hubClaims{Claims: jwt.Claims{Issuer: hub.srv.URL, Subject: "alice@example.com",
			Audience: jwt.Audience{info.UUID}, Expiry: jwt.NewNumericDate(now.Add(time.Minute)),
			IssuedAt: jwt.NewNumericDate(now)}, Access: access, Model: model}
	}
	client := func(tok string) *api.Client {
		cl, err := api.NewClient(api.ClientConfig{Addresses: []string{c.nodes[0].cfg.Listen},
			CACert: []byte(c.cred.CACert), Token: tok, Timeout: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	wantCode := func(err error, code api.Code, what string) {
		t.Helper()
		var ae *api.Error
		if !errors.As(err, &ae) || ae.Code != code {
			t.Fatalf("%s: got %v, want %s", what, err, code)
		}
	}

	su := client(sign(t, "k1", k1, claims("superuser", "")))
	m, err := su.AddModel(ctx, api.AddModelRequest{Name: "fed", Owner: "alice@example.com"})
	if err != nil {
		t.Fatalf("superuser token: %v", err)
	}
	if m.Owner != "alice@example.com" {
		t.Fatalf("owner %q", m.Owner)
	}
	// Who runs the controller and which hub it trusts stay with its own
	// administrators: the hub's superuser token may read the trust, not
	// change it, mint tokens for another hub or add nodes.
	if _, err := su.HubTrust(ctx); err != nil {
		t.Fatalf("the hub reading its trust: %v", err)
	}
	_, err = su.CreateHubToken(ctx, time.Hour)
	wantCode(err, api.CodeForbidden, "hub token creating hub tokens")
	wantCode(su.RemoveHubTrust(ctx), api.CodeForbidden, "hub token removing the hub's trust")
	_, err = su.CreateJoinToken(ctx, time.Hour)
	wantCode(err, api.CodeForbidden, "hub token creating node join tokens")
	_, err = su.EnableHA(ctx, 3)
	wantCode(err, api.CodeForbidden, "hub token enabling HA")
	if _, err := admin.CreateHubToken(ctx, time.Hour); err != nil {
		t.Fatalf("the local administrator creating a hub token: %v", err)
	}

	// The hub tells the controller where it placed it; status names it.
	if p, err := su.SetPlacement(ctx, api.Placement{Cloud: "lab", Region: "eu-west-1"}); err != nil || p.Region != "eu-west-1" {
		t.Fatalf("the hub setting the placement: %+v %v", p, err)
	}
	_, err = su.SetPlacement(ctx, api.Placement{Region: "eu west"})
	wantCode(err, api.CodeInvalid, "a placement with a space")

	reader := client(sign(t, "k1", k1, claims("read", m.UUID)))
	st, err := reader.Model(m.UUID).Status(ctx)
	if err != nil {
		t.Fatalf("read token, read route: %v", err)
	}
	if st.Model.Cloud != "lab" || st.Model.Region != "eu-west-1" {
		t.Errorf("status: model in %s/%s, want lab/eu-west-1", st.Model.Cloud, st.Model.Region)
	}
	_, err = client(sign(t, "k1", k1, claims("admin", m.UUID))).SetPlacement(ctx, api.Placement{Region: "elsewhere"})
	wantCode(err, api.CodeForbidden, "a model's admin token setting the placement")
	_, err = reader.Model(m.UUID).SetConfig(ctx, api.ConfigChange{Set: map[string]any{"x": "y"}})
	wantCode(err, api.CodeForbidden, "read token on a write route")
	_, err = reader.Models(ctx)
	wantCode(err, api.CodeForbidden, "model token on the controller's model list")

	other, err := su.AddModel(ctx, api.AddModelRequest{Name: "other", Owner: "bob@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = reader.Model(other.UUID).Status(ctx)
	wantCode(err, api.CodeForbidden, "model token on another model")

	writer := client(sign(t, "k1", k1, claims("write", m.UUID)))
	if _, err := writer.Model(m.UUID).SetConfig(ctx, api.ConfigChange{Set: map[string]any{"x": "y"}}); err != nil {
		t.Fatalf("write token, write route: %v", err)
	}
	_, err = writer.Model(m.UUID).Destroy(ctx, false)
	wantCode(err, api.CodeForbidden, "write token destroying the model")

	wrongAud := claims("superuser", "")
	wrongAud.Audience = jwt.Audience{"another-controller"}
	expired := claims("superuser", "")
	expired.Expiry = jwt.NewNumericDate(now.Add(-time.Minute))
	wrongIss := claims("superuser", "")
	wrongIss.Issuer = "https://evil.example.com"
	noScope := claims("write", "")
	stranger := newECKey(t)
	for name, tok := range map[string]string{
		"wrong audience":               sign(t, "k1", k1, wrongAud),
		"expired":                      sign(t, "k1", k1, expired),
		"wrong issuer":                 sign(t, "k1", k1, wrongIss),
		"model access without a model": sign(t, "k1", k1, noScope),
		"other key, known kid":         sign(t, "k1", stranger, claims("superuser", "")),
		"other key, unknown kid":       sign(t, "k9", stranger, claims("superuser", "")),
		"alg none":                     algNone(claims("superuser", "")),
	} {
		_, err := client(tok).WhoAmI(ctx)
		wantCode(err, api.CodeUnauthorized, name)
	}

	// Key rotation: a token signed with a key published after the last
	// JWKS fetch (the unknown kid above, a moment ago) is accepted at once:
	// the spoke waits out its refetch limit rather than refuse it.
	k2 := newECKey(t)
	hub.publish("k2", k2)
	if _, err := client(sign(t, "k2", k2, claims("superuser", ""))).WhoAmI(ctx); err != nil {
		t.Fatalf("the first token signed with the rotated key: %v", err)
	}

	// Local Basic auth keeps working.
	if _, err := admin.Models(ctx); err != nil {
		t.Fatal(err)
	}
}

// algNone builds an unsigned token, which must never be accepted.
func algNone(c hubClaims) string {
	enc := base64.RawURLEncoding
	h, _ := json.Marshal(map[string]string{"alg": "none", "typ": "JWT", "kid": "k1"})
	p, _ := json.Marshal(c)
	return strings.Join([]string{enc.EncodeToString(h), enc.EncodeToString(p), ""}, ".")
}

// hubTrustingCluster is a one-node controller started with --hub-url
// naming hub (and what adjust sets), once the trust its flags propose is
// replicated: the cluster, its administrator's client and its info.
func hubTrustingCluster(t *testing.T, hub *fakeHub, adjust func(*Config)) (*testCluster, *api.Client, *api.ControllerInfo) {
	t.Helper()
	c := newTestClusterWith(t, 1, func(cfg *Config) {
		cfg.HubURL = hub.srv.URL
		if adjust != nil {
			adjust(cfg)
		}
	})
	admin := c.client(0)
	testkit.EventuallyWithin(t, 20*time.Second, func() (bool, error) {
		tr, err := admin.HubTrust(t.Context())
		return err == nil && tr.URL == hub.srv.URL && tr.Source == api.HubTrustFromFlags, nil
	}, "trust from --hub-url replicated")
	info, err := admin.ControllerInfo(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return c, admin, info
}
