package hub_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestRelayPassesReadIndexBothWays: a model call through the hub answers
// with the controller's X-Drover-Index, and a read's ?index= reaches the
// controller: at the write's index it sees the write, past anything the
// controller holds it is refused as unavailable (never answered older).
func TestRelayPassesReadIndexBothWays(t *testing.T) {
	f := newProxyFixture(t)
	tok := f.token(f.alice, time.Minute, "")
	path := "/v1/models/" + f.model + "/config"
	code, hdr, b := f.doHeaders(t, "PATCH", path, tok, `{"set":{"k":"through-hub"}}`)
	if code != http.StatusOK {
		t.Fatalf("config write through the hub: %d %s", code, b)
	}
	idx, err := strconv.ParseUint(hdr.Get("X-Drover-Index"), 10, 64)
	if err != nil || idx == 0 {
		t.Fatalf("config write through the hub answered X-Drover-Index %q", hdr.Get("X-Drover-Index"))
	}
	code, hdr, b = f.doHeaders(t, "GET", path+"?index="+strconv.FormatUint(idx, 10), tok, "")
	var cfg map[string]any
	if code != http.StatusOK || json.Unmarshal(b, &cfg) != nil || cfg["k"] != "through-hub" {
		t.Fatalf("read at index %d through the hub: %d %s", idx, code, b)
	}
	if got, _ := strconv.ParseUint(hdr.Get("X-Drover-Index"), 10, 64); got < idx {
		t.Fatalf("read at index %d answered X-Drover-Index %q", idx, hdr.Get("X-Drover-Index"))
	}
	code, _, b = f.doHeaders(t, "GET", path+"?index="+strconv.FormatUint(idx+1000000, 10), tok, "")
	if code != http.StatusServiceUnavailable || !strings.Contains(string(b), "ahead of this controller") {
		t.Fatalf("read at an index the controller never reached, through the hub: %d %s", code, b)
	}
}

// doHeaders sends a request with a bearer token and a JSON body ("" for
// none) and returns the status, the headers and the body.
func (e *env) doHeaders(t *testing.T, method, path, token, body string) (int, http.Header, []byte) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, _ := http.NewRequestWithContext(t.Context(), method, e.url+path, rd)
	req.Header.Set("Authorization", "Bearer "+token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	hc := e.client
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b
}
