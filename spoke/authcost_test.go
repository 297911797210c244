package spoke

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"golang.org/x/sync/errgroup"
	"net"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/droverhq/drover/api"
)

// rawClientFrom sends hand-made requests to node i from source address src
// ("" for any), trusting the controller's CA: requests an api.Client
// would refuse to build (junk credentials, made-up methods).
func (c *testCluster) rawClientFrom(src string) *http.Client {
	c.t.Helper()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM([]byte(c.cred.CACert)) {
		c.t.Fatal("no CA certificate")
	}
	d := &net.Dialer{Timeout: 5 * time.Second}
	if src != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(src)}
	}
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, DialContext: d.DialContext}
	c.t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 15 * time.Second}
}

func (c *testCluster) do(cl *http.Client, node int, method, path string, set func(*http.Request)) *http.Response {
	c.t.Helper()
	resp, err := c.tryDo(cl, node, method, path, set)
	if err != nil {
		c.t.Fatal(err)
	}
	return resp
}

// tryDo is do for other goroutines than the test's: it returns the error.
func (c *testCluster) tryDo(cl *http.Client, node int, method, path string, set func(*http.Request)) (*http.Response, error) {
	req, err := http.NewRequestWithContext(c.t.Context(), method, "https://"+c.nodes[node].cfg.Listen+path, nil)
	if err != nil {
		return nil, err
	}
	if set != nil {
		set(req)
	}
	resp, err := cl.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	resp.Body.Close()
	return resp, nil
}

// junkHubToken is a well-formed, unsigned-in-effect JWT naming an issuer
// the controller does not trust.
func junkHubToken(i int) string {
	enc := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	return enc(`{"alg":"ES256","kid":"k"}`) + "." + enc(fmt.Sprintf(`{"iss":"https://hub%d.invalid","aud":"x","sub":"s"}`, i)) + "." + enc("sig")
}

// TestJunkCredentialsWriteNoRaftEntries sends requests with credentials
// no one holds (unknown users, agent tags, hub issuers) to every node of a
// 3-node controller and checks that none of them appended a raft log
// entry: refusing a stranger costs no write on every node's disk
// (issue 26, finding 7). Leader workers may write now and then, so a
// round that saw another entry is tried again (from another address, below
// the limiter's burst); one round without any entry shows the requests
// wrote none.
func TestJunkCredentialsWriteNoRaftEntries(t *testing.T) {
	c := newTestCluster(t, 3)
	leader := c.leader()
	if _, err := c.client(0).ControllerInfo(t.Context(), api.ReadOptions{Consistent: true}); err != nil {
		t.Fatal(err)
	}
	const perKind = 5
	var fewest uint64
	n := 0
	for round := range 3 {
		cl := c.rawClientFrom(fmt.Sprintf("127.0.0.%d", round+1))
		before := c.nodes[leader].srv.node.Raft().LastIndex()
		n = 0
		// Concurrently: a follower holds a name it does not know for a
		// while (ADR 0028) before refusing it.
		var eg errgroup.Group
		expect := func(node int, what string, set func(*http.Request), path string) {
			n++
			eg.Go(func() error {
				resp, err := c.tryDo(cl, node, "GET", path, set)
				if err != nil {
					return err
				}
				if resp.StatusCode != http.StatusUnauthorized {
					return fmt.Errorf("junk %s answered %s, want 401", what, resp.Status)
				}
				return nil
			})
		}
		for node := range c.nodes {
			for i := range perKind {
				expect(node, "credentials", func(r *http.Request) { r.SetBasicAuth(fmt.Sprintf("nobody-%d-%d-%d", round, node, i), "junk") }, "/v1/whoami")
				expect(node, "hub token", func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+junkHubToken(i)) }, "/v1/whoami")
				tag := fmt.Sprintf("machine-00000000-0000-0000-0000-%012d-%d", round*10+node, i)
				expect(node, "agent credentials", func(r *http.Request) { r.SetBasicAuth(tag, "junk") }, "/v1/agent/stream")
			}
		}
		if err := eg.Wait(); err != nil {
			t.Fatal(err)
		}
		added := c.nodes[leader].srv.node.Raft().LastIndex() - before
		if added == 0 {
			return
		}
		if round == 0 || added < fewest {
			fewest = added
		}
	}
	t.Fatalf("%d requests with junk credentials appended %d raft log entries (the fewest of 3 rounds), want none", n, fewest)
}

// offsetClock is the wall clock moved on by what a test adds.
type offsetClock struct {
	mu  sync.Mutex
	off time.Duration
}

func (c *offsetClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.off)
}

func (c *offsetClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.off += d
}

