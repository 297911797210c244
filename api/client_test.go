package api_test

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/tests/testkit"
)

const model = "m-uuid"

func TestNewClientValidates(t *testing.T) {
	ca := newTestCA(t)
	for name, cfg := range map[string]api.ClientConfig{
		"no addresses":   {CACert: ca.pem},
		"no CA":          {Addresses: []string{"127.0.0.1:1"}},
		"bad CA":         {Addresses: []string{"127.0.0.1:1"}, CACert: []byte("nope")},
		"token and user": {Addresses: []string{"127.0.0.1:1"}, CACert: ca.pem, User: "a", Token: "t"},
	} {
		if _, err := api.NewClient(cfg); !errors.Is(err, api.ErrInvalid) {
			t.Errorf("%s: got %v, want invalid", name, err)
		}
	}
}

func TestFailoverPastRefusedAddress(t *testing.T) {
	testkit.CheckLeaks(t)
	ca := newTestCA(t)
	node := newFakeNode()
	srv := ca.serve(t, node)
	c := newClient(t, api.ClientConfig{Addresses: []string{testkit.FreeAddr(t), addr(srv)}, CACert: ca.pem})
	ctx := t.Context()

	if _, err := c.Model(model).Applications(ctx); err != nil {
		t.Fatalf("read: %v", err)
	}
	// A write may move on too: a refused dial proves nothing was sent.
	if _, err := c.Model(model).Deploy(ctx, api.DeployRequest{Application: "kv"}); err != nil {
		t.Fatalf("write: %v", err)
	}
	if got := c.Addresses(); len(got) != 2 {
		t.Fatalf("addresses changed: %v", got)
	}
	if n := len(node.received()); n != 2 {
		t.Fatalf("node saw %d requests, want 2", n)
	}
}

// TestSticksToTheAddressThatAnswered checks that after failing over, the
// client tries the address that answered first from then on.
func TestSticksToTheAddressThatAnswered(t *testing.T) {
	testkit.CheckLeaks(t)
	ca := newTestCA(t)
	srv := ca.serve(t, newFakeNode())
	broken, err := net.Listen("tcp", "127.0.0.1:0") // accepts, then hangs up
	if err != nil {
		t.Fatal(err)
	}
	var accepted atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			conn, err := broken.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			conn.Close()
		}
	}()
	t.Cleanup(func() { broken.Close(); <-done })
	c := newClient(t, api.ClientConfig{Addresses: []string{broken.Addr().String(), addr(srv)}, CACert: ca.pem})
	for i := range 3 {
		if _, err := c.Model(model).Applications(t.Context()); err != nil {
			t.Fatalf("read %d: %v", i, err)
		}
	}
	if n := accepted.Load(); n != 1 {
		t.Fatalf("the broken address was tried %d times, want once", n)
	}
	if got := c.Addresses(); !slices.Equal(got, []string{broken.Addr().String(), addr(srv)}) {
		t.Fatalf("addresses changed: %v", got)
	}
}

func TestUnavailableFailsOverReadsOnly(t *testing.T) {
	testkit.CheckLeaks(t)
	ca := newTestCA(t)
	down, up := newFakeNode(), newFakeNode()
	down.unavailable = true
	srvDown, srvUp := ca.serve(t, down), ca.serve(t, up)
	c := newClient(t, api.ClientConfig{Addresses: []string{addr(srvDown), addr(srvUp)}, CACert: ca.pem})
	ctx := t.Context()

	if _, err := c.Model(model).Applications(ctx); err != nil {
		t.Fatalf("read: %v", err)
	}
	// A fresh client starts at the unavailable node again.
	c2 := newClient(t, api.ClientConfig{Addresses: []string{addr(srvDown), addr(srvUp)}, CACert: ca.pem})
	_, err := c2.Model(model).Deploy(ctx, api.DeployRequest{Application: "kv"})
	if !errors.Is(err, api.ErrUnavailable) {
		t.Fatalf("write: got %v, want unavailable", err)
	}
	for _, cl := range up.received() {
		if cl.Method != http.MethodGet {
			t.Fatalf("write was resent to the second node: %+v", cl)
		}
	}
}

