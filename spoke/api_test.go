package spoke

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/api"
)

// rawClient speaks HTTP to a node directly, for requests the typed client
// would never send.
func (c *testCluster) rawClient() *http.Client {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM([]byte(c.cred.CACert))
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
}

func (c *testCluster) raw(t *testing.T, method, path, body string) (int, api.Error) {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), method, "https://"+c.nodes[0].cfg.Listen+path, strings.NewReader(body))
	req.SetBasicAuth(c.cred.User, c.cred.Password)
	resp, err := c.rawClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var e api.Error
	_ = jsonUnmarshal(b, &e)
	return resp.StatusCode, e
}

// TestBadInputGetsTypedErrors sends malformed bodies, invalid names,
// config values, placements and archives: each gets a clear message with
// a stable code, and nothing is written.
func TestBadInputGetsTypedErrors(t *testing.T) {
	c := newTestCluster(t, 1)
	ctx := t.Context()
	cl := c.client(0)
	m, err := cl.AddModel(ctx, api.AddModelRequest{Name: "bad"})
	if err != nil {
		t.Fatal(err)
	}
	ch, err := cl.UploadCharm(ctx, bytes.NewReader(archive(t, "testdata/charms/kv")))
	if err != nil {
		t.Fatal(err)
	}
	models := "/v1/models/" + m.UUID
	for _, tc := range []struct {
		name, method, path, body string
		status                   int
		code                     api.Code
		msg                      string
	}{
		{"truncated JSON", "POST", "/v1/models", `{"name":`, 400, api.CodeBadRequest, "malformed JSON"},
		{"unknown field", "POST", "/v1/models", `{"nam":"x"}`, 400, api.CodeBadRequest, `unknown field "nam"`},
		{"trailing data", "POST", "/v1/models", `{"name":"x"} {}`, 400, api.CodeBadRequest, "after the JSON object"},
		{"empty body", "POST", "/v1/models", ``, 400, api.CodeBadRequest, "empty"},
		{"bad model name", "POST", "/v1/models", `{"name":"Prod!"}`, 422, api.CodeInvalid, "invalid model name"},
		{"duplicate model", "POST", "/v1/models", `{"name":"bad"}`, 409, api.CodeAlreadyExists, "already exists"},
		{"bad model config", "PATCH", models + "/config", `{"set":{"update-status-hook-interval":"soon"}}`, 422, api.CodeInvalid, "duration"},
		{"bad app name", "POST", models + "/applications", `{"application":"Kv","charm-sha256":"` + ch.SHA256 + `","num-units":1}`, 422, api.CodeInvalid, "invalid application name"},
		{"unknown charm", "POST", models + "/applications", `{"application":"kv","charm-sha256":"00","num-units":1}`, 404, api.CodeNotFound, "upload it first"},
		{"mistyped config", "POST", models + "/applications", `{"application":"kv","charm-sha256":"` + ch.SHA256 + `","num-units":1,"config":{"port":"seven"}}`, 422, api.CodeInvalid, "port"},
		{"unknown option", "POST", models + "/applications", `{"application":"kv","charm-sha256":"` + ch.SHA256 + `","num-units":1,"config-strings":{"nope":"1"}}`, 422, api.CodeInvalid, "nope"},
		{"bad placement", "POST", models + "/applications", `{"application":"kv","charm-sha256":"` + ch.SHA256 + `","num-units":1,"to":["lxd:"]}`, 422, api.CodeInvalid, "placement"},
		{"negative units", "POST", models + "/applications", `{"application":"kv","charm-sha256":"` + ch.SHA256 + `","num-units":-1}`, 422, api.CodeInvalid, "negative"},
		{"bad constraints", "POST", models + "/applications", `{"application":"kv","charm-sha256":"` + ch.SHA256 + `","num-units":1,"constraints":"memory=4G"}`, 422, api.CodeInvalid, `unknown constraint "memory"`},
		{"bad machine constraints", "POST", models + "/machines", `{"constraints":"mem=lots"}`, 422, api.CodeInvalid, "want a size"},
		{"too many machines", "POST", models + "/machines", `{"num-machines":101}`, 422, api.CodeInvalid, "want 1 to 100"},
		{"negative scale", "POST", models + "/applications/kv/scale", `{"scale":-1}`, 422, api.CodeInvalid, "must not be negative"},
		{"bad app constraints", "POST", models + "/applications/kv/constraints", `{"constraints":"cores=x"}`, 422, api.CodeInvalid, "whole number"},
		{"trust with unknown field", "POST", models + "/applications/kv/trust", `{"trusted":true}`, 400, api.CodeBadRequest, `unknown field "trusted"`},
		{"bad index", "GET", "/v1/models?index=x", ``, 400, api.CodeBadRequest, "index"},
		{"bad unit", "GET", models + "/units/kv/x", ``, 400, api.CodeBadRequest, "bad unit name"},
		{"missing model", "GET", "/v1/models/00000000-0000-4000-8000-000000000000", ``, 404, api.CodeNotFound, "not found"},
		{"not a zip", "POST", "/v1/charms", `definitely not a zip`, 422, api.CodeInvalid, "invalid charm archive"},
		{"no route", "GET", "/v1/nope", ``, 404, api.CodeNotFound, "no route"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, e := c.raw(t, tc.method, tc.path, tc.body)
			if status != tc.status || e.Code != tc.code || !strings.Contains(e.Message, tc.msg) {
				t.Fatalf("got %d %s %q; want %d %s containing %q", status, e.Code, e.Message, tc.status, tc.code, tc.msg)
			}
		})
	}
	// Nothing was half-written: still one model, no applications.
	if list, _ := cl.Models(ctx); len(list) != 1 {
		t.Fatalf("models after bad input: %+v", list)
	}
	if apps, _ := cl.Model(m.UUID).Applications(ctx); len(apps) != 0 {
		t.Fatalf("applications after bad input: %+v", apps)
	}
	// The typed client surfaces the same codes.
	if _, err := cl.AddModel(ctx, api.AddModelRequest{Name: "bad"}); !errors.Is(err, api.ErrAlreadyExists) {
		t.Fatalf("typed client error: %v", err)
	}
	// Wrong credentials are unauthorized, not a hint about users.
	bad, _ := api.NewClient(api.ClientConfig{Addresses: []string{c.nodes[0].cfg.Listen}, CACert: []byte(c.cred.CACert), User: "admin", Password: "wrong"})
	defer bad.Close()
	if _, err := bad.Models(ctx); !errors.Is(err, api.ErrUnauthorized) {
		t.Fatalf("wrong password: %v", err)
	}
}

