package hub_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/droverhq/drover/hub"
	"github.com/droverhq/drover/tests/testkit"
)

// TestLongLivedCallsEndWithTheirAccess: a watch and a followed log stream,
// opened through the hub, end once their caller loses the access they
// rest on (a revoke; a disabled identity), on the next permission change;
// another caller's watch goes on.
func TestLongLivedCallsEndWithTheirAccess(t *testing.T) {
	f := newProxyFixture(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	watch := func(tok string) *websocket.Conn {
		t.Helper()
		return f.openWatch(t, ctx, tok)
	}
	// ended reads until the connection ends (frames and keepalives may
	// come first) and reports whether it did before the deadline.
	ended := func(conn *websocket.Conn) bool {
		_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
		for {
			var frame struct{ Type string }
			if err := conn.ReadJSON(&frame); err != nil {
				return !strings.Contains(err.Error(), "timeout")
			}
		}
	}
	alice := f.token(f.alice, 5*time.Minute, "")
	rita := watch(f.token(f.rita, 5*time.Minute, ""))
	aliceWatch := watch(alice)

	// will follows the model's log as debug-log does: the lines kept so
	// far, then the new ones. The first read makes his route remembered
	// (and the connection taken, takeover.go): the follow must still be
	// tracked.
	will := f.token(f.will, 5*time.Minute, "")
	if code, b := f.do("GET", "/v1/models/"+f.model+"/logs", will, nil); code != http.StatusOK {
		t.Fatalf("read the log: %d %s", code, b)
	}
	req, _ := http.NewRequestWithContext(ctx, "GET", f.url+"/v1/models/"+f.model+"/logs?follow=true", nil)
	req.Header.Set("Authorization", "Bearer "+will)
	hc := f.client
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("follow the log: %v %v", resp, err)
	}
	defer resp.Body.Close()
	logEnded := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
		}
		logEnded <- sc.Err()
	}()

	if code, b := f.do("DELETE", "/v1/grants", alice, map[string]string{"user": "rita@example.com", "level": "read", "model": f.model}); code != http.StatusNoContent {
		t.Fatalf("revoke rita's read: %d %s", code, b)
	}
	if !ended(rita) {
		t.Error("rita's watch went on after her read access was revoked")
	}
	select {
	case err := <-logEnded:
		t.Fatalf("will's followed log ended before he was disabled: %v", err)
	default:
	}
	if code, b := f.do("POST", "/v1/users/will@example.com/disable", f.hubAdmin(), nil); code != http.StatusNoContent {
		t.Fatalf("disable will: %d %s", code, b)
	}
	select {
	case err := <-logEnded:
		if ctx.Err() != nil {
			t.Errorf("will's followed log ended with the test's deadline: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Error("will's followed log went on after he was disabled")
	}

	// alice's watch still delivers: a change of the model's config.
	if code, b := f.do("PATCH", "/v1/models/"+f.model+"/config", alice, map[string]any{"set": map[string]string{"logging-config": "<root>=DEBUG"}}); code >= 300 {
		t.Fatalf("model-config: %d %s", code, b)
	}
	_ = aliceWatch.SetReadDeadline(time.Now().Add(30 * time.Second))
	for {
		var frame struct{ Type string }
		if err := aliceWatch.ReadJSON(&frame); err != nil {
			t.Fatalf("alice's watch ended: %v", err)
		}
		if frame.Type == "delta" {
			break
		}
	}
}

// TestLongLivedCallsEndWithTheirToken: a watch opened through the hub ends
// when the session token it was opened with expires, as a request with it
// would then be refused; the client resumes it with a renewed one.
func TestLongLivedCallsEndWithTheirToken(t *testing.T) {
	f := newProxyFixture(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	u := "ws" + strings.TrimPrefix(f.url, "http") + "/v1/models/" + f.model + "/watch?since=0"
	tok := f.token(f.rita, 3*time.Second, "")
	conn, _, err := websocket.DefaultDialer.DialContext(ctx, u, http.Header{"Authorization": {"Bearer " + tok}})
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	defer conn.Close()
	opened := time.Now()
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	for {
		var frame struct{ Type string }
		if err := conn.ReadJSON(&frame); err != nil {
			if strings.Contains(err.Error(), "timeout") {
				t.Fatal("the watch outlived its token by 25 s")
			}
			break
		}
	}
	if held := time.Since(opened); held > 20*time.Second {
		t.Errorf("the watch ended %v after it was opened with a 3 s token", held)
	}
	// The token is spent: the watch cannot be opened again with it.
	if _, resp, err := websocket.DefaultDialer.DialContext(ctx, u, http.Header{"Authorization": {"Bearer " + tok}}); err == nil ||
		resp == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("the expired token opened the watch again: %v %v", resp, err)
	}
}

// TestLongLivedCallsAreBoundedPerIdentity: an identity holds at most
// MaxLiveCalls watches and log follows open on a replica (each costs the
// hub two connections); one more is refused, 429 too-many, saying so, and
// is let in again once one of them ends. Others are not affected.
func TestLongLivedCallsAreBoundedPerIdentity(t *testing.T) {
	f := newProxyFixture(t, func(c *hub.Config) { c.MaxLiveCalls = 2 })
	u := "ws" + strings.TrimPrefix(f.url, "http") + "/v1/models/" + f.model + "/watch?since=0"
	dial := func(tok string) (*websocket.Conn, *http.Response, error) {
		return websocket.DefaultDialer.DialContext(t.Context(), u, http.Header{"Authorization": {"Bearer " + tok}})
	}
	alice, rita := f.token(f.alice, 5*time.Minute, ""), f.token(f.rita, 5*time.Minute, "")
	var open []*websocket.Conn
	for range 2 {
		conn, _, err := dial(alice)
		if err != nil {
			t.Fatalf("a watch within the bound: %v", err)
		}
		t.Cleanup(func() { conn.Close() })
		open = append(open, conn)
	}
	_, resp, err := dial(alice)
	if err == nil || resp == nil || resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("a third watch: %v %v", resp, err)
	}
	body, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(body), `"too-many"`) || !strings.Contains(string(body), "holds 2 watches and log follows open") {
		t.Fatalf("the refusal: %s", body)
	}
	if conn, _, err := dial(rita); err != nil {
		t.Fatalf("another identity's watch: %v", err)
	} else {
		conn.Close()
	}
	open[0].Close()
	testkit.EventuallyWithin(t, 30*time.Second, func() (bool, error) {
		conn, _, err := dial(alice)
		if err != nil {
			return false, err
		}
		conn.Close()
		return true, nil
	}, "a watch let in once one ended")
}
