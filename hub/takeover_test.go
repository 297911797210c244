package hub_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/droverhq/drover/hub"
	"github.com/droverhq/drover/tests/testkit"
)

// rawConn is one keep-alive connection to the hub written by hand, so a
// test knows which requests share it and can send what no client would.
type rawConn struct {
	t    *testing.T
	conn net.Conn
	br   *bufio.Reader
}

func dialRaw(t *testing.T, base string) *rawConn {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &rawConn{t: t, conn: c, br: bufio.NewReader(c)}
}

// send writes the raw request text and reads one answer per request in it.
func (c *rawConn) send(text string, method string, answers int) []answer {
	c.t.Helper()
	c.conn.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.WriteString(c.conn, text); err != nil {
		c.t.Fatal(err)
	}
	var out []answer
	for range answers {
		resp, err := http.ReadResponse(c.br, &http.Request{Method: method})
		if err != nil {
			c.t.Fatalf("answer %d: %v", len(out), err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			c.t.Fatalf("answer %d body: %v", len(out), err)
		}
		out = append(out, answer{resp: resp, body: string(b)})
	}
	return out
}

type answer struct {
	resp *http.Response
	body string
}

func get(path, tok string) string {
	return "GET " + path + " HTTP/1.1\r\nHost: hub.test\r\nAuthorization: Bearer " + tok + "\r\n\r\n"
}

// statusTimestamp is the status answer's clock reading, to the second.
var statusTimestamp = regexp.MustCompile(`"timestamp":"[^"]*"`)

// sameStatus reports whether two status answers are the same but for when
// they were read (a second may tick between two reads).
func sameStatus(a, b string) bool {
	return statusTimestamp.ReplaceAllString(a, "") == statusTimestamp.ReplaceAllString(b, "")
}

// TestTakenConnectionServesReads: a reader's reads of a model on one
// keep-alive connection are served by the hub's own loop from the second
// on (the first fills the memo, the second takes the connection), two of
// them pipelined, with the controller's answers; a HEAD gets the head
// alone.
func TestTakenConnectionServesReads(t *testing.T) {
	f := newProxyFixture(t)
	rita := f.token(f.rita, time.Minute, "")
	status := "/v1/models/" + f.model + "/status"
	c := dialRaw(t, f.url)
	first := c.send(get(status, rita), "GET", 1)[0]
	if first.resp.StatusCode != http.StatusOK {
		t.Fatalf("first read: %d %s", first.resp.StatusCode, first.body)
	}
	var st struct {
		Model struct{ UUID string } `json:"model"`
	}
	if err := json.Unmarshal([]byte(first.body), &st); err != nil || st.Model.UUID != f.model {
		t.Fatalf("first read answered %s (%v)", first.body, err)
	}
	for i := range 3 {
		a := c.send(get(status, rita), "GET", 1)[0]
		if a.resp.StatusCode != http.StatusOK || !sameStatus(a.body, first.body) {
			t.Fatalf("read %d: %d %s, the first answered %s", i, a.resp.StatusCode, a.body, first.body)
		}
	}
	for i, a := range c.send(get(status, rita)+get(status, rita), "GET", 2) {
		if a.resp.StatusCode != http.StatusOK || !sameStatus(a.body, first.body) {
			t.Fatalf("pipelined read %d: %d %s", i, a.resp.StatusCode, a.body)
		}
	}
	// The controller answers HEAD 405 (its routes are GETs): the head
	// alone, then the connection goes on.
	head := c.send(strings.Replace(get(status, rita), "GET", "HEAD", 1), "HEAD", 1)[0]
	if head.resp.StatusCode != http.StatusMethodNotAllowed || head.body != "" || head.resp.ContentLength <= 0 {
		t.Fatalf("HEAD: %d, length %d, body %q", head.resp.StatusCode, head.resp.ContentLength, head.body)
	}
	if a := c.send(get(status, rita), "GET", 1)[0]; !sameStatus(a.body, first.body) {
		t.Fatalf("the read after a HEAD: %d %s", a.resp.StatusCode, a.body)
	}
	taken, back := f.hub.Taken()
	if taken != 1 || back != 0 {
		t.Fatalf("taken %d, handed back %d: want the connection taken once and kept", taken, back)
	}
}

// TestTakenConnectionHandsBack: on a taken connection, whatever is not a
// remembered read goes back to net/http and is served like any request
// (a listing, a write, a malformed request's 400, a revoked read's 404),
// and the connection is taken again by the next remembered read.
func TestTakenConnectionHandsBack(t *testing.T) {
	f := newProxyFixture(t)
	rita, will, admin := f.token(f.rita, time.Minute, ""), f.token(f.will, time.Minute, ""), f.token(f.alice, time.Minute, "")
	status := "/v1/models/" + f.model + "/status"
	c := dialRaw(t, f.url)
	take := func(tok string) {
		t.Helper()
		before, _ := f.hub.Taken()
		for i, a := range c.send(get(status, tok)+get(status, tok), "GET", 2) {
			if a.resp.StatusCode != http.StatusOK {
				t.Fatalf("read %d: %d %s", i, a.resp.StatusCode, a.body)
			}
		}
		waitTaken(t, f, before+1)
	}
	backs := func(want int64) {
		t.Helper()
		if _, back := f.hub.Taken(); back != want {
			t.Fatalf("handed back %d times, want %d", back, want)
		}
	}

	take(rita)
	list := c.send(get("/v1/models", rita), "GET", 1)[0]
	if list.resp.StatusCode != http.StatusOK || !strings.Contains(list.body, f.model) {
		t.Fatalf("listing on a taken connection: %d %s", list.resp.StatusCode, list.body)
	}
	backs(1)

	take(will)
	body := `{"set-strings":{"takeover-test":"yes"}}`
	cfg := "PATCH /v1/models/" + f.model + "/config HTTP/1.1\r\nHost: hub.test\r\nAuthorization: Bearer " + will +
		"\r\nContent-Type: application/json\r\nContent-Length: " + itoa(len(body)) + "\r\n\r\n" + body
	if a := c.send(cfg, "PATCH", 1)[0]; a.resp.StatusCode != http.StatusOK || !strings.Contains(a.body, "takeover-test") {
		t.Fatalf("a write on a taken connection: %d %s", a.resp.StatusCode, a.body)
	}
	backs(2)

	take(rita)
	bad := "GET " + status + " HTTP/1.1\r\nHost: a.test\r\nHost: b.test\r\nAuthorization: Bearer " + rita + "\r\n\r\n"
	if a := c.send(bad, "GET", 1)[0]; a.resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("two Host headers on a taken connection: %d %s, want net/http's 400", a.resp.StatusCode, a.body)
	}
	backs(3)

	c = dialRaw(t, f.url) // net/http closes after a 400
	take(rita)
	grant := map[string]string{"user": "rita@example.com", "level": "read", "model": f.model}
	if code, b := f.do(http.MethodDelete, "/v1/grants", admin, grant); code != http.StatusNoContent {
		t.Fatalf("revoke: %d %s", code, b)
	}
	if a := c.send(get(status, rita), "GET", 1)[0]; a.resp.StatusCode != http.StatusNotFound {
		t.Fatalf("a revoked read on a taken connection: %d %s, want 404", a.resp.StatusCode, a.body)
	}
	backs(4)
}

