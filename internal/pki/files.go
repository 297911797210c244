package pki

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"
)

// Files are the TLS material a controller node keeps in its data dir.
type Files struct{ Dir string }

func (f Files) path(name string) string { return filepath.Join(f.Dir, name) }

// Save writes the CA and the node certificate with private modes.
func (f Files) Save(ca *CA, nodeCert, nodeKey []byte) error {
	if err := os.MkdirAll(f.Dir, 0o700); err != nil {
		return err
	}
	for name, data := range map[string][]byte{
		"ca.crt": ca.CertPEM, "ca.key": ca.KeyPEM, "node.crt": nodeCert, "node.key": nodeKey,
	} {
		if err := writeFileAtomic(f.path(name), data, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// Load reads what Save wrote.
func (f Files) Load() (*CA, tls.Certificate, error) {
	certPEM, err := os.ReadFile(f.path("ca.crt"))
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	keyPEM, err := os.ReadFile(f.path("ca.key"))
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	ca, err := ParseCA(certPEM, keyPEM)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	pair, err := tls.LoadX509KeyPair(f.path("node.crt"), f.path("node.key"))
	if err != nil {
		return nil, tls.Certificate{}, fmt.Errorf("node certificate: %w", err)
	}
	return ca, pair, nil
}

func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, mode); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// The files of a hub's generated certificate in its state directory.
const (
	HubCACertFile = "hub-ca.crt"
	hubCAKeyFile  = "hub-ca.key"
	hubCertFile   = "hub.crt"
	hubKeyFile    = "hub.key"
)

// LoadHubCert returns the hub's serving certificate from its state
// directory dir, made by NewHubCert the first time.
func LoadHubCert(dir, listen string, now time.Time) (tls.Certificate, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return tls.Certificate{}, err
	}
	cert, err := tls.LoadX509KeyPair(filepath.Join(dir, hubCertFile), filepath.Join(dir, hubKeyFile))
	if err == nil {
		return cert, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return tls.Certificate{}, fmt.Errorf("hub: load TLS: %w", err)
	}
	return NewHubCert(dir, listen, now)
}

// NewHubCert generates a CA and a serving certificate signed by it for a
// hub listening on listen (valid for its host and the loopback names), and
// writes them to dir. The certificate is written last: its presence means
// the set is complete.
func NewHubCert(dir, listen string, now time.Time) (tls.Certificate, error) {
	ca, err := newCA(pkix.Name{CommonName: "drover hub CA", Organization: []string{"drover"}}, pkcs8, now)
	if err != nil {
		return tls.Certificate{}, err
	}
	hosts := []string{"localhost", "127.0.0.1", "::1"}
	if host, _, err := net.SplitHostPort(listen); err == nil && host != "" {
		hosts = append(hosts, host)
	}
	certPEM, keyPEM, err := ca.sign(leaf{
		subject:     pkix.Name{CommonName: "drover hub"},
		years:       hubCertYears,
		keyUsage:    x509.KeyUsageDigitalSignature,
		extKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		hosts:       hosts,
	}, pkcs8, now)
	if err != nil {
		return tls.Certificate{}, err
	}
	for _, file := range []struct {
		name string
		data []byte
	}{{HubCACertFile, ca.CertPEM}, {hubCAKeyFile, ca.KeyPEM}, {hubKeyFile, keyPEM}, {hubCertFile, certPEM}} {
		if err := os.WriteFile(filepath.Join(dir, file.name), file.data, 0o600); err != nil {
			return tls.Certificate{}, err
		}
	}
	return tls.X509KeyPair(certPEM, keyPEM)
}