func TestWriteNotResentAfterConnectionLoss(t *testing.T) {
	testkit.CheckLeaks(t)
	ca := newTestCA(t)
	drop := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Errorf("hijack: %v", err)
			return
		}
		_ = conn.Close() // the request arrived and no answer goes back
	})
	up := newFakeNode()
	srvDrop, srvUp := ca.serve(t, drop), ca.serve(t, up)
	c := newClient(t, api.ClientConfig{Addresses: []string{addr(srvDrop), addr(srvUp)}, CACert: ca.pem})

	_, err := c.Model(model).Deploy(t.Context(), api.DeployRequest{Application: "kv"})
	if !errors.Is(err, api.ErrTimeout) {
		t.Fatalf("got %v, want timeout (outcome unknown)", err)
	}
	if got := up.received(); len(got) != 0 {
		t.Fatalf("write was resent: %+v", got)
	}
	// A read is resent.
	if _, err := c.Model(model).Applications(t.Context()); err != nil {
		t.Fatalf("read: %v", err)
	}
}

func TestAllAddressesDown(t *testing.T) {
	testkit.CheckLeaks(t)
	ca := newTestCA(t)
	c := newClient(t, api.ClientConfig{Addresses: []string{testkit.FreeAddr(t), testkit.FreeAddr(t)}, CACert: ca.pem})
	_, err := c.Model(model).Applications(t.Context())
	if !errors.Is(err, api.ErrUnavailable) {
		t.Fatalf("got %v, want unavailable", err)
	}
	var op *net.OpError
	if !errors.As(err, &op) || op.Op != "dial" {
		t.Fatalf("the dial error is not wrapped: %v", err)
	}
	if api.CodeOf(err) != api.CodeUnavailable {
		t.Fatalf("code %q", api.CodeOf(err))
	}
}

func TestErrorDecoding(t *testing.T) {
	testkit.CheckLeaks(t)
	ca := newTestCA(t)
	srv := ca.serve(t, newFakeNode())
	c := newClient(t, api.ClientConfig{Addresses: []string{addr(srv)}, CACert: ca.pem})
	ctx := t.Context()

	_, err := c.Model(model).Unit(ctx, "kv/7")
	var e *api.Error
	if !errors.Is(err, api.ErrNotFound) || !errors.As(err, &e) {
		t.Fatalf("got %v, want not-found *api.Error", err)
	}
	if e.Status != http.StatusNotFound || e.Message != "unit kv/7 not found" || e.Details["unit"] != "kv/7" {
		t.Fatalf("decoded %+v", e)
	}

	_, err = c.Charms(ctx)
	if !errors.As(err, &e) || e.Code != api.CodeInternal || e.Status != http.StatusInternalServerError {
		t.Fatalf("non-JSON body: got %#v", err)
	}

	if _, err := c.Model(model).Unit(ctx, "kv"); !errors.Is(err, api.ErrBadRequest) {
		t.Fatalf("bad unit name: got %v", err)
	}

	// A route the server does not have (net/http's plain 404 or 405) says
	// which request it was, not the server's bare "404 page not found".
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/controller/enable-ha", func(w http.ResponseWriter, r *http.Request) {})
	old := newClient(t, api.ClientConfig{Addresses: []string{addr(ca.serve(t, mux))}, CACert: ca.pem})
	if _, err := old.Model(model).Unit(ctx, "kv/7"); !errors.As(err, &e) || e.Code != api.CodeNotFound ||
		e.Message != "the server does not serve GET /v1/models/"+model+"/units/kv/7 (HTTP 404): it is older than this client, or not a Drover API server" {
		t.Fatalf("no such route: got %#v", err)
	}
	if _, err := old.EnableHA(ctx, 3); !errors.As(err, &e) || e.Status != http.StatusMethodNotAllowed ||
		!strings.HasPrefix(e.Message, "the server does not serve POST /v1/controller/enable-ha (HTTP 405)") {
		t.Fatalf("no such method: got %#v", err)
	}
}

func TestPinnedCARejectsOtherCA(t *testing.T) {
	testkit.CheckLeaks(t)
	trusted, other := newTestCA(t), newTestCA(t)
	node := newFakeNode()
	srv := other.serve(t, node)
	c := newClient(t, api.ClientConfig{Addresses: []string{addr(srv)}, CACert: trusted.pem})

	_, err := c.Model(model).Applications(t.Context())
	var verr *tls.CertificateVerificationError
	if !errors.As(err, &verr) {
		t.Fatalf("got %v, want a certificate verification error", err)
	}
	if got := node.received(); len(got) != 0 {
		t.Fatalf("request reached an untrusted server: %+v", got)
	}
}

