// Package pki makes and loads the controller's certificate authority and the
// certificates its nodes serve and dial with. A controller generates its CA at
// bootstrap; every node holds the CA key so that any of them can admit a new
// node (as Juju controllers do). Clients pin the CA certificate.
package pki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// CA is a certificate authority with its private key.
type CA struct {
	Cert    *x509.Certificate
	Key     *ecdsa.PrivateKey
	CertPEM []byte
	KeyPEM  []byte
}

// NewCA generates a self-signed CA for the controller named name.
func NewCA(name string, now time.Time) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate CA key: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "drover controller CA " + name, Organization: []string{"drover"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.AddDate(10, 0, 0),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("create CA certificate: %w", err)
	}
	return caFromDER(der, key)
}

func caFromDER(der []byte, key *ecdsa.PrivateKey) (*CA, error) {
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	return &CA{
		Cert:    cert,
		Key:     key,
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	}, nil
}

// ParseCA loads a CA from its PEM certificate and key.
func ParseCA(certPEM, keyPEM []byte) (*CA, error) {
	cb, _ := pem.Decode(certPEM)
	if cb == nil || cb.Type != "CERTIFICATE" {
		return nil, errors.New("CA certificate: no PEM certificate block")
	}
	kb, _ := pem.Decode(keyPEM)
	if kb == nil {
		return nil, errors.New("CA key: no PEM block")
	}
	key, err := x509.ParseECPrivateKey(kb.Bytes)
	if err != nil {
		return nil, fmt.Errorf("CA key: %w", err)
	}
	return caFromDER(cb.Bytes, key)
}

// Fingerprint is the hex sha256 of the CA certificate's DER bytes.
func (ca *CA) Fingerprint() string { return Fingerprint(ca.Cert) }

// Fingerprint is the hex sha256 of a certificate's DER bytes.
func Fingerprint(c *x509.Certificate) string {
	sum := sha256.Sum256(c.Raw)
	return hex.EncodeToString(sum[:])
}

// Issue signs a certificate for a controller node, valid for both serving
// and dialing (mutual TLS between nodes). hosts are DNS names or IPs.
func (ca *CA) Issue(commonName string, hosts []string, now time.Time) (tls.Certificate, []byte, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: commonName, Organization: []string{"drover"}},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.AddDate(5, 0, 0),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	hosts = append(hosts, "localhost", "127.0.0.1", "::1")
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else if h != "" {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.Key)
	if err != nil {
		return tls.Certificate{}, nil, nil, fmt.Errorf("issue certificate: %w", err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return tls.Certificate{}, nil, nil, err
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	return pair, certPEM, keyPEM, err
}

// Pool returns a cert pool holding only the given PEM certificates.
func Pool(pems ...[]byte) (*x509.CertPool, error) {
	p := x509.NewCertPool()
	for _, b := range pems {
		if !p.AppendCertsFromPEM(b) {
			return nil, errors.New("no certificate found in PEM data")
		}
	}
	return p, nil
}

// Files are the TLS material a node keeps in its data dir.
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

// ServerConfig is the TLS config a node serves with: its own certificate,
// and client certificates verified against the CA when presented (required
// only for node-to-node routes, which check it themselves).
func ServerConfig(ca *CA, node tls.Certificate) *tls.Config {
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	return &tls.Config{
		Certificates: []tls.Certificate{node},
		ClientCAs:    pool,
		ClientAuth:   tls.VerifyClientCertIfGiven,
		MinVersion:   tls.VersionTLS12,
	}
}

// PeerConfig is the TLS config a node dials other nodes with.
func PeerConfig(ca *CA, node tls.Certificate) *tls.Config {
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	return &tls.Config{
		Certificates: []tls.Certificate{node},
		RootCAs:      pool,
		MinVersion:   tls.VersionTLS12,
	}
}

// MutualConfig is for the raft listener: peers must present a CA-signed
// certificate.
func MutualConfig(ca *CA, node tls.Certificate) *tls.Config {
	c := ServerConfig(ca, node)
	c.ClientAuth = tls.RequireAndVerifyClientCert
	return c
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return n
}

func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, mode); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// ParseCertPEM parses the first certificate in PEM data.
func ParseCertPEM(b []byte) (*x509.Certificate, error) {
	blk, _ := pem.Decode(b)
	if blk == nil || blk.Type != "CERTIFICATE" {
		return nil, errors.New("no PEM certificate block")
	}
	return x509.ParseCertificate(blk.Bytes)
}
