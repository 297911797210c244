package hub

import (
	"encoding/pem"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// TestRoundTripDirectReusesAndRecovers: the proxy's own connections are
// kept alive between requests, and a GET whose idle connection the
// controller closed meanwhile is sent again on a fresh one.
func TestRoundTripDirectReusesAndRecovers(t *testing.T) {
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer tok" {
			http.Error(w, "no token", http.StatusUnauthorized)
			return
		}
		body, _ := io.ReadAll(r.Body) // sends 100 Continue to an Expect
		io.WriteString(w, "answer to "+r.URL.Path+string(body))
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.StartTLS()
	defer srv.Close()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	addr := strings.TrimPrefix(srv.URL, "https://")
	sc, err := newSpokeClient(string(ca), []string{addr})
	if err != nil {
		t.Fatal(err)
	}
	defer sc.pool.closeAll()
	get := func(path string) string {
		t.Helper()
		out, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, "https://"+addr+path, nil)
		out.Header.Set("Authorization", "Bearer tok")
		resp, c, err := sc.roundTripDirect(out)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		sc.pool.put(c)
		return string(b)
	}
	if got := get("/a"); got != "answer to /a" {
		t.Fatalf("first answer %q", got)
	}
	if got := get("/b"); got != "answer to /b" || conns.Load() != 1 {
		t.Fatalf("second answer %q over %d connections, want one kept alive", got, conns.Load())
	}
	srv.CloseClientConnections() // the controller drops the idle connection
	if got := get("/c"); got != "answer to /c" || conns.Load() != 2 {
		t.Fatalf("after the connection was dropped: %q over %d connections, want a fresh second one", got, conns.Load())
	}

	// An informational answer (100 Continue) is skipped, not forwarded as
	// the answer.
	out, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, "https://"+addr+"/d", strings.NewReader(" with a body"))
	out.Header.Set("Authorization", "Bearer tok")
	out.Header.Set("Expect", "100-continue")
	resp, c, err := sc.roundTripDirect(out)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	c.conn.Close()
	if resp.StatusCode != http.StatusOK || string(b) != "answer to /d with a body" {
		t.Fatalf("POST with Expect: %d %q", resp.StatusCode, b)
	}
}
