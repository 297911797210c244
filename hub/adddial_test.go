package hub_test

import (
	"encoding/json"
	"encoding/pem"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/internal/pki"
)

// TestAddControllerSaysWhyItCannotReachIt (issue 26, finding 12): a
// controller the hub cannot use is answered with what is wrong, in the
// hub's words, never the Go dial error (addresses, resolver and TLS
// internals): nothing answering, a certificate the given CA did not sign,
// and a server that is not a Drover controller.
func TestAddControllerSaysWhyItCannotReachIt(t *testing.T) {
	e := newEnv(t)
	tok := e.hubAdmin()

	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := closed.Addr().String()
	closed.Close()
	web := httptest.NewTLSServer(http.NotFoundHandler())
	t.Cleanup(web.Close)
	webCA := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: web.Certificate().Raw}))
	otherCA, err := pki.NewCA("other", time.Now())
	if err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct {
		what, url, ca string
		status        int
		code          api.Code
		says          string
	}{
		{"nothing listening", "https://" + deadAddr, webCA, http.StatusBadGateway, api.CodeUnavailable, "unreachable"},
		{"another CA's certificate", web.URL, string(otherCA.CertPEM), http.StatusBadRequest, api.CodeBadRequest, "TLS verification failed"},
		{"not a controller", web.URL, webCA, http.StatusBadRequest, api.CodeBadRequest, "not a Drover controller"},
	} {
		code, out := e.do("POST", "/v1/controllers", tok, map[string]string{"name": "east", "url": c.url, "ca-cert": c.ca, "region": "eu-west-1"})
		var ae api.Error
		_ = json.Unmarshal(out, &ae)
		if code != c.status || ae.Code != c.code || !strings.Contains(ae.Message, c.says) {
			t.Errorf("%s: %d %s, want %d %s saying %q", c.what, code, out, c.status, c.code, c.says)
		}
		for _, leak := range []string{"dial tcp", "connect:", "x509", "tls:", "read tcp", "Get \""} {
			if strings.Contains(ae.Message, leak) {
				t.Errorf("%s: the answer leaks the Go error (%q): %s", c.what, leak, ae.Message)
			}
		}
	}
}
