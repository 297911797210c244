package hub_test

import (
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/droverhq/drover/authz"
	"github.com/droverhq/drover/hub"
	"github.com/droverhq/drover/hub/internal/hubtest"
	"github.com/droverhq/drover/hub/internal/store"
	"github.com/droverhq/drover/tests/testkit"
)

// cutDatabase makes the hub's database refuse connections, and ends the
// ones it holds, as a stopped or restarting server does; the returned
// function lets it be reached again.
func cutDatabase(t *testing.T, dsn string) (restore func()) {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	name := strings.TrimPrefix(u.Path, "/")
	set := func(allow bool) {
		t.Helper()
		pg := hubtest.Postgres()
		if err := pg.Exec(t.Context(), "postgres", fmt.Sprintf("ALTER DATABASE %s ALLOW_CONNECTIONS %t", pgx.Identifier{name}.Sanitize(), allow)); err != nil {
			t.Fatal(err)
		}
		if !allow {
			if err := pg.Exec(t.Context(), "postgres", "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1", name); err != nil {
				t.Fatal(err)
			}
		}
	}
	set(false)
	return func() { set(true) }
}

// TestDatabaseOutage: while the hub cannot use its database, it answers
// 503 "unavailable" (which clients retry), not a 500 or a 401, and it
// makes no change it cannot record in the audit log, even when everything
// else the change needs is still cached. Once the database is back, the
// hub serves again with no restart.
func TestDatabaseOutage(t *testing.T) {
	f := newProxyFixture(t)
	will, alice := f.token(f.will, time.Minute, ""), f.token(f.alice, time.Minute, "")
	config := "/v1/models/" + f.model + "/config"
	set := func(n int) (int, []byte) {
		return f.do(http.MethodPatch, config, will, map[string]any{"set": map[string]any{"logging-config": fmt.Sprintf("<root>=DEBUG;n%d=INFO", n)}})
	}
	if code, b := set(1); code != http.StatusOK {
		t.Fatalf("a write before the outage: %d %s", code, b)
	}

	restore := cutDatabase(t, f.cfg.DSN)
	unavailable := func(what string, code int, b []byte) {
		t.Helper()
		var e struct{ Code, Message string }
		if err := json.Unmarshal(b, &e); err != nil || code != http.StatusServiceUnavailable || e.Code != "unavailable" ||
			e.Message != "the hub's database is unavailable (try again shortly; if this lasts, the hub's operator checks its PostgreSQL server)" {
			t.Errorf("%s while the database is out of reach: %d %s", what, code, b)
		}
	}
	// The caller, the decision and the route are cached from the write
	// above: only the audit log needs the database.
	code, b := set(2)
	unavailable("a write", code, b)
	code, b = f.do(http.MethodGet, "/v1/models", alice, nil)
	unavailable("the models listing", code, b)
	code, b = f.do(http.MethodGet, "/v1/models", f.token(f.rita, time.Minute, ""), nil)
	unavailable("a caller the hub has not seen lately", code, b)
	if n := f.metric(`drover_hub_dependency_unavailable_total{dependency="postgres"}`); n != 3 {
		t.Errorf("requests counted unavailable for want of postgres: %v, want 3", n)
	}

	got, err := f.spoke.Admin.Model(f.model).Config(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if lc := fmt.Sprint(got["logging-config"]); strings.Contains(lc, "n2") {
		t.Errorf("the controller applied a write the hub could not record: logging-config %q", lc)
	}

	restore()
	testkit.EventuallyWithin(t, 30*time.Second, func() (bool, error) {
		code, _ := set(3)
		return code == http.StatusOK, nil
	}, "writes through the hub once its database is back")

	var out struct {
		Entries []struct {
			Result  string
			Details struct {
				Body map[string]any
			}
		}
	}
	f.get("/v1/audit?operation=model-config", f.hubAdmin(), &out)
	var results []string
	for _, e := range out.Entries {
		results = append(results, e.Result)
	}
	if len(results) == 0 || results[0] != "ok" || strings.Contains(strings.Join(results, " "), "pending") {
		t.Errorf("model-config audit entries after the outage: %v; want them all ok, none pending", results)
	}
}

// gate relays TCP connections to target while open; closing it ends the
// connections it relays and refuses new ones, as a server that went down.
type gate struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	open   bool
	conns  map[net.Conn]struct{}
}