// TestWatchResetDeltaResumeAndHealth exercises the model watch against a
// real node, and the health endpoints.
func TestWatchResetDeltaResumeAndHealth(t *testing.T) {
	c := newTestCluster(t, 1)
	ctx := t.Context()
	cl := c.client(0)
	m, err := cl.AddModel(ctx, api.AddModelRequest{Name: "watched"})
	if err != nil {
		t.Fatal(err)
	}
	ch, err := cl.UploadCharm(ctx, bytes.NewReader(archive(t, "testdata/charms/kv")))
	if err != nil {
		t.Fatal(err)
	}
	w, err := cl.Model(m.UUID).Watch(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	f, err := w.Next(ctx)
	if err != nil || f.Type != api.FrameReset || f.Status == nil || f.Status.Model.Name != "watched" {
		t.Fatalf("first frame %+v, %v", f, err)
	}
	resetAt := f.Index
	if _, err := cl.Model(m.UUID).Deploy(ctx, api.DeployRequest{Application: "kv", CharmSHA256: ch.SHA256, NumUnits: 1}); err != nil {
		t.Fatal(err)
	}
	sawApp := false
	for !sawApp {
		f, err = w.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Deltas {
			sawApp = sawApp || (d.Kind == "application" && d.Key == "kv")
		}
	}
	w.Close()
	// Resume from the reset's index: the deploy's deltas come again, no reset.
	w2, err := cl.Model(m.UUID).Watch(ctx, resetAt)
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Close()
	f, err = w2.Next(ctx)
	if err != nil || f.Type != api.FrameDelta || f.Index <= resetAt {
		t.Fatalf("resumed frame %+v, %v", f, err)
	}
	for _, path := range []string{"/healthz", "/readyz", "/metrics"} {
		resp, err := c.rawClient().Get("https://" + c.nodes[0].cfg.Listen + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || (path == "/metrics" && !bytes.Contains(b, []byte("drover_api_requests_total"))) {
			t.Fatalf("%s: %d %.80s", path, resp.StatusCode, b)
		}
	}
	// The metrics are the machine's own (issue 26, finding 12): relayed by
	// a proxy, the request is answered 404.
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+c.nodes[0].cfg.Listen+"/metrics", nil)
	req.Header.Set("X-Forwarded-For", "198.51.100.1")
	resp, err := c.rawClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound || bytes.Contains(b, []byte("drover_api_requests_total")) {
		t.Fatalf("/metrics relayed by a proxy: %d %.80s", resp.StatusCode, b)
	}
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
