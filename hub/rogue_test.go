package hub_test

import (
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/gorilla/websocket"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/authz"
	"github.com/droverhq/drover/hub"
	"github.com/droverhq/drover/hub/internal/store"
	"github.com/droverhq/drover/spoke"
	"github.com/droverhq/drover/tests/testkit"
)

// impostor is a server that claims to be the controller with uuid: it
// answers the identity the hub reads at registration and keeps every hub
// token the hub sends it.
type impostor struct {
	srv    *httptest.Server
	mu     sync.Mutex
	tokens []string
	// events, if set, is what it sends on the hub's event stream.
	events []byte
	// routes answer "METHOD PATH" in its place.
	routes map[string]http.HandlerFunc
}

// handle answers the route "METHOD PATH" with h.
func (im *impostor) handle(route string, h http.HandlerFunc) {
	im.mu.Lock()
	defer im.mu.Unlock()
	im.routes[route] = h
}

func newImpostor(t *testing.T, uuid string) *impostor {
	im := &impostor{routes: map[string]http.HandlerFunc{}}
	im.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		im.mu.Lock()
		h := im.routes[r.Method+" "+r.URL.Path]
		im.mu.Unlock()
		if h != nil {
			h(w, r)
			return
		}
		if a := r.Header.Get("Authorization"); a != "" {
			im.mu.Lock()
			im.tokens = append(im.tokens, strings.TrimPrefix(a, "Bearer "))
			im.mu.Unlock()
		}
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/v1/internal/identity":
			json.NewEncoder(w).Encode(api.ControllerIdentity{UUID: uuid, Name: "east", APIAddresses: []string{im.srv.Listener.Addr().String()}})
		case "/v1/controller":
			json.NewEncoder(w).Encode(api.ControllerInfo{UUID: uuid, Name: "east"})
		case "/v1/events":
			conn, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
			if err != nil {
				return
			}
			defer conn.Close()
			im.mu.Lock()
			frame := im.events
			im.mu.Unlock()
			conn.WriteMessage(websocket.TextMessage, frame)
			conn.ReadMessage() // until the hub hangs up
		default:
			// A model's answers: a page that would run in the caller's
			// browser on the hub's origin, with a cookie for it.
			if strings.HasSuffix(r.URL.Path, "/watch") {
				conn, err := (&websocket.Upgrader{}).Upgrade(w, r, http.Header{"Set-Cookie": {"__Host-drover_session=planted; Path=/"}})
				if err == nil {
					conn.WriteMessage(websocket.TextMessage, []byte(`{"type":"reset"}`))
					conn.Close()
				}
				return
			}
			if strings.HasPrefix(r.URL.Path, "/v1/models/") {
				w.Header().Set("Content-Type", "text/html")
				w.Header().Set("Set-Cookie", "__Host-drover_session=planted; Path=/")
				w.Header().Set("Location", "https://evil.example/")
				w.Write([]byte("<script>steal()</script>"))
				return
			}
			w.Write([]byte("{}"))
		}
	}))
	t.Cleanup(im.srv.Close)
	return im
}

func (im *impostor) caPEM() string {
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: im.srv.Certificate().Raw}))
}

func (im *impostor) taken() []string {
	im.mu.Lock()
	defer im.mu.Unlock()
	return append([]string(nil), im.tokens...)
}

