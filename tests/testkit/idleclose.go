package testkit

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net/http"
	"testing"
	"time"
)

// WaitIdleClose checks a server's idle timeout: it sends two GETs of path
// on one HTTP/1.1 connection to addr (TLS, trusting caPEM), each of which
// must be answered 200 with the connection kept alive, then waits until
// the server closes the connection, which must not come before half of
// idle (nor after 30 s).
func WaitIdleClose(t testing.TB, addr, caPEM, path string, idle time.Duration) {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM([]byte(caPEM))
	conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: pool, NextProtos: []string{"http/1.1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	br := bufio.NewReader(conn)
	for range 2 {
		if _, err := io.WriteString(conn, "GET "+path+" HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.Close {
			t.Fatalf("GET %s: %s, close %v", path, resp.Status, resp.Close)
		}
	}
	start := time.Now()
	if _, err := br.ReadByte(); !errors.Is(err, io.EOF) {
		t.Fatalf("the idle connection: %v, want EOF", err)
	}
	if waited := time.Since(start); waited < idle/2 {
		t.Fatalf("closed after %v idle, before the idle timeout (%v)", waited, idle)
	}
}
