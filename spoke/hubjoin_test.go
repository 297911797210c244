package spoke

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/gorilla/websocket"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/tests/testkit"
)

// trustHubCall is the call a hub makes to a node while registering the
// controller: unauthenticated but for the hub token in the body.
func (c *testCluster) trustHubCall(t *testing.T, node int, req api.TrustHubRequest) (int, api.Error) {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM([]byte(c.cred.CACert))
	hc := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	defer hc.CloseIdleConnections()
	body, _ := json.Marshal(req)
	resp, err := hc.Post("https://"+c.nodes[node].cfg.Listen+"/v1/internal/hub-trust", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var e api.Error
	if resp.StatusCode != http.StatusOK {
		if err := json.NewDecoder(resp.Body).Decode(&e); err != nil {
			t.Fatalf("error body: %v", err)
		}
	}
	return resp.StatusCode, e
}

// hubClient is a client of one node carrying a hub-signed token.
func (c *testCluster) hubClient(t *testing.T, node int, tok string) *api.Client {
	cl, err := api.NewClient(api.ClientConfig{Addresses: []string{c.nodes[node].cfg.Listen},
		CACert: []byte(c.cred.CACert), Token: tok, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func (h *fakeHub) superuserToken(t *testing.T, kid string, k *ecdsa.PrivateKey, controller string) string {
	now := time.Now()
	return sign(t, kid, k, hubClaims{Claims: jwt.Claims{Issuer: h.srv.URL, Subject: "hub",
		Audience: jwt.Audience{controller}, Expiry: jwt.NewNumericDate(now.Add(5 * time.Minute)),
		IssuedAt: jwt.NewNumericDate(now)}, Access: "superuser"})
}

// TestHubTrustAtRuntime: a controller started without --hub-url learns to
// trust a hub through a hub token handed to a follower; every node then
// accepts the hub's tokens; a second hub replaces the first; removing the
// trust makes every node refuse them again.
func TestHubTrustAtRuntime(t *testing.T) {
	c := newTestCluster(t, 3)
	ctx := t.Context()
	admin := c.client(0)
	info, err := admin.ControllerInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	leader := c.leader()
	follower := (leader + 1) % 3
	hub1, k1 := newFakeHubTLS(t), newECKey(t)
	hub1.publish("k1", k1)
	tok1 := hub1.superuserToken(t, "k1", k1, info.UUID)

	// wantRefused: every node refuses tok; with eventually, a follower may
	// take until it applies the change that made it so.
	wantRefused := func(what string, tok string, eventually bool) {
		t.Helper()
		for i := range c.nodes {
			cl := c.hubClient(t, i, tok)
			if !eventually {
				if _, err := cl.WhoAmI(ctx); !errors.Is(err, api.ErrUnauthorized) {
					t.Fatalf("%s: node %d: %v", what, i, err)
				}
				continue
			}
			testkit.EventuallyWithin(t, 10*time.Second, func() (bool, error) {
				_, err := cl.WhoAmI(ctx)
				return errors.Is(err, api.ErrUnauthorized), nil
			}, "%s (node %d)", what, i)
		}
	}
	wantAccepted := func(what string, tok string) {
		t.Helper()
		for i := range c.nodes {
			// No waiting: a node that has not applied the trust yet reads
			// it again consistently before it refuses a token.
			who, err := c.hubClient(t, i, tok).WhoAmI(ctx)
			if err != nil || who.Access != "superuser" {
				t.Fatalf("%s: node %d: %+v %v", what, i, who, err)
			}
		}
	}
	wantRefused("no hub trusted yet", tok1, false)
	if _, err := admin.HubTrust(ctx); !errors.Is(err, api.ErrNotFound) {
		t.Fatalf("hub trust before any: %v", err)
	}

	ht, err := c.client(follower).CreateHubToken(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Until(ht.Expires); d < 59*time.Minute || d > 61*time.Minute {
		t.Fatalf("default TTL: expires in %s", d)
	}
	req := api.TrustHubRequest{Token: ht.Token, HubURL: hub1.srv.URL, HubCA: hub1.caPEM()}

	// Bad tokens change nothing.
	joinTok, err := admin.CreateJoinToken(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	srv := c.nodes[leader].srv
	expired := makeJoinToken(srv.secret, srv.ca.Fingerprint(), purposeHub, time.Now().Add(-time.Minute))
	unrecorded := makeJoinToken(srv.secret, srv.ca.Fingerprint(), purposeHub, time.Now().Add(time.Hour))
	for name, tc := range map[string]struct {
		tok  string
		code int
	}{
		"garbage":              {"drv1.x.y", http.StatusUnauthorized},
		"node join token":      {joinTok.Token, http.StatusUnauthorized},
		"expired":              {expired, http.StatusUnauthorized},
		"never recorded":       {unrecorded, http.StatusUnauthorized},
		"another controller's": {makeJoinToken([]byte("other-secret"), srv.ca.Fingerprint(), purposeHub, time.Now().Add(time.Hour)), http.StatusUnauthorized},
	} {
		bad := req
		bad.Token = tc.tok
		if code, e := c.trustHubCall(t, follower, bad); code != tc.code || e.Code != api.CodeUnauthorized {
			t.Errorf("%s: %d %+v", name, code, e)
		}
	}
	bad := req
	bad.HubCA = "not a certificate"
	if code, e := c.trustHubCall(t, follower, bad); code != http.StatusUnprocessableEntity || e.Code != api.CodeInvalid {
		t.Errorf("bad CA: %d %+v", code, e)
	}
	if _, err := admin.HubTrust(ctx, api.ReadOptions{Consistent: true}); !errors.Is(err, api.ErrNotFound) {
		t.Fatalf("bad requests set a trust: %v", err)
	}

	// The good token, through a follower (forwarded to the leader).
	if code, e := c.trustHubCall(t, follower, req); code != http.StatusOK {
		t.Fatalf("trust hub: %d %+v", code, e)
	}
	wantAccepted("hub 1 trusted", tok1)
	for i := range c.nodes {
		tr, err := c.client(i).HubTrust(ctx)
		if err != nil || tr.URL != hub1.srv.URL || tr.Source != api.HubTrustFromToken || tr.CACert != hub1.caPEM() {
			t.Fatalf("node %d hub trust: %+v %v", i, tr, err)
		}
	}
	// Single use, even once the trust is set.
	if code, e := c.trustHubCall(t, leader, req); code != http.StatusForbidden || e.Code != api.CodeForbidden {
		t.Fatalf("reused token: %d %+v", code, e)
	}

	// A second hub replaces the first without a restart.
	hub2, k2 := newFakeHubTLS(t), newECKey(t)
	hub2.publish("k2", k2)
	tok2 := hub2.superuserToken(t, "k2", k2, info.UUID)
	ht2, err := admin.CreateHubToken(ctx, 10*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if code, e := c.trustHubCall(t, (follower+1)%3, api.TrustHubRequest{Token: ht2.Token, HubURL: hub2.srv.URL, HubCA: hub2.caPEM()}); code != http.StatusOK {
		t.Fatalf("trust hub 2: %d %+v", code, e)
	}
	wantAccepted("hub 2 trusted", tok2)
	wantRefused("hub 1 replaced", tok1, true)

	// Removing the trust, through a follower: every node refuses hub 2.
	if err := c.client(follower).RemoveHubTrust(ctx); err != nil {
		t.Fatal(err)
	}
	wantRefused("trust removed", tok2, true)
	if err := c.client(follower).RemoveHubTrust(ctx); !errors.Is(err, api.ErrNotFound) {
		t.Fatalf("second removal: %v", err)
	}
	// Local users are unaffected throughout.
	if _, err := admin.Models(ctx); err != nil {
		t.Fatal(err)
	}
}

// streamsCluster is a one-node controller whose streams wake every 200 ms
// (the keepalive interval), its administrator's client, its description,
// and a model named name on it.
func streamsCluster(t *testing.T, name string) (*testCluster, *api.Client, *api.ControllerInfo, *api.Model) {
	t.Helper()
	c := newTestClusterWith(t, 1, func(cfg *Config) { cfg.KeepaliveInterval = 200 * time.Millisecond })
	admin := c.client(0)
	info, err := admin.ControllerInfo(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	m, err := admin.AddModel(t.Context(), api.AddModelRequest{Name: name})
	if err != nil {
		t.Fatal(err)
	}
	return c, admin, info, m
}

// TestHubStreamsEndWithTheTrust: the streams a hub opened (its event
// subscription, a watch and a followed log proxied through it) end once
// the controller no longer trusts that hub, within a keepalive interval;
// a hub token is only checked when a stream opens, and before, they went
// on for good after remove-hub-trust. The same when another hub is
// registered in its place. A local user's streams go on.
func TestHubStreamsEndWithTheTrust(t *testing.T) {
	c, admin, info, m := streamsCluster(t, "streams")
	ctx := t.Context()
	trust := func() (*fakeHub, *ecdsa.PrivateKey) {
		t.Helper()
		hub, k := newFakeHubTLS(t), newECKey(t)
		hub.publish("k1", k)
		ht, err := admin.CreateHubToken(ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		if code, e := c.trustHubCall(t, 0, api.TrustHubRequest{Token: ht.Token, HubURL: hub.srv.URL, HubCA: hub.caPEM()}); code != http.StatusOK {
			t.Fatalf("trust hub: %d %+v", code, e)
		}
		return hub, k
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()

	// A second hub registered in the first one's place ends its streams.
	first, k1 := trust()
	old, err := c.hubClient(t, 0, first.superuserToken(t, "k1", k1, info.UUID)).Model(m.UUID).Watch(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	if _, err := old.Next(ctx); err != nil {
		t.Fatal(err)
	}
	hub, k := trust()
	endsRefused := func(what string, next func() error) {
		t.Helper()
		for { // frames sent before the stream noticed come first
			if err := next(); err != nil {
				if !errors.Is(err, api.ErrUnauthorized) {
					t.Fatalf("%s: %v, want unauthorized", what, err)
				}
				return
			}
		}
	}
	endsRefused("the first hub's watch after another hub registered", func() error { _, err := old.Next(wctx); return err })

	// Removing the trust ends the streams of the hub trusted then.
	tok := hub.superuserToken(t, "k1", k, info.UUID)
	hc := c.hubClient(t, 0, tok)

	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM([]byte(c.cred.CACert))
	dialer := websocket.Dialer{TLSClientConfig: &tls.Config{RootCAs: pool}, HandshakeTimeout: 10 * time.Second}
	eventsURL := "wss://" + c.nodes[0].cfg.Listen + "/v1/events"
	bearer := http.Header{"Authorization": {"Bearer " + tok}}
	events, _, err := dialer.DialContext(ctx, eventsURL, bearer)
	if err != nil {
		t.Fatal(err)
	}
	defer events.Close()
	watch, err := hc.Model(m.UUID).Watch(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Close()
	logs, err := hc.Model(m.UUID).Logs(ctx, api.LogsRequest{Follow: true})
	if err != nil {
		t.Fatal(err)
	}
	defer logs.Close()
	local, err := admin.Model(m.UUID).Watch(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer local.Close()
	for _, w := range []*api.Watcher{watch, local} {
		if _, err := w.Next(ctx); err != nil { // the reset: the watch is open
			t.Fatal(err)
		}
	}
	var reset api.EventFrame
	if err := events.ReadJSON(&reset); err != nil || reset.Type != api.EventFrameReset {
		t.Fatalf("the hub's event stream: %+v %v", reset, err)
	}

	if err := admin.RemoveHubTrust(ctx); err != nil {
		t.Fatal(err)
	}
	// Each ends, and resuming is refused: the hub token no longer counts.
	events.SetReadDeadline(time.Now().Add(30 * time.Second))
	for {
		var f api.EventFrame
		err := events.ReadJSON(&f)
		if err == nil {
			continue // frames sent before the stream noticed
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("the hub's event stream still open after remove-hub-trust")
		}
		break
	}
	if _, resp, err := dialer.DialContext(ctx, eventsURL, bearer); err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("the hub's event stream opened again after remove-hub-trust: %v", err)
	}
	endsRefused("a watch through the hub after remove-hub-trust", func() error { _, err := watch.Next(wctx); return err })
	endsRefused("a log follow through the hub after remove-hub-trust", func() error { _, err := logs.Next(wctx); return err })
	// The local administrator's watch goes on: a change still reaches it.
	if _, err := admin.Model(m.UUID).SetConfig(ctx, api.ConfigChange{Set: map[string]any{"n": 1}}); err != nil {
		t.Fatal(err)
	}
	if _, err := local.Next(wctx); err != nil {
		t.Fatalf("the local watch: %v", err)
	}
}

// TestHubStreamsEndWithTheirKey: a watch a hub opened with a token signed
// by a key the hub then revokes ends within a keepalive interval of the
// controller learning it (here: its first token signed with the new key,
// which has it fetch the JWKS again), and reopening it with that token is
// refused at once, not answered from the verified-token cache. A stream
// opened with the new key goes on.
func TestHubStreamsEndWithTheirKey(t *testing.T) {
	c, admin, info, m := streamsCluster(t, "keys")
	ctx := t.Context()
	hub, k1 := newFakeHubTLS(t), newECKey(t)
	hub.publish("k1", k1)
	ht, err := admin.CreateHubToken(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if code, e := c.trustHubCall(t, 0, api.TrustHubRequest{Token: ht.Token, HubURL: hub.srv.URL, HubCA: hub.caPEM()}); code != http.StatusOK {
		t.Fatalf("trust hub: %d %+v", code, e)
	}
	leaked, err := c.hubClient(t, 0, hub.superuserToken(t, "k1", k1, info.UUID)).Model(m.UUID).Watch(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer leaked.Close()
	if _, err := leaked.Next(ctx); err != nil {
		t.Fatal(err)
	}

	k2 := newECKey(t)
	hub.publish("k2", k2)
	hub.revoke("k1")
	fresh, err := c.hubClient(t, 0, hub.superuserToken(t, "k2", k2, info.UUID)).Model(m.UUID).Watch(ctx, 0)
	if err != nil {
		t.Fatalf("a watch with the new key: %v", err)
	}
	defer fresh.Close()
	if _, err := fresh.Next(ctx); err != nil {
		t.Fatal(err)
	}
	// Well within the 30 s the controller would answer the leaked token
	// from its verified-token cache, had it not dropped it with the key.
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for { // frames sent before the stream noticed come first
		if _, err := leaked.Next(wctx); err != nil {
			if !errors.Is(err, api.ErrUnauthorized) {
				t.Fatalf("the watch opened with the revoked key: %v, want unauthorized", err)
			}
			break
		}
	}
	// The new key's watch goes on: a change still reaches it.
	if _, err := admin.Model(m.UUID).SetConfig(ctx, api.ConfigChange{Set: map[string]any{"n": 1}}); err != nil {
		t.Fatal(err)
	}
	if _, err := fresh.Next(wctx); err != nil {
		t.Fatalf("the new key's watch: %v", err)
	}
}
