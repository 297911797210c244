package hub_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/api"
	"github.com/droverhq/drover/internal/version"
	"github.com/droverhq/drover/web"
)

// TestHubServesTheDashboard: the hub serves the web app at every path its
// API leaves free (a deep link opens index.html), with the dashboard's
// security headers and its own /config.json; the API's unknown paths stay
// JSON errors, the app never answers them.
func TestHubServesTheDashboard(t *testing.T) {
	e := newEnv(t)
	get := func(path, token string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequestWithContext(t.Context(), "GET", e.url+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	for _, p := range []string{"/", "/models/acme/prod", "/controllers"} {
		resp, b := get(p, "")
		if resp.StatusCode != 200 || !strings.Contains(b, "<title>Drover</title>") {
			t.Fatalf("GET %s: %s %.80s, want the app", p, resp.Status, b)
		}
		if resp.Header.Get("Content-Security-Policy") == "" || resp.Header.Get("X-Content-Type-Options") != "nosniff" ||
			resp.Header.Get("Referrer-Policy") != "no-referrer" || resp.Header.Get("Cache-Control") != "no-cache" {
			t.Errorf("GET %s: headers %v", p, resp.Header)
		}
	}
	resp, b := get("/config.json", "")
	var c web.SiteConfig
	if err := json.Unmarshal([]byte(b), &c); err != nil || resp.StatusCode != 200 {
		t.Fatalf("config.json: %s %s %v", resp.Status, b, err)
	}
	if c != (web.SiteConfig{Mode: web.ModeHub, Name: "hub.test", Version: version.Version}) {
		t.Errorf("config.json: %+v", c)
	}

	tok := e.token(e.user("pat", "acme"), time.Minute, "")
	for _, c := range []struct {
		path, token string
		code        int
	}{
		{"/v1/no-such-thing", tok, http.StatusNotFound},
		{"/v1/no-such-thing", "", http.StatusUnauthorized},
		{"/auth/no-such-thing", "", http.StatusNotFound},
		{"/.well-known/no-such-thing", "", http.StatusNotFound},
	} {
		resp, b := get(c.path, c.token)
		var ae api.Error
		if resp.StatusCode != c.code || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") || json.Unmarshal([]byte(b), &ae) != nil || ae.Code == "" {
			t.Errorf("GET %s: %s %q %.80s, want a JSON %d", c.path, resp.Status, resp.Header.Get("Content-Type"), b, c.code)
		}
	}
	// An unsafe method on an app path is the API's 404, not the page.
	if code, b := e.do("POST", "/models/acme/prod", "", map[string]string{}); code != http.StatusNotFound || strings.Contains(string(b), "<title>") {
		t.Errorf("POST to an app path: %d %.80s", code, b)
	}
}