// TestRegistrationCannotImpersonateAController: an organization's
// administrator (who may register controllers private to it) registers a
// server of their own that claims a shared controller's UUID. The hub must
// neither hand that server a token the real controller accepts, nor let the
// registration take over the real controller's record, through which every
// tenant's requests to its models would then go to the impostor.
func TestRegistrationCannotImpersonateAController(t *testing.T) {
	e := newEnv(t)
	alice := e.user("alice", "acme")
	e.grant(authz.UserObject(alice.ID), authz.Administrator, authz.OrgObject("acme"))
	olga := e.user("olga", "globex")
	e.grant(authz.UserObject(olga.ID), authz.Administrator, authz.OrgObject("globex"))
	east := startSpoke(t, e)
	e.settle()
	atok := e.token(alice, 10*time.Minute, "")
	model := e.addModel(atok, "prod", "east")

	im := newImpostor(t, east.UUID)
	otok := e.token(olga, 10*time.Minute, "")
	for _, req := range []hub.AddControllerRequest{
		{Name: "mine", URL: im.srv.URL, CACert: im.caPEM(), Region: "east", Org: "globex"},
		{Name: "east", URL: im.srv.URL, CACert: im.caPEM(), Region: "east", Org: "globex"},
	} {
		code, b := e.do(http.MethodPost, "/v1/controllers", otok, req)
		if code < 400 {
			t.Errorf("registering a server that claims controller %s's UUID as %q: %d %s", east.UUID, req.Name, code, b)
		}
	}
	c, err := e.st.Controllers.ByName(t.Context(), "east")
	if err != nil || c.UUID != east.UUID || c.CACert != east.Registration.CACert || c.Org != "" {
		t.Fatalf("the shared controller's record after the attempts: %+v %v", c, err)
	}
	if code, b := e.do(http.MethodGet, "/v1/models/"+model+"/status", atok, nil); code != http.StatusOK {
		t.Fatalf("status of a model on the shared controller after the attempts: %d %s", code, b)
	}
	if got := im.taken(); len(got) != 0 {
		t.Fatalf("the hub sent the impostor %d tokens for the registered controller", len(got))
	}

	// A controller that trusts the hub but is not registered yet: a
	// server claiming its UUID is registered as a new controller, and is
	// sent the hub's superuser token for it (as any controller being
	// registered is). The real controller must refuse that token.
	labAddr, labCred := runSpoke(t, "lab", func(cfg *spoke.Config) {
		cfg.HubURL, cfg.HubJWKSURL = publicURL, e.url+"/.well-known/jwks.json"
	})
	labAdmin, err := api.NewClient(api.ClientConfig{Addresses: []string{labAddr}, CACert: []byte(labCred.CACert),
		User: labCred.User, Password: labCred.Password, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer labAdmin.Close()
	testkit.EventuallyWithin(t, 30*time.Second, func() (bool, error) {
		_, err := labAdmin.ControllerInfo(t.Context(), api.ReadOptions{})
		return err == nil, err
	}, "the controller bootstrapped (a refusal is then the token's)")
	im = newImpostor(t, labCred.ControllerUUID)
	code, b := e.do(http.MethodPost, "/v1/controllers", otok,
		hub.AddControllerRequest{Name: "mine", URL: im.srv.URL, CACert: im.caPEM(), Region: "east", Org: "globex"})
	if code != http.StatusCreated {
		t.Fatalf("registering a server as a new controller: %d %s", code, b)
	}
	taken := im.taken()
	if len(taken) == 0 {
		t.Fatal("the hub sent the registered server no token")
	}
	for _, tok := range taken {
		cl, err := api.NewClient(api.ClientConfig{Addresses: []string{labAddr}, CACert: []byte(labCred.CACert),
			Token: tok, Timeout: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		_, err = cl.ControllerInfo(t.Context(), api.ReadOptions{})
		cl.Close()
		var ae *api.Error
		if !errors.As(err, &ae) || ae.Code != api.CodeUnauthorized {
			t.Fatalf("the real controller answered a hub token the impostor was sent with %v, want unauthorized", err)
		}
	}
}

// TestRegisterAgain: a registered controller may be registered again by
// its administrators, to give it a new address, region or cloud; not under
// another name or owner, nor with another CA, nor by anyone else. A CA
// bundle is refused: the hub pins one certificate.
func TestRegisterAgain(t *testing.T) {
	e := newEnv(t)
	alice := e.user("alice", "acme")
	e.grant(authz.UserObject(alice.ID), authz.Administrator, authz.OrgObject("acme"))
	root := e.hubAdmin()
	atok := e.token(alice, 10*time.Minute, "")
	east := startSpoke(t, e)
	again := east.Registration
	again.Region = "east-2"
	private := again
	private.Org = "acme" // what an organization's administrator may register
	if code, b := e.do(http.MethodPost, "/v1/controllers", atok, private); code != http.StatusConflict ||
		!strings.Contains(string(b), "only its administrators may register it again") {
		t.Fatalf("an organization's administrator registering the shared controller again: %d %s", code, b)
	}
	im := newImpostor(t, east.UUID)
	for _, tc := range []struct {
		change func(*hub.AddControllerRequest)
		code   int
		want   string
	}{
		{func(r *hub.AddControllerRequest) { r.Name = "other" }, http.StatusConflict, "register it again under that name"},
		{func(r *hub.AddControllerRequest) { r.Org = "acme" }, http.StatusConflict, "does not change its owner"},
		{func(r *hub.AddControllerRequest) { r.URL, r.CACert = im.srv.URL, im.caPEM() }, http.StatusConflict, "not the one the hub pinned"},
		{func(r *hub.AddControllerRequest) { r.CACert += im.caPEM() }, http.StatusBadRequest, "not a bundle of 2"},
	} {
		req := again
		tc.change(&req)
		if code, b := e.do(http.MethodPost, "/v1/controllers", root, req); code != tc.code || !strings.Contains(string(b), tc.want) {
			t.Errorf("registering %+v again: %d %s, want %d %q", req, code, b, tc.code, tc.want)
		}
	}
	if c, err := e.st.Controllers.ByName(t.Context(), "east"); err != nil || c.Region != "east" {
		t.Fatalf("the controller after refused registrations: %+v %v", c, err)
	}
	if code, b := e.do(http.MethodPost, "/v1/controllers", root, again); code != http.StatusCreated {
		t.Fatalf("the hub's administrator registering the controller again: %d %s", code, b)
	}
	if c, err := e.st.Controllers.ByName(t.Context(), "east"); err != nil || c.Region != "east-2" || c.UUID != east.UUID {
		t.Fatalf("the controller registered again: %+v %v", c, err)
	}
}

// TestControllerCannotFloodTheHub: one frame of a controller's event
// stream larger than the bound is not read; the controller is shown
// disconnected, saying so, and the frame's models are not indexed.
func TestControllerCannotFloodTheHub(t *testing.T) {
	e := newEnv(t, func(c *hub.Config) { hub.SetMaxEventFrame(c, 4<<10) })
	runIndexer(t, e)
	root := e.hubAdmin()
	id := uuid.NewString()
	im := newImpostor(t, id)
	f := api.EventFrame{Type: api.EventFrameReset, Index: 1}
	for i := range 100 {
		f.Models = append(f.Models, api.ModelSummary{UUID: uuid.NewString(), Name: fmt.Sprintf("m%d", i), Life: api.Alive})
	}
	im.events, _ = json.Marshal(f)
	if len(im.events) <= 4<<10 {
		t.Fatalf("frame of %d bytes, want it over the bound", len(im.events))
	}
	if code, b := e.do(http.MethodPost, "/v1/controllers", root,
		hub.AddControllerRequest{Name: "flood", URL: im.srv.URL, CACert: im.caPEM(), Region: "east"}); code != http.StatusCreated {
		t.Fatalf("register: %d %s", code, b)
	}
	testkit.EventuallyWithin(t, 30*time.Second, func() (bool, error) {
		c, err := e.st.Controllers.ByUUID(t.Context(), id)
		if err != nil || c.Status != "disconnected" || !strings.Contains(fmt.Sprint(c.Health["error"]), "read limit exceeded") {
			return false, fmt.Errorf("controller %s %v (%v)", c.Status, c.Health, err)
		}
		return true, nil
	}, "the oversized frame refused")
	if n, err := e.st.Controllers.ModelSummaries(t.Context(), id); err != nil || len(n) != 0 {
		t.Fatalf("models indexed from the oversized frame: %v %v", n, err)
	}
}

// TestControllerAnswersCannotActInABrowser: a controller an organization
// registered answers, for a model on it that another organization's person
// was granted, a page with a cookie for the hub's origin. Through the hub,
// the caller gets bytes a browser will not run, and neither the cookie nor
// the redirect, on every path of the proxy (the first call, the remembered
// reads after it, a websocket upgrade).
func TestControllerAnswersCannotActInABrowser(t *testing.T) {
	e := newEnv(t)
	root := e.hubAdmin()
	alice := e.user("alice", "acme")
	id := uuid.NewString()
	im := newImpostor(t, id)
	if code, b := e.do(http.MethodPost, "/v1/controllers", root,
		hub.AddControllerRequest{Name: "theirs", URL: im.srv.URL, CACert: im.caPEM(), Region: "east", Org: "globex"}); code != http.StatusCreated {
		t.Fatalf("register: %d %s", code, b)
	}
	model := uuid.NewString()
	if err := e.st.Models.Insert(t.Context(), store.Model{UUID: model, Name: "shared", Org: "globex", ControllerUUID: id}); err != nil {
		t.Fatal(err)
	}
	e.grant(authz.UserObject(alice.ID), authz.Reader, authz.ModelObject(model))
	e.settle()
	tok := e.token(alice, 10*time.Minute, "")
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for i := range 3 {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, e.url+"/v1/models/"+model+"/status", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.Header.Get("Content-Type") != "application/octet-stream" || resp.Header.Get("X-Content-Type-Options") != "nosniff" ||
			len(resp.Cookies()) != 0 || resp.Header.Get("Location") != "" {
			t.Fatalf("call %d through the hub: %d %v %s", i, resp.StatusCode, resp.Header, b)
		}
	}
	d := websocket.Dialer{}
	conn, resp, err := d.DialContext(t.Context(), "ws"+strings.TrimPrefix(e.url, "http")+"/v1/models/"+model+"/watch",
		http.Header{"Authorization": {"Bearer " + tok}})
	if err != nil {
		t.Fatalf("watch through the hub: %v", err)
	}
	conn.Close()
	if len(resp.Cookies()) != 0 {
		t.Fatalf("the upgrade through the hub set cookies: %v", resp.Header)
	}
}

// TestModelNamesAreChecked: an add-model of a name no controller would
// take is refused before anything is claimed or any controller asked, and
// a model a controller reports under such a name is not adopted (the
// frame's other models are).
func TestModelNamesAreChecked(t *testing.T) {
	e := newEnv(t)
	runIndexer(t, e)
	root := e.hubAdmin()
	for _, name := range []string{"Bad_Name", "../x", "a--b", strings.Repeat("x", 10) + "\x1b[2K"} {
		code, b := e.do(http.MethodPost, "/v1/models", root, map[string]string{"name": name})
		if code != http.StatusBadRequest || !strings.Contains(string(b), "invalid model name") {
			t.Errorf("add-model %q: %d %s", name, code, b)
		}
	}
	id := uuid.NewString()
	im := newImpostor(t, id)
	good := uuid.NewString()
	im.events, _ = json.Marshal(api.EventFrame{Type: api.EventFrameReset, Index: 1, Models: []api.ModelSummary{
		{UUID: uuid.NewString(), Name: "Bad Name\x1b[2K", Life: api.Alive},
		{UUID: good, Name: "good", Life: api.Alive}}})
	if code, b := e.do(http.MethodPost, "/v1/controllers", root,
		hub.AddControllerRequest{Name: "reports", URL: im.srv.URL, CACert: im.caPEM(), Region: "east"}); code != http.StatusCreated {
		t.Fatalf("register: %d %s", code, b)
	}
	testkit.EventuallyWithin(t, 30*time.Second, func() (bool, error) {
		got, err := e.st.Controllers.ModelSummaries(t.Context(), id)
		if _, ok := got[good]; err != nil || len(got) != 1 || !ok {
			return false, fmt.Errorf("indexed %v (%v)", got, err)
		}
		return true, nil
	}, "only the well-named model adopted")
}
