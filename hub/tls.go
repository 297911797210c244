package hub

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// TLS files in the state directory.
const (
	caCertFile = "hub-ca.crt"
	caKeyFile  = "hub-ca.key"
	certFile   = "hub.crt"
	keyFile    = "hub.key"
)

// CACertPath is where the generated CA certificate is written, for clients
// to pin.
func CACertPath(stateDir string) string { return filepath.Join(stateDir, caCertFile) }

// loadTLS returns the serving certificate: the configured files, or a
// certificate signed by a CA generated once in the state directory.
func loadTLS(c *Config) (tls.Certificate, error) {
	if c.TLSCert != "" {
		return tls.LoadX509KeyPair(c.TLSCert, c.TLSKey)
	}
	if err := os.MkdirAll(c.StateDir, 0o700); err != nil {
		return tls.Certificate{}, err
	}
	cert, err := tls.LoadX509KeyPair(filepath.Join(c.StateDir, certFile), filepath.Join(c.StateDir, keyFile))
	if err == nil {
		return cert, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return tls.Certificate{}, fmt.Errorf("hub: load TLS: %w", err)
	}
	return generateTLS(c.StateDir, c.Listen, c.Now())
}

func newKey() (*ecdsa.PrivateKey, []byte, error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(k)
	return k, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), err
}

func generateTLS(dir, listen string, now time.Time) (tls.Certificate, error) {
	caKey, caKeyPEM, err := newKey()
	if err != nil {
		return tls.Certificate{}, err
	}
	serial := func() *big.Int { n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120)); return n }
	caTmpl := &x509.Certificate{SerialNumber: serial(), Subject: pkix.Name{CommonName: "drover hub CA", Organization: []string{"drover"}},
		NotBefore: now.Add(-time.Hour), NotAfter: now.AddDate(10, 0, 0), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return tls.Certificate{}, err
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, keyPEM, err := newKey()
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{SerialNumber: serial(), Subject: pkix.Name{CommonName: "drover hub"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.AddDate(2, 0, 0), KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, DNSNames: []string{"localhost"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}}
	if host, _, err := net.SplitHostPort(listen); err == nil && host != "" {
		if ip := net.ParseIP(host); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, host)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return tls.Certificate{}, err
	}
	files := map[string][]byte{
		caCertFile: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		caKeyFile:  caKeyPEM,
		certFile:   pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyFile:    keyPEM,
	}
	for _, name := range []string{caCertFile, caKeyFile, keyFile, certFile} { // cert last: its presence means complete
		if err := os.WriteFile(filepath.Join(dir, name), files[name], 0o600); err != nil {
			return tls.Certificate{}, err
		}
	}
	return tls.X509KeyPair(files[certFile], files[keyFile])
}