// TestCloseEndsTakenConnections: the hub's Close (Run's shutdown) closes
// an idle taken connection, which net/http no longer tracks.
func TestCloseEndsTakenConnections(t *testing.T) {
	f, c, _ := takenConnection(t)
	f.hub.Close()
	c.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.br.ReadByte(); !errors.Is(err, io.EOF) {
		t.Fatalf("the idle taken connection after Close: %v, want EOF", err)
	}
}

// TestTakenConnectionsCloseWhenIdle: a taken connection left idle is
// closed after the hub's idle timeout, as net/http closes its own; until
// then it serves.
func TestTakenConnectionsCloseWhenIdle(t *testing.T) {
	const idle = 300 * time.Millisecond
	f := newProxyFixture(t, func(c *hub.Config) { c.IdleTimeout = idle })
	rita := f.token(f.rita, time.Minute, "")
	c := dialRaw(t, f.url)
	status := get("/v1/models/"+f.model+"/status", rita)
	c.send(status+status, "GET", 2)
	waitTaken(t, f, 1)
	if a := c.send(status, "GET", 1)[0]; a.resp.StatusCode != http.StatusOK {
		t.Fatalf("a read on the taken connection: %d %s", a.resp.StatusCode, a.body)
	}
	start := time.Now()
	c.conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	if _, err := c.br.ReadByte(); !errors.Is(err, io.EOF) {
		t.Fatalf("the idle taken connection: %v, want EOF", err)
	}
	if waited := time.Since(start); waited < idle/2 {
		t.Fatalf("closed after %v idle, before the idle timeout (%v)", waited, idle)
	}
	if taken, back := f.hub.Taken(); taken != 1 || back != 0 {
		t.Fatalf("taken %d, handed back %d; want 1, 0", taken, back)
	}
}

// takenConnection returns a fixture and a connection the hub has taken,
// after two status reads of a reader (whose token it returns).
func takenConnection(t *testing.T) (*proxyFixture, *rawConn, string) {
	t.Helper()
	f := newProxyFixture(t)
	rita := f.token(f.rita, time.Minute, "")
	c := dialRaw(t, f.url)
	c.send(get("/v1/models/"+f.model+"/status", rita)+get("/v1/models/"+f.model+"/status", rita), "GET", 2)
	waitTaken(t, f, 1)
	return f, c, rita
}

// waitTaken waits until the hub has taken n connections in all: it takes
// one just after the answer that decided it has left.
func waitTaken(t *testing.T, f *proxyFixture, n int64) {
	t.Helper()
	testkit.EventuallyWithin(t, 10*time.Second, func() (bool, error) {
		taken, _ := f.hub.Taken()
		if taken > n {
			return false, fmt.Errorf("taken %d times, want %d", taken, n)
		}
		return taken == n, nil
	})
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// TestTakenConnectionStreams: a followed stream asked for on a taken
// connection (the debug log) goes back to net/http, where the hub tracks
// it to end it with its caller's access (live.go), and reaches the caller
// as the controller flushes it, not once a buffer fills.
func TestTakenConnectionStreams(t *testing.T) {
	f, c, rita := takenConnection(t)
	c.conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c.conn, get("/v1/models/"+f.model+"/logs?follow=true", rita)); err != nil {
		t.Fatal(err)
	}
	// The controller sends the head (and any records) at once, then waits
	// for more: the head must arrive while the answer is still open.
	resp, err := http.ReadResponse(c.br, &http.Request{Method: http.MethodGet})
	if err != nil {
		t.Fatalf("the followed log's head did not arrive: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/x-ndjson" {
		t.Fatalf("followed log: %d %v", resp.StatusCode, resp.Header)
	}
	if taken, back := f.hub.Taken(); taken != 1 || back != 1 {
		t.Fatalf("taken %d, handed back %d: want the followed stream handed back", taken, back)
	}
}