// TestFailedAuthenticationsAreRateLimited checks the limiter on failed
// authentications: per source address and per claimed name, 429 with
// Retry-After once exceeded (whatever the credentials), and the limit
// lifts once Retry-After has passed (issue 26, finding 7).
func TestFailedAuthenticationsAreRateLimited(t *testing.T) {
	clock := &offsetClock{}
	c := newTestClusterWith(t, 1, func(cfg *Config) { cfg.Now = clock.Now })
	a, b := c.rawClientFrom("127.0.0.1"), c.rawClientFrom("127.0.0.2")
	basic := func(user, pw string) func(*http.Request) {
		return func(r *http.Request) { r.SetBasicAuth(user, pw) }
	}
	// Guess one name's password until refused.
	limited := func(cl *http.Client, user string) *http.Response {
		t.Helper()
		for range 200 {
			resp := c.do(cl, 0, "GET", "/v1/whoami", basic(user, "guess"))
			switch resp.StatusCode {
			case http.StatusTooManyRequests:
				return resp
			case http.StatusUnauthorized:
			default:
				t.Fatalf("a wrong password answered %s", resp.Status)
			}
		}
		t.Fatalf("200 wrong passwords for %s, none refused with 429", user)
		return nil
	}
	resp := limited(a, "victim")
	wait, err := strconv.Atoi(resp.Header.Get("Retry-After"))
	if err != nil || wait < 1 {
		t.Fatalf("429 with Retry-After %q, want a number of seconds", resp.Header.Get("Retry-After"))
	}
	// The name is limited from another address too; another name is not.
	if resp := c.do(b, 0, "GET", "/v1/whoami", basic("victim", "guess")); resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("the limited name from another address answered %s, want 429", resp.Status)
	}
	if resp := c.do(b, 0, "GET", "/v1/whoami", basic("bystander", "guess")); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("another name from another address answered %s, want 401", resp.Status)
	}
	// Many names from one address: the address is limited, whatever name.
	for i := 0; ; i++ {
		resp := c.do(a, 0, "GET", "/v1/whoami", basic(fmt.Sprintf("spray-%d", i), "guess"))
		if resp.StatusCode == http.StatusTooManyRequests {
			break
		}
		if resp.StatusCode != http.StatusUnauthorized || i > 200 {
			t.Fatalf("spraying names: request %d answered %s", i, resp.Status)
		}
	}
	if resp := c.do(a, 0, "GET", "/v1/agent/stream", basic("machine-x-0", "guess")); resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("the limited address's agent login answered %s, want 429", resp.Status)
	}
	// It recovers once Retry-After has passed.
	clock.Add(time.Duration(wait)*time.Second + time.Minute)
	if resp := c.do(a, 0, "GET", "/v1/whoami", basic("victim", "guess")); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("after Retry-After a wrong password answered %s, want 401", resp.Status)
	}
	if resp := c.do(a, 0, "GET", "/v1/whoami", basic(c.cred.User, c.cred.Password)); resp.StatusCode != http.StatusOK {
		t.Fatalf("after Retry-After the admin answered %s, want 200", resp.Status)
	}
}

// TestConsistentPathsWriteNoRaftEntries: the requests that still make a
// node read consistently (a hub token from an untrusted issuer while a hub
// token is pending, consistent reads) get a read index from the leader, a
// heartbeat round, and append no raft log entry, on the leader and on a
// follower (issue 26, finding 7; ADR 0026). A round that saw an entry
// (leader workers write now and then) is tried again from another address.
func TestConsistentPathsWriteNoRaftEntries(t *testing.T) {
	c := newTestCluster(t, 3)
	admin := c.client(0)
	if _, err := admin.CreateHubToken(t.Context(), time.Hour); err != nil {
		t.Fatal(err)
	}
	leader := c.leader()
	follower := (leader + 1) % len(c.nodes)
	const perNode = 5
	var fewest uint64
	n := 0
	for round := range 3 {
		cl := c.rawClientFrom(fmt.Sprintf("127.0.0.%d", round+1))
		// Every node must have applied the pending token: a node that
		// has not would refuse the junk token without reading at all.
		if _, err := admin.ControllerInfo(t.Context(), api.ReadOptions{Consistent: true}); err != nil {
			t.Fatal(err)
		}
		before := c.nodes[leader].srv.node.Raft().LastIndex()
		rounds := c.nodes[leader].srv.node.ReadIndexRounds()
		n = 0
		for _, node := range []int{leader, follower} {
			for i := range perNode {
				set := func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+junkHubToken(i)) }
				if resp := c.do(cl, node, "GET", "/v1/whoami", set); resp.StatusCode != http.StatusUnauthorized {
					t.Fatalf("junk hub token answered %s, want 401", resp.Status)
				}
				if _, err := c.client(node).ControllerInfo(t.Context(), api.ReadOptions{Consistent: true}); err != nil {
					t.Fatal(err)
				}
				n += 2
			}
		}
		if c.nodes[leader].srv.node.ReadIndexRounds() == rounds {
			t.Fatal("no read index was taken: the requests did not reach the consistent paths")
		}
		added := c.nodes[leader].srv.node.Raft().LastIndex() - before
		if added == 0 {
			return
		}
		if round == 0 || added < fewest {
			fewest = added
		}
	}
	t.Fatalf("%d requests on the consistent paths appended %d raft log entries (the fewest of 3 rounds), want none", n, fewest)
}