func newGate(t *testing.T, target string) *gate {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := &gate{ln: ln, target: target, open: true, conns: map[net.Conn]struct{}{}}
	t.Cleanup(func() { ln.Close(); g.set(false) })
	go g.serve()
	return g
}

func (g *gate) serve() {
	for {
		c, err := g.ln.Accept()
		if err != nil {
			return
		}
		g.mu.Lock()
		open := g.open
		if open {
			g.conns[c] = struct{}{}
		}
		g.mu.Unlock()
		if !open {
			c.Close()
			continue
		}
		go func() {
			up, err := net.Dial("tcp", g.target)
			if err != nil {
				c.Close()
				return
			}
			g.mu.Lock()
			g.conns[up] = struct{}{}
			g.mu.Unlock()
			go func() { _, _ = io.Copy(up, c); up.Close() }()
			_, _ = io.Copy(c, up)
			c.Close()
		}()
	}
}

// set opens or closes the gate; closing ends every relayed connection.
func (g *gate) set(open bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.open = open
	if !open {
		for c := range g.conns {
			c.Close()
		}
		clear(g.conns)
	}
}

// TestPermissionServiceOutage: while OpenFGA is out of reach, a request
// that needs a permission decision the hub has not cached answers 503
// "unavailable", saying what is missing and that it may be retried; once
// OpenFGA is back, the hub serves again with no restart.
func TestPermissionServiceOutage(t *testing.T) {
	u, err := url.Parse(hubtest.OpenFGAURL())
	if err != nil {
		t.Fatal(err)
	}
	g := newGate(t, u.Host)
	e := newEnv(t, func(c *hub.Config) { c.OpenFGAURL = "http://" + g.ln.Addr().String() })
	bob := e.token(e.user("bob", "acme"), time.Minute, "")
	if code, b := e.do(http.MethodGet, "/v1/models", bob, nil); code != http.StatusOK {
		t.Fatalf("models: %d %s", code, b)
	}
	g.set(false)
	carol := e.token(e.user("carol", "acme"), time.Minute, "")
	code, b := e.do(http.MethodGet, "/v1/models", carol, nil)
	var ae struct{ Code, Message string }
	if err := json.Unmarshal(b, &ae); err != nil || code != http.StatusServiceUnavailable || ae.Code != "unavailable" ||
		ae.Message != "the hub cannot reach its permission service (try again shortly; if this lasts, the hub's operator checks OpenFGA)" {
		t.Errorf("models while OpenFGA is out of reach: %d %s", code, b)
	}
	if n := e.metric(`drover_hub_dependency_unavailable_total{dependency="openfga"}`); n != 1 {
		t.Errorf("requests counted unavailable for want of OpenFGA: %v, want 1", n)
	}
	// A grant recorded meanwhile waits in the outbox, and the metrics say
	// how far OpenFGA is behind.
	e.grant(authz.UserObject(e.user("dave", "acme").ID), authz.Administrator, authz.OrgObject("acme"))
	testkit.EventuallyWithin(t, 30*time.Second, func() (bool, error) {
		return e.metric("drover_hub_authz_delivery_failures_total") >= 1, nil
	}, "a delivery to OpenFGA failing")
	if n := e.metric("drover_hub_authz_outbox_undelivered"); n < 1 {
		t.Errorf("outbox entries counted undelivered while OpenFGA is out of reach: %v", n)
	}
	delivered := e.metric("drover_hub_authz_tuples_delivered_total")
	g.set(true)
	testkit.EventuallyWithin(t, 30*time.Second, func() (bool, error) {
		code, _ := e.do(http.MethodGet, "/v1/models", carol, nil)
		return code == http.StatusOK, nil
	}, "the models listing once OpenFGA is back")
	e.settle()
	if n := e.metric("drover_hub_authz_outbox_undelivered"); n != 0 {
		t.Errorf("outbox entries counted undelivered once delivered: %v", n)
	}
	if n := e.metric("drover_hub_authz_tuples_delivered_total"); n <= delivered {
		t.Errorf("tuples counted delivered: %v, then %v", delivered, n)
	}
}

// switchedTransport fails requests while down (only those for paths
// ending in onlySuffix, if set), as an unreachable server does, and
// otherwise sends them.
type switchedTransport struct {
	down       atomic.Bool
	hung       atomic.Bool // answers nothing until the request is given up
	onlySuffix string
}

