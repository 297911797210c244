package spoke

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"golang.org/x/sync/errgroup"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/spoke/internal/peer"
)

// admitCall is the call a joining node makes: unauthenticated but for the
// join token in the body. It returns the status and the raw body.
func (c *testCluster) admitCall(t *testing.T, node int, tok string) (int, []byte) {
	t.Helper()
	code, body, err := c.admit(node, tok)
	if err != nil {
		t.Fatal(err)
	}
	return code, body
}

func (c *testCluster) admit(node int, tok string) (int, []byte, error) {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM([]byte(c.cred.CACert))
	hc := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	defer hc.CloseIdleConnections()
	body, _ := json.Marshal(peer.AdmitRequest{Token: tok, Hosts: []string{"127.0.0.1"}})
	resp, err := hc.Post("https://"+c.nodes[node].cfg.Listen+peer.PathAdmit, "application/json", bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// wantNoSecret fails if an answer carries any of the admission material.
func (c *testCluster) wantNoSecret(t *testing.T, what string, body []byte) {
	t.Helper()
	if err := c.noSecret(body); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func (c *testCluster) noSecret(body []byte) error {
	secret := string(c.nodes[0].srv.secret)
	for _, s := range []string{secret, "PRIVATE KEY", "ca-key", "node-key", `"secret"`} {
		if strings.Contains(string(body), s) {
			return fmt.Errorf("the answer holds %q: %s", s, body)
		}
	}
	return nil
}

func wantCodeIn(t *testing.T, what string, body []byte, code api.Code) {
	t.Helper()
	var e api.Error
	if err := json.Unmarshal(body, &e); err != nil || e.Code != code || e.Message == "" {
		t.Fatalf("%s: want %s with a message, got %s (%v)", what, code, body, err)
	}
}

// syncBuffer is a log sink the test reads while nodes write to it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestJoinTokenSingleUse (issue 26, finding 5): a node join token admits
// one node. The second admission with it is refused on every node, and
// the refusal carries nothing secret. Each creation and admission is
// logged with the token's id, never the token, and counted.
func TestJoinTokenSingleUse(t *testing.T) {
	var logs syncBuffer
	c := newTestClusterWith(t, 3, func(cfg *Config) {
		cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	ctx := t.Context()
	leader := c.leader()
	follower := (leader + 1) % 3
	tok, err := c.client(follower).CreateJoinToken(ctx, 10*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if tok.ID == "" || strings.Contains(tok.Token, tok.ID) {
		t.Fatalf("token id %q: want a name that is not part of the token", tok.ID)
	}

	code, body := c.admitCall(t, follower, tok.Token)
	if code != http.StatusOK {
		t.Fatalf("first admission: %d %s", code, body)
	}
	var ar peer.AdmitResponse
	if err := json.Unmarshal(body, &ar); err != nil || ar.NodeID == "" || ar.Secret == "" || ar.CAKey == "" {
		t.Fatalf("first admission: %+v %v", ar, err)
	}
	for i := range c.nodes {
		code, body := c.admitCall(t, i, tok.Token)
		if code != http.StatusForbidden {
			t.Fatalf("node %d: second admission: %d %s", i, code, body)
		}
		wantCodeIn(t, "second admission", body, api.CodeForbidden)
		c.wantNoSecret(t, "second admission", body)
	}

	// Asked at once through every node, a token still admits one node.
	tok2, err := c.client(leader).CreateJoinToken(ctx, 10*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	codes := make([]int, 2*len(c.nodes))
	var g errgroup.Group
	for i := range codes {
		g.Go(func() error {
			code, body, err := c.admit(i%len(c.nodes), tok2.Token)
			codes[i] = code
			if err == nil && code != http.StatusOK {
				err = c.noSecret(body)
			}
			return err
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatalf("concurrent admission: %v", err)
	}
	byCode := map[int]int{}
	for _, code := range codes {
		byCode[code]++
	}
	if byCode[http.StatusOK] != 1 || byCode[http.StatusForbidden] != 2*len(c.nodes)-1 {
		t.Fatalf("concurrent admissions with one token: %v, want one 200 and the rest 403", byCode)
	}

	out := logs.String()
	if strings.Contains(out, tok.Token) || strings.Contains(out, tok2.Token) {
		t.Fatal("a log holds the join token")
	}
	for _, want := range []string{
		"join token created", "token-id=" + tok.ID,
		"node admitted", "new-node=" + ar.NodeID,
		"node admission refused",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in the logs", want)
		}
	}
	var created, admitted, forbidden float64
	for _, n := range c.nodes {
		created += testutil.ToFloat64(n.srv.joinAudit.created)
		admitted += testutil.ToFloat64(n.srv.joinAudit.admissions.WithLabelValues(admissionAdmitted))
		forbidden += testutil.ToFloat64(n.srv.joinAudit.admissions.WithLabelValues(admissionForbidden))
	}
	// Two tokens joined the cluster's nodes 1 and 2, and two more here.
	if created != 4 || admitted != 4 || forbidden != 3+5 {
		t.Errorf("counted %v created, %v admitted, %v forbidden: want 4, 4, 8", created, admitted, forbidden)
	}
}

// TestJoinTokenRefusals: an expired token, a token the controller never
// recorded, a forged one and another controller's are refused as
// unauthorized with nothing secret; forged ones never reach raft.
func TestJoinTokenRefusals(t *testing.T) {
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return now
	}
	c := newTestClusterWith(t, 1, func(cfg *Config) { cfg.Now = clock })
	ctx := t.Context()
	srv := c.nodes[0].srv

	// Expired: the controller's clock moves past the token's expiry.
	short, err := c.client(0).CreateJoinToken(ctx, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	now = now.Add(2 * time.Minute)
	mu.Unlock()
	code, body := c.admitCall(t, 0, short.Token)
	if code != http.StatusUnauthorized {
		t.Fatalf("expired token: %d %s", code, body)
	}
	wantCodeIn(t, "expired token", body, api.CodeUnauthorized)
	c.wantNoSecret(t, "expired token", body)

	// Signed with the cluster secret, but never handed out by the controller.
	unrecorded := makeJoinToken(srv.secret, srv.ca.Fingerprint(), purposeJoin, clock().Add(time.Hour))
	code, body = c.admitCall(t, 0, unrecorded)
	if code != http.StatusUnauthorized {
		t.Fatalf("unrecorded token: %d %s", code, body)
	}
	wantCodeIn(t, "unrecorded token", body, api.CodeUnauthorized)
	c.wantNoSecret(t, "unrecorded token", body)

	good, err := c.client(0).CreateJoinToken(ctx, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(good.Token, ".")
	before := srv.node.AppliedIndex()
	for name, tok := range map[string]string{
		"garbage":              "drv1.x.y",
		"not a token":          "hello",
		"tampered payload":     parts[0] + "." + parts[1] + "A." + parts[2],
		"another controller's": makeJoinToken([]byte("other-secret"), srv.ca.Fingerprint(), purposeJoin, clock().Add(time.Hour)),
		"a hub token":          makeJoinToken(srv.secret, srv.ca.Fingerprint(), purposeHub, clock().Add(time.Hour)),
	} {
		code, body := c.admitCall(t, 0, tok)
		if code != http.StatusUnauthorized {
			t.Errorf("%s: %d %s", name, code, body)
			continue
		}
		wantCodeIn(t, name, body, api.CodeUnauthorized)
		c.wantNoSecret(t, name, body)
	}
	if after := srv.node.AppliedIndex(); after != before {
		t.Errorf("forged tokens wrote to raft: applied index %d, then %d", before, after)
	}
	// None of that used up the good token.
	if code, body := c.admitCall(t, 0, good.Token); code != http.StatusOK {
		t.Fatalf("good token after refusals: %d %s", code, body)
	}
}

// TestJoinTokenLifetime: the default lifetime is an hour, at most a day
// may be asked for, and a longer or negative one is refused, not clamped.
func TestJoinTokenLifetime(t *testing.T) {
	c := newTestCluster(t, 1)
	ctx := t.Context()
	cl := c.client(0)
	tok, err := cl.CreateJoinToken(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Until(tok.Expires); d < 59*time.Minute || d > 61*time.Minute {
		t.Fatalf("default lifetime: expires in %s", d)
	}
	if _, err := cl.CreateJoinToken(ctx, MaxJoinTokenTTL); err != nil {
		t.Fatalf("lifetime at the cap: %v", err)
	}
	for _, ttl := range []time.Duration{MaxJoinTokenTTL + time.Second, 30 * 24 * time.Hour, -time.Minute} {
		_, err := cl.CreateJoinToken(ctx, ttl)
		var e *api.Error
		if !errors.As(err, &e) || e.Code != api.CodeInvalid || !strings.Contains(e.Message, "24h") {
			t.Errorf("lifetime %s: %v, want invalid naming the 24h cap", ttl, err)
		}
	}
}
