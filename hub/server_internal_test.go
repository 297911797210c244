package hub

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/droverhq/drover/internal/pki"
	"github.com/droverhq/drover/tests/testkit"
)

// firstAccept is a listener that reports its first Accept call (Serve has
// set the server up by then) and then has nothing to accept until closed.
type firstAccept struct {
	net.Listener
	once      sync.Once
	accepting chan struct{}
	closed    chan struct{}
}

func (l *firstAccept) Accept() (net.Conn, error) {
	l.once.Do(func() { close(l.accepting) })
	<-l.closed
	return nil, net.ErrClosed
}

func (l *firstAccept) Close() error {
	select {
	case <-l.closed:
	default:
		close(l.closed)
	}
	return nil
}

// TestHTTP2WhicheverServeStartsFirst: the handback's Serve may set the hub
// server up before ServeTLS does (Run starts both); an HTTP/2 client is
// still served, not dropped after TLS offered it "h2".
func TestHTTP2WhicheverServeStartsFirst(t *testing.T) {
	srv, ca := testHTTPServer(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, r.Proto) }, time.Minute)
	handback := &firstAccept{Listener: nil, accepting: make(chan struct{}), closed: make(chan struct{})}
	go srv.Serve(handback)
	<-handback.accepting
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.ServeTLS(ln, "", "")

	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}
	t.Cleanup(tr.CloseIdleConnections)
	resp, err := (&http.Client{Transport: tr, Timeout: 30 * time.Second}).Get("https://" + ln.Addr().String() + "/")
	if err != nil {
		t.Fatalf("an HTTP/2 client: %v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || string(b) != "HTTP/2.0" {
		t.Fatalf("served %q (%v), want HTTP/2.0", b, err)
	}
}

// TestIdleConnectionsClose: the hub server closes a client's keep-alive
// connection left idle for its idle timeout (taken connections too:
// TestTakenConnectionsCloseWhenIdle); until then it carries requests.
func TestIdleConnectionsClose(t *testing.T) {
	const idle = 300 * time.Millisecond
	srv, ca := testHTTPServer(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }, idle)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.ServeTLS(ln, "", "")
	testkit.WaitIdleClose(t, ln.Addr().String(), string(ca), "/", idle)
}

// testHTTPServer is the hub's HTTPS server for h with a generated
// certificate, and the CA that signed it; it is closed when the test ends.
func testHTTPServer(t *testing.T, h http.HandlerFunc, idle time.Duration) (*http.Server, []byte) {
	t.Helper()
	dir := t.TempDir()
	cert, err := pki.NewHubCert(dir, "127.0.0.1:0", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	ca, err := os.ReadFile(CACertPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	srv := newHTTPServer(h, cert, idle)
	t.Cleanup(func() { srv.Close() })
	return srv, ca
}