func (s *switchedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if s.hung.Load() {
		<-r.Context().Done()
		return nil, r.Context().Err()
	}
	if s.down.Load() && strings.HasSuffix(r.URL.Path, s.onlySuffix) {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	}
	return http.DefaultTransport.RoundTrip(r)
}

// TestIdentityProviderOutage: a hub whose OIDC issuer does not answer
// still starts and serves the sessions it issued; a login answers 503,
// in the API's shape and OAuth's, saying the issuer is out of reach (not
// that the credentials are wrong, and not a 500); once the issuer answers,
// logins work with no restart: an issuer outage never stops a hub from
// starting.
func TestIdentityProviderOutage(t *testing.T) {
	idpNet := &switchedTransport{}
	idpNet.down.Store(true)
	e := newEnv(t, func(c *hub.Config) { c.OIDCHTTPClient = &http.Client{Transport: idpNet} })
	bob := e.token(e.user("bob", "acme"), time.Minute, "")
	if code, b := e.do(http.MethodGet, "/v1/models", bob, nil); code != http.StatusOK {
		t.Fatalf("a session the hub issued, while its issuer is out of reach: %d %s", code, b)
	}
	const says = "the hub cannot reach its identity provider (try again shortly; if this lasts, the hub's operator checks the OIDC issuer)"
	sa := url.Values{"grant_type": {"client_credentials"}, "client_id": {saAcme.ID}, "client_secret": {saAcme.Secret}}
	unavailable := func(what string, deviceToo bool) {
		t.Helper()
		resp, err := http.PostForm(e.url+"/v1/auth/token", sa)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body struct {
			Code, Message, Error string
			ErrorDescription     string `json:"error_description"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&body)
		if resp.StatusCode != http.StatusServiceUnavailable || body.Code != "unavailable" || body.Message != says ||
			body.Error != "temporarily_unavailable" || body.ErrorDescription != says || resp.Header.Get("Retry-After") == "" {
			t.Errorf("a service account's login %s: %d %+v", what, resp.StatusCode, body)
		}
		if !deviceToo {
			return
		}
		code, b := e.do(http.MethodPost, "/v1/auth/device", "", nil)
		if code != http.StatusServiceUnavailable || !strings.Contains(string(b), says) {
			t.Errorf("a device login %s: %d %s", what, code, b)
		}
	}
	unavailable("before the issuer was ever reached", true)
	if n := e.metric(`drover_hub_dependency_unavailable_total{dependency="oidc"}`); n != 2 {
		t.Errorf("requests counted unavailable for want of the issuer: %v, want 2", n)
	}

	idpNet.down.Store(false)
	testkit.EventuallyWithin(t, 30*time.Second, func() (bool, error) {
		code, _ := e.form("/v1/auth/token", sa)
		return code == http.StatusOK, nil
	}, "a service account's login once the issuer answers")

	idpNet.down.Store(true)
	unavailable("after the issuer was discovered", true)

	// The issuer's keys out of reach (fetched at the first login) are its
	// outage too, not a bad token.
	keysNet := &switchedTransport{onlySuffix: "/keys"}
	keysNet.down.Store(true)
	e = newEnv(t, func(c *hub.Config) { c.OIDCHTTPClient = &http.Client{Transport: keysNet} })
	unavailable("while the issuer's keys cannot be fetched", false) // starting a device login needs no keys
}

// TestAuditSaysWhatIsInFlight: a change's audit entry, written before the
// request is forwarded, already says what the change is (operation, its
// target, the model). The hub completes it with the result; when it cannot
// (its database was lost meanwhile), the entry stays pending, still saying
// what was asked, and the hub counts it for its operator.
func TestAuditSaysWhatIsInFlight(t *testing.T) {
	for _, lostDB := range []bool{false, true} {
		t.Run(fmt.Sprintf("database lost %v", lostDB), func(t *testing.T) {
			e := newEnv(t)
			ctx := t.Context()
			held := make(chan struct{})
			silent := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body) // then a closed connection ends the request's context
				close(held)
				<-r.Context().Done() // answers nothing until the connection goes
			}))
			t.Cleanup(silent.Close)
			ctl := store.Controller{UUID: uuid.NewString(), Name: "mute", Region: "r1", Cloud: "localhost",
				APIAddresses: []string{strings.TrimPrefix(silent.URL, "https://")},
				CACert:       string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: silent.Certificate().Raw}))}
			if err := e.st.Controllers.Upsert(ctx, ctl); err != nil {
				t.Fatal(err)
			}
			alice := e.user("alice", "acme")
			m := store.Model{UUID: uuid.NewString(), Name: "shop", Org: "acme", Owner: alice.ID, ControllerUUID: ctl.UUID}
			if err := e.st.Models.Insert(ctx, m); err != nil {
				t.Fatal(err)
			}
			e.settle()
			done := make(chan struct{})
			go func() {
				defer close(done)
				req, _ := http.NewRequestWithContext(ctx, http.MethodPatch, e.url+"/v1/models/"+m.UUID+"/applications/webapp/config",
					strings.NewReader(`{"set":{"port":8081}}`))
				req.Header.Set("Authorization", "Bearer "+e.token(alice, time.Minute, ""))
				req.Header.Set("Content-Type", "application/json")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					return
				}
				defer resp.Body.Close()
				if b, _ := io.ReadAll(resp.Body); resp.StatusCode != http.StatusBadGateway {
					t.Errorf("a change the controller never answered: %d %s", resp.StatusCode, b)
				}
			}()
			select {
			case <-held: // the controller has the request: its entry is written, its end not yet
			case <-done:
				t.Fatal("the hub answered before the controller had the request")
			}
			es, _, err := e.st.Audit.Query(ctx, store.AuditQuery{All: true, Limit: 10})
			if err != nil || len(es) == 0 {
				t.Fatalf("audit: %v %v", es, err)
			}
			got := es[0]
			if got.Result != store.ResultPending || got.Operation != "config" || got.Details["target"] != "webapp" ||
				got.ModelUUID != m.UUID || got.Model != "shop" || got.Actor != alice.Name() {
				t.Errorf("the entry of a change in flight: %+v", got)
			}
			var restore func()
			if lostDB {
				restore = cutDatabase(t, e.cfg.DSN)
			}
			silent.CloseClientConnections() // the controller goes away: the hub answers, and records how it ended if it can
			<-done
			want, wantStatus, unfinished := store.ResultError, http.StatusBadGateway, 0.0
			if lostDB {
				restore()
				want, wantStatus, unfinished = store.ResultPending, 0, 1
			}
			testkit.EventuallyWithin(t, 30*time.Second, func() (bool, error) { // the pool's connections were ended
				es, _, err = e.st.Audit.Query(ctx, store.AuditQuery{All: true, Limit: 10})
				return err == nil, nil
			}, "the audit log readable again")
			if len(es) == 0 || es[0].ID != got.ID || es[0].Result != want || es[0].Status != wantStatus ||
				es[0].Operation != "config" {
				t.Errorf("the entry once the change failed: %+v %v; want %s, status %d", es, err, want, wantStatus)
			}
			if n := e.metric("drover_hub_audit_entries_unfinished_total"); n != unfinished {
				t.Errorf("audit entries counted unfinished: %v, want %v", n, unfinished)
			}
		})
	}
}

// metric reads one sample of the hub's /metrics, as "name" or
// `name{label="value"}`; -1 when it is not there.
func (e *env) metric(sample string) float64 {
	e.t.Helper()
	_, b := e.do(http.MethodGet, "/metrics", "", nil)
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, sample+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				e.t.Fatalf("metric %s: %q", sample, l)
			}
			return f
		}
	}
	return -1
}

// TestAuditNamesHubChangesInFlight: a change of the hub's own (here
// add-controller, waiting on a controller that does not answer) is named
// in its audit entry before it is served, as a model's change is, so an
// entry left pending says what it was, not just "POST /v1/controllers".
func TestAuditNamesHubChangesInFlight(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	held := make(chan struct{})
	var once sync.Once
	silent := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		once.Do(func() { close(held) })
		<-r.Context().Done()
	}))
	t.Cleanup(silent.Close)
	admin := e.hubAdmin()
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.do(http.MethodPost, "/v1/controllers", admin, map[string]string{"name": "mute", "url": silent.URL, "region": "r1",
			"ca-cert": string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: silent.Certificate().Raw}))})
	}()
	select {
	case <-held:
	case <-done:
		t.Fatal("the hub answered before it asked the controller")
	}
	es, _, err := e.st.Audit.Query(ctx, store.AuditQuery{All: true, Limit: 1})
	if err != nil || len(es) != 1 || es[0].Result != store.ResultPending || es[0].Operation != "add-controller" {
		t.Errorf("the entry of add-controller in flight: %+v %v", es, err)
	}
	silent.CloseClientConnections()
	<-done
}