func TestReadYourWrites(t *testing.T) {
	testkit.CheckLeaks(t)
	ca := newTestCA(t)
	node := newFakeNode()
	srv := ca.serve(t, node)
	ryw := newClient(t, api.ClientConfig{Addresses: []string{addr(srv)}, CACert: ca.pem, ReadYourWrites: true})
	plain := newClient(t, api.ClientConfig{Addresses: []string{addr(srv)}, CACert: ca.pem})
	ctx := t.Context()

	if _, err := ryw.Model(model).Deploy(ctx, api.DeployRequest{Application: "kv"}); err != nil {
		t.Fatal(err)
	}
	if ryw.Index() != 11 {
		t.Fatalf("index %d after the write, want 11", ryw.Index())
	}
	if _, err := ryw.Model(model).Applications(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := ryw.Model(model).Applications(ctx, api.ReadOptions{Index: 50, Consistent: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := plain.Model(model).Applications(ctx); err != nil {
		t.Fatal(err)
	}
	got := node.received()
	want := []string{"", "index=11", "consistent=true&index=50", ""}
	for i, w := range want {
		if got[i].Query != w {
			t.Errorf("request %d (%s %s): query %q, want %q", i, got[i].Method, got[i].Path, got[i].Query, w)
		}
	}
	if plain.Index() != 11 {
		t.Fatalf("plain client index %d, want 11", plain.Index())
	}
}

func TestAuthHeaders(t *testing.T) {
	testkit.CheckLeaks(t)
	ca := newTestCA(t)
	node := newFakeNode()
	srv := ca.serve(t, node)
	basic := newClient(t, api.ClientConfig{Addresses: []string{addr(srv)}, CACert: ca.pem, User: "admin", Password: "pw"})
	bearer := newClient(t, api.ClientConfig{Addresses: []string{addr(srv)}, CACert: ca.pem, Token: "tok"})
	// Extra headers go with every request; the credential stays the client's.
	extra := newClient(t, api.ClientConfig{Addresses: []string{addr(srv)}, CACert: ca.pem, Token: "tok",
		Header: http.Header{"Cache-Control": {"no-store"}, "Authorization": {"Bearer other"}}})
	for _, c := range []*api.Client{basic, bearer, extra} {
		if _, err := c.Model(model).Applications(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	got := node.received()
	if got[0].Auth != "Basic YWRtaW46cHc=" || got[1].Auth != "Bearer tok" || got[2].Auth != "Bearer tok" {
		t.Fatalf("auth headers %q, %q, %q", got[0].Auth, got[1].Auth, got[2].Auth)
	}
	if got[1].CacheControl != "" || got[2].CacheControl != "no-store" {
		t.Fatalf("Cache-Control %q without extra headers, %q with", got[1].CacheControl, got[2].CacheControl)
	}
}

func TestFollowAddresses(t *testing.T) {
	testkit.CheckLeaks(t)
	ca := newTestCA(t)
	first, second := newFakeNode(), newFakeNode()
	srv1, srv2 := ca.serve(t, first), ca.serve(t, second)
	first.apiAddrs = []string{addr(srv2)}
	c := newClient(t, api.ClientConfig{Addresses: []string{addr(srv1)}, CACert: ca.pem, FollowAddresses: true})

	if _, err := c.Model(model).Applications(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := c.Addresses(); !slices.Equal(got, []string{addr(srv2)}) {
		t.Fatalf("addresses %v, want %v", got, []string{addr(srv2)})
	}
	if _, err := c.Model(model).Applications(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := second.received(); len(got) != 1 || got[0].Path != "/v1/models/"+model+"/applications" {
		t.Fatalf("second node saw %+v", got)
	}
	if got := first.received(); len(got) != 2 || got[1].Path != "/v1/controller" {
		t.Fatalf("first node saw %+v", got)
	}
}

func TestCallHonoursContext(t *testing.T) {
	testkit.CheckLeaks(t)
	ca := newTestCA(t)
	srv := ca.serve(t, newFakeNode())
	c := newClient(t, api.ClientConfig{Addresses: []string{addr(srv)}, CACert: ca.pem})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := c.Model(model).Applications(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
}
