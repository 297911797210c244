package web

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/droverhq/drover/web/internal/sourcehash"
)

var bigJS = strings.Repeat("console.log('drover');\n", 200)

func testHandler(t *testing.T) *Handler {
	t.Helper()
	h, err := New(Config{Mode: ModeController, Name: func() string { return "ctl-1" }, Version: "1.2.3",
		NotFound: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"code":"not-found"}`)
		}),
		FS: fstest.MapFS{
			"index.html":           {Data: []byte("<!doctype html><title>Drover</title>")},
			"assets/app-abc123.js": {Data: []byte(bigJS)},
			"favicon.svg":          {Data: []byte("<svg/>")},
			"source.sha256":        {Data: []byte("x\n")},
		}})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func get(t *testing.T, h http.Handler, method, target string, hdr ...string) *http.Response {
	t.Helper()
	r := httptest.NewRequest(method, target, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		r.Header.Set(hdr[i], hdr[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w.Result()
}

func body(t *testing.T, resp *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestDeepLinksOpenTheApp: any GET path of the app answers index.html,
// uncached, with the security headers.
func TestDeepLinksOpenTheApp(t *testing.T) {
	h := testHandler(t)
	for _, p := range []string{"/", "/models", "/models/alice/prod", "/controllers/ctl.eu-1", "/index.html"} {
		resp := get(t, h, "GET", p)
		if resp.StatusCode != 200 || !strings.Contains(body(t, resp), "<title>Drover</title>") {
			t.Fatalf("GET %s: %s, want index.html", p, resp.Status)
		}
		if got := resp.Header.Get("Cache-Control"); got != "no-cache" {
			t.Errorf("GET %s: Cache-Control %q", p, got)
		}
		checkSecurityHeaders(t, resp)
	}
}

func checkSecurityHeaders(t *testing.T, resp *http.Response) {
	t.Helper()
	want := map[string]string{
		"Content-Security-Policy": "default-src 'self'; connect-src 'self'; img-src 'self' data:; style-src 'self'; frame-ancestors 'none'; base-uri 'none'",
		"X-Content-Type-Options":  "nosniff",
		"Referrer-Policy":         "no-referrer",
	}
	for k, v := range want {
		if got := resp.Header.Get(k); got != v {
			t.Errorf("%s: %q, want %q", k, got, v)
		}
	}
}

// TestAPIPathsNeverFallBack: the servers' own paths, and unsafe methods,
// go to the NotFound handler.
func TestAPIPathsNeverFallBack(t *testing.T) {
	h := testHandler(t)
	for _, c := range []struct{ method, path string }{
		{"GET", "/v1"}, {"GET", "/v1/nope"}, {"GET", "/auth/whatever"}, {"GET", "/healthz"}, {"GET", "/readyz/x"},
		{"GET", "/metrics"}, {"GET", "/.well-known/nope"}, {"GET", "/debug/pprof/"}, {"POST", "/models"}, {"DELETE", "/"},
	} {
		resp := get(t, h, c.method, c.path)
		if resp.StatusCode != 404 || resp.Header.Get("Content-Type") != "application/json" {
			t.Errorf("%s %s: %s %s, want the JSON 404", c.method, c.path, resp.Status, resp.Header.Get("Content-Type"))
		}
	}
	// A path that only starts like an API prefix is the app's.
	if resp := get(t, h, "GET", "/v1beta"); resp.StatusCode != 200 {
		t.Errorf("GET /v1beta: %s", resp.Status)
	}
}

// TestAssetsAreImmutableAndCompressed: hashed assets are cached for good
// and sent gzipped to those who take it; a missing asset is a 404.
func TestAssetsAreImmutableAndCompressed(t *testing.T) {
	h := testHandler(t)
	resp := get(t, h, "GET", "/assets/app-abc123.js")
	if resp.StatusCode != 200 || body(t, resp) != bigJS {
		t.Fatalf("plain asset: %s", resp.Status)
	}
	if got := resp.Header.Get("Cache-Control"); got != "public, max-age=31536000, immutable" {
		t.Errorf("Cache-Control %q", got)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.Contains(ct, "javascript") {
		t.Errorf("Content-Type %q", ct)
	}
	checkSecurityHeaders(t, resp)
	etag := resp.Header.Get("ETag")

	resp = get(t, h, "GET", "/assets/app-abc123.js", "Accept-Encoding", "br, gzip")
	if resp.Header.Get("Content-Encoding") != "gzip" || resp.Header.Get("Vary") != "Accept-Encoding" {
		t.Fatalf("gzip asset: encoding %q vary %q", resp.Header.Get("Content-Encoding"), resp.Header.Get("Vary"))
	}
	zr, err := gzip.NewReader(bytes.NewReader([]byte(body(t, resp))))
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := io.ReadAll(zr); string(b) != bigJS {
		t.Error("gzip asset does not inflate to the asset")
	}
	if get(t, h, "GET", "/assets/app-abc123.js", "Accept-Encoding", "gzip;q=0").Header.Get("Content-Encoding") != "" {
		t.Error("gzip sent to a client refusing it")
	}
	if resp := get(t, h, "GET", "/assets/app-abc123.js", "If-None-Match", etag); resp.StatusCode != http.StatusNotModified {
		t.Errorf("revalidation: %s, want 304", resp.Status)
	}
	for _, p := range []string{"/assets/gone.js", "/missing.js", "/favicon.ico"} {
		if resp := get(t, h, "GET", p); resp.StatusCode != 404 {
			t.Errorf("GET %s: %s, want 404", p, resp.Status)
		}
	}
	if resp := get(t, h, "GET", "/favicon.svg"); resp.StatusCode != 200 || resp.Header.Get("Cache-Control") != "no-cache" {
		t.Errorf("root file: %s %q", resp.Status, resp.Header.Get("Cache-Control"))
	}
	if resp := get(t, h, "GET", "/source.sha256"); body(t, resp) == "x\n" {
		t.Error("the build's source hash is served")
	}
}

// TestSiteConfig: /config.json says who serves the page.
func TestSiteConfig(t *testing.T) {
	resp := get(t, testHandler(t), "GET", "/config.json")
	var c SiteConfig
	if err := json.NewDecoder(resp.Body).Decode(&c); err != nil {
		t.Fatal(err)
	}
	if c != (SiteConfig{Mode: ModeController, Name: "ctl-1", Version: "1.2.3"}) || resp.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("config.json: %+v %q", c, resp.Header.Get("Cache-Control"))
	}
	checkSecurityHeaders(t, resp)
}

func TestNewRefuses(t *testing.T) {
	nf := http.NotFoundHandler()
	if _, err := New(Config{Mode: "spa", NotFound: nf}); err == nil {
		t.Error("unknown mode accepted")
	}
	if _, err := New(Config{Mode: ModeHub}); err == nil {
		t.Error("no NotFound accepted")
	}
	if _, err := New(Config{Mode: ModeHub, NotFound: nf, FS: fstest.MapFS{"a.js": {}}}); err != ErrNoIndex {
		t.Errorf("build without index.html: %v", err)
	}
	if _, err := New(Config{Mode: ModeHub, NotFound: nf}); err != nil {
		t.Errorf("the embedded build: %v", err)
	}
}

// TestDistMatchesSources: the committed build was made from the sources
// as they are (dist/source.sha256, written by `make web`).
func TestDistMatchesSources(t *testing.T) {
	want, err := sourcehash.Hash(os.DirFS("."))
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("dist/source.sha256")
	if err != nil {
		t.Fatalf("%v: run make web", err)
	}
	if strings.TrimSpace(string(got)) != want {
		t.Fatalf("web/dist was built from other sources (dist/source.sha256 %s, sources %s): run make web", strings.TrimSpace(string(got)), want)
	}
}
