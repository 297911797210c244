package api_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/droverhq/drover/api"
)

// testCA is a throwaway CA; the api package cannot use spoke's pki.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newTestCA(t testing.TB) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &testCA{cert: cert, key: key, pem: pemCert(der)}
}

func pemCert(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// leaf issues a serving certificate for 127.0.0.1.
func (ca *testCA) leaf(t testing.TB) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "node"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// serve starts a TLS server with a certificate from ca; it stops at cleanup.
func (ca *testCA) serve(t testing.TB, h http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{ca.leaf(t)}}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // failed handshakes are expected
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

func addr(srv *httptest.Server) string { return srv.Listener.Addr().String() }

// call is one request a fake node received.
type call struct {
	Method, Path, Query, Auth, CacheControl string
}

// fakeNode implements a few routes of a controller node, recording every
// request. Writes bump its raft index; every answer carries it.
type fakeNode struct {
	mux *http.ServeMux

	mu          sync.Mutex
	index       uint64
	calls       []call
	unavailable bool     // answer every request 503 unavailable
	apiAddrs    []string // ControllerInfo.APIAddresses
}

func newFakeNode() *fakeNode {
	n := &fakeNode{mux: http.NewServeMux(), index: 10}
	n.mux.HandleFunc("GET /v1/controller", func(w http.ResponseWriter, r *http.Request) {
		n.mu.Lock()
		info := api.ControllerInfo{Name: "ctl", APIAddresses: n.apiAddrs}
		n.mu.Unlock()
		n.reply(w, http.StatusOK, info)
	})
	n.mux.HandleFunc("GET /v1/models/{model}/applications", func(w http.ResponseWriter, r *http.Request) {
		n.reply(w, http.StatusOK, []api.Application{{ModelUUID: r.PathValue("model"), Name: "kv"}})
	})
	n.mux.HandleFunc("POST /v1/models/{model}/applications", func(w http.ResponseWriter, r *http.Request) {
		var req api.DeployRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			n.reply(w, http.StatusBadRequest, api.Errorf(api.CodeBadRequest, "%v", err))
			return
		}
		n.mu.Lock()
		n.index++
		n.mu.Unlock()
		n.reply(w, http.StatusOK, api.DeployResult{Application: api.Application{Name: req.Application}})
	})
	n.mux.HandleFunc("GET /v1/models/{model}/units/{app}/{n}", func(w http.ResponseWriter, r *http.Request) {
		n.reply(w, http.StatusNotFound, &api.Error{Code: api.CodeNotFound,
			Message: "unit " + r.PathValue("app") + "/" + r.PathValue("n") + " not found",
			Details: map[string]any{"unit": r.PathValue("app") + "/" + r.PathValue("n")}})
	})
	n.mux.HandleFunc("GET /v1/charms", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write([]byte("<html>upstream exploded</html>"))
	})
	return n
}

func (n *fakeNode) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n.mu.Lock()
	n.calls = append(n.calls, call{r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Get("Authorization"), r.Header.Get("Cache-Control")})
	down := n.unavailable
	n.mu.Unlock()
	if down {
		n.reply(w, http.StatusServiceUnavailable, api.Errorf(api.CodeUnavailable, "no raft leader"))
		return
	}
	n.mux.ServeHTTP(w, r)
}

func (n *fakeNode) reply(w http.ResponseWriter, status int, v any) {
	n.mu.Lock()
	idx := n.index
	n.mu.Unlock()
	w.Header().Set(api.HeaderIndex, strconv.FormatUint(idx, 10))
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v) // the client sees a short body as a decode error
}

func (n *fakeNode) received() []call {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]call(nil), n.calls...)
}

func newClient(t testing.TB, cfg api.ClientConfig) *api.Client {
	t.Helper()
	c, err := api.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}
