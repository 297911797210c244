package pki

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// The fixtures in testdata are a hub's state dir and a controller node's
// TLS files as earlier releases of droverd wrote them; the tests hold that
// what this package writes has the same layout and that those files load,
// so existing data directories keep working.

var now = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

// copyDir copies testdata/name into a fresh directory.
func copyDir(t *testing.T, name string) string {
	t.Helper()
	dst := t.TempDir()
	entries, err := os.ReadDir(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join("testdata", name, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// pemFile reads the one PEM block of dir/name.
func pemFile(t *testing.T, dir, name string) *pem.Block {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	blk, rest := pem.Decode(b)
	if blk == nil || len(bytes.TrimSpace(rest)) != 0 {
		t.Fatalf("%s: want exactly one PEM block", name)
	}
	return blk
}

func certFile(t *testing.T, dir, name string) *x509.Certificate {
	t.Helper()
	blk := pemFile(t, dir, name)
	if blk.Type != "CERTIFICATE" {
		t.Fatalf("%s: PEM type %q, want CERTIFICATE", name, blk.Type)
	}
	c, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// keyFile checks that dir/name is a P-256 key in the PEM type want.
func keyFile(t *testing.T, dir, name, want string) {
	t.Helper()
	blk := pemFile(t, dir, name)
	if blk.Type != want {
		t.Fatalf("%s: PEM type %q, want %q", name, blk.Type, want)
	}
	var key any
	var err error
	if want == "PRIVATE KEY" {
		key, err = x509.ParsePKCS8PrivateKey(blk.Bytes)
	} else {
		key, err = x509.ParseECPrivateKey(blk.Bytes)
	}
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if k, ok := key.(*ecdsa.PrivateKey); !ok || k.Curve != elliptic.P256() {
		t.Fatalf("%s: %T, want an ECDSA P-256 key", name, key)
	}
}

func years(c *x509.Certificate) int {
	return c.NotAfter.Year() - c.NotBefore.Add(time.Hour).Year()
}

func ipStrings(ips []net.IP) []string {
	var out []string
	for _, ip := range ips {
		out = append(out, ip.String())
	}
	return out
}

// checkHubDir holds the layout of a hub's state dir, a fixture's or a new one.
func checkHubDir(t *testing.T, dir string) {
	t.Helper()
	ca := certFile(t, dir, "hub-ca.crt")
	if !ca.IsCA || ca.Subject.CommonName != "drover hub CA" || years(ca) != 10 {
		t.Errorf("hub CA: IsCA %v, CN %q, %d years", ca.IsCA, ca.Subject.CommonName, years(ca))
	}
	keyFile(t, dir, "hub-ca.key", "PRIVATE KEY")
	keyFile(t, dir, "hub.key", "PRIVATE KEY")
	leaf := certFile(t, dir, "hub.crt")
	if err := leaf.CheckSignatureFrom(ca); err != nil {
		t.Errorf("hub.crt not signed by hub-ca.crt: %v", err)
	}
	if leaf.Subject.CommonName != "drover hub" || years(leaf) != 2 || leaf.KeyUsage != x509.KeyUsageDigitalSignature ||
		!slices.Equal(leaf.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}) {
		t.Errorf("hub.crt: CN %q, %d years, key usage %v, ext %v", leaf.Subject.CommonName, years(leaf), leaf.KeyUsage, leaf.ExtKeyUsage)
	}
	if want := []string{"localhost", "hub.example.com"}; !slices.Equal(leaf.DNSNames, want) {
		t.Errorf("hub.crt DNS names %v, want %v", leaf.DNSNames, want)
	}
	if want := []string{"127.0.0.1", "::1"}; !slices.Equal(ipStrings(leaf.IPAddresses), want) {
		t.Errorf("hub.crt IPs %v, want %v", ipStrings(leaf.IPAddresses), want)
	}
}

// checkNodeDir holds the layout of a controller node's TLS files.
func checkNodeDir(t *testing.T, dir string) {
	t.Helper()
	ca := certFile(t, dir, "ca.crt")
	if !ca.IsCA || ca.Subject.CommonName != "drover controller CA fixture" || years(ca) != 10 {
		t.Errorf("controller CA: IsCA %v, CN %q, %d years", ca.IsCA, ca.Subject.CommonName, years(ca))
	}
	keyFile(t, dir, "ca.key", "EC PRIVATE KEY")
	keyFile(t, dir, "node.key", "EC PRIVATE KEY")
	leaf := certFile(t, dir, "node.crt")
	if err := leaf.CheckSignatureFrom(ca); err != nil {
		t.Errorf("node.crt not signed by ca.crt: %v", err)
	}
	if leaf.Subject.CommonName != "node-fixture" || years(leaf) != 5 ||
		leaf.KeyUsage != x509.KeyUsageDigitalSignature|x509.KeyUsageKeyEncipherment ||
		!slices.Equal(leaf.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}) {
		t.Errorf("node.crt: CN %q, %d years, key usage %v, ext %v", leaf.Subject.CommonName, years(leaf), leaf.KeyUsage, leaf.ExtKeyUsage)
	}
	if want := []string{"node.example.com", "localhost"}; !slices.Equal(leaf.DNSNames, want) {
		t.Errorf("node.crt DNS names %v, want %v", leaf.DNSNames, want)
	}
	if want := []string{"10.0.0.1", "127.0.0.1", "::1"}; !slices.Equal(ipStrings(leaf.IPAddresses), want) {
		t.Errorf("node.crt IPs %v, want %v", ipStrings(leaf.IPAddresses), want)
	}
}

func TestHubFilesKeepTheirLayout(t *testing.T) {
	checkHubDir(t, "testdata/hub")
	dir := t.TempDir()
	if _, err := NewHubCert(dir, "hub.example.com:17080", now); err != nil {
		t.Fatal(err)
	}
	checkHubDir(t, dir)
}

func TestNodeFilesKeepTheirLayout(t *testing.T) {
	checkNodeDir(t, "testdata/node")
	ca, err := NewCA("fixture", now)
	if err != nil {
		t.Fatal(err)
	}
	_, cert, key, err := ca.Issue("node-fixture", []string{"10.0.0.1", "node.example.com"}, now)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := (Files{Dir: dir}).Save(ca, cert, key); err != nil {
		t.Fatal(err)
	}
	checkNodeDir(t, dir)
}

// TestLoadHubCertKeepsAnExistingOne: an existing hub state dir's
// certificate is served as it is, never replaced.
func TestLoadHubCertKeepsAnExistingOne(t *testing.T) {
	dir := copyDir(t, "hub")
	cert, err := LoadHubCert(dir, "127.0.0.1:17080", now)
	if err != nil {
		t.Fatal(err)
	}
	want := certFile(t, "testdata/hub", "hub.crt")
	if !bytes.Equal(cert.Certificate[0], want.Raw) {
		t.Error("LoadHubCert replaced the existing certificate")
	}
	for _, name := range []string{"hub-ca.crt", "hub-ca.key", "hub.crt", "hub.key"} {
		got, _ := os.ReadFile(filepath.Join(dir, name))
		old, _ := os.ReadFile(filepath.Join("testdata/hub", name))
		if !bytes.Equal(got, old) {
			t.Errorf("%s changed", name)
		}
	}
}

// TestLoadHubCertMakesOneOnce: an empty state dir gets a certificate, and
// the next load returns the same one.
func TestLoadHubCertMakesOneOnce(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	first, err := LoadHubCert(dir, "127.0.0.1:17080", now)
	if err != nil {
		t.Fatal(err)
	}
	again, err := LoadHubCert(dir, "127.0.0.1:17080", now)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first.Certificate[0], again.Certificate[0]) {
		t.Error("the second load made a new certificate")
	}
	leaf := certFile(t, dir, "hub.crt")
	if want := []string{"127.0.0.1", "::1", "127.0.0.1"}; !slices.Equal(ipStrings(leaf.IPAddresses), want) {
		t.Errorf("IPs %v, want %v", ipStrings(leaf.IPAddresses), want)
	}
}

// TestNodeFilesLoad: an existing node's files load, and their CA admits
// and talks to a node issued by this package (mutual TLS).
func TestNodeFilesLoad(t *testing.T) {
	ca, node, err := Files{Dir: copyDir(t, "node")}.Load()
	if err != nil {
		t.Fatal(err)
	}
	if ca.Fingerprint() != Fingerprint(certFile(t, "testdata/node", "ca.crt")) {
		t.Error("loaded CA has another fingerprint")
	}
	peer, _, _, err := ca.Issue("node-new", nil, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	handshake(t, MutualConfig(ca, node), PeerConfig(ca, peer))
}

// handshake runs one TLS handshake between server and client over a pipe.
func handshake(t *testing.T, server, client *tls.Config) {
	t.Helper()
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	client = client.Clone()
	client.ServerName = "localhost"
	errs := make(chan error, 1)
	go func() { errs <- tls.Server(a, server).Handshake() }()
	if err := tls.Client(b, client).Handshake(); err != nil {
		t.Fatalf("client handshake: %v", err)
	}
	if err := <-errs; err != nil {
		t.Fatalf("server handshake: %v", err)
	}
}

func TestParseCARefusesWhatIsNotACA(t *testing.T) {
	if _, err := ParseCA([]byte("nothing"), nil); err == nil {
		t.Error("ParseCA accepted no certificate")
	}
	certPEM, _ := os.ReadFile("testdata/node/ca.crt")
	if _, err := ParseCA(certPEM, []byte("nothing")); err == nil {
		t.Error("ParseCA accepted no key")
	}
	if _, err := Pool([]byte("nothing")); err == nil {
		t.Error("Pool accepted no certificate")
	}
	if _, err := ParseCertPEM([]byte("nothing")); err == nil {
		t.Error("ParseCertPEM accepted no certificate")
	}
}
