// Package pki makes and loads Drover's certificate authorities and the
// certificates signed by them: a controller's CA, whose key every node
// holds so that any node can admit a new one (as Juju controllers do), and
// a hub's CA, generated once in its state directory when no certificate is
// configured. Clients pin the CA certificate.
//
// Invariants:
//   - Keys are ECDSA P-256. A controller's keys are written as SEC 1 ("EC
//     PRIVATE KEY"), a hub's as PKCS #8 ("PRIVATE KEY"); both layouts are
//     read back by the code that wrote them, so existing data directories
//     keep working.
//   - Certificates are valid from an hour before now (clock skew between
//     hosts); CAs for ten years, a controller node's certificate for five, a
//     hub's serving certificate for two.
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
	"slices"
	"time"
)

// CA is a certificate authority with its private key.
type CA struct {
	Cert    *x509.Certificate
	Key     *ecdsa.PrivateKey
	CertPEM []byte
	KeyPEM  []byte
}

// keyFormat is how a private key is written in PEM.
type keyFormat int

const (
	sec1  keyFormat = iota // "EC PRIVATE KEY": a controller's files
	pkcs8                  // "PRIVATE KEY": a hub's files
)

func encodeKey(k *ecdsa.PrivateKey, f keyFormat) ([]byte, error) {
	if f == pkcs8 {
		der, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			return nil, err
		}
		return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
	}
	der, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), nil
}

// Validity of what this package signs, in years from now.
const (
	caYears       = 10
	nodeCertYears = 5
	hubCertYears  = 2
)

// NewCA generates a self-signed CA for the controller named name.
func NewCA(name string, now time.Time) (*CA, error) {
	return newCA(pkix.Name{CommonName: "drover controller CA " + name, Organization: []string{"drover"}}, sec1, now)
}

func newCA(subject pkix.Name, f keyFormat, now time.Time) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate CA key: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               subject,
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.AddDate(caYears, 0, 0),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("create CA certificate: %w", err)
	}
	return caFromDER(der, key, f)
}

func caFromDER(der []byte, key *ecdsa.PrivateKey, f keyFormat) (*CA, error) {
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	keyPEM, err := encodeKey(key, f)
	if err != nil {
		return nil, err
	}
	return &CA{
		Cert:    cert,
		Key:     key,
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  keyPEM,
	}, nil
}

// ParseCA loads a controller's CA from its PEM certificate and key.
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
	return caFromDER(cb.Bytes, key, sec1)
}

// Fingerprint is the hex sha256 of the CA certificate's DER bytes.
func (ca *CA) Fingerprint() string { return Fingerprint(ca.Cert) }

// Fingerprint is the hex sha256 of a certificate's DER bytes.
func Fingerprint(c *x509.Certificate) string {
	sum := sha256.Sum256(c.Raw)
	return hex.EncodeToString(sum[:])
}

// Issue signs a certificate for a controller node, valid for both serving
// and dialing (mutual TLS between nodes). hosts are DNS names or IPs; the
// loopback names are always added.
func (ca *CA) Issue(commonName string, hosts []string, now time.Time) (tls.Certificate, []byte, []byte, error) {
	certPEM, keyPEM, err := ca.sign(leaf{
		subject:     pkix.Name{CommonName: commonName, Organization: []string{"drover"}},
		years:       nodeCertYears,
		keyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		extKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		hosts:       slices.Concat(hosts, []string{"localhost", "127.0.0.1", "::1"}),
	}, sec1, now)
	if err != nil {
		return tls.Certificate{}, nil, nil, err
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	return pair, certPEM, keyPEM, err
}

// leaf describes a certificate for sign.
type leaf struct {
	subject     pkix.Name
	years       int
	keyUsage    x509.KeyUsage
	extKeyUsage []x509.ExtKeyUsage
	hosts       []string // DNS names or IPs, in order
}

// sign makes a key and a certificate for it signed by ca, both as PEM.
func (ca *CA) sign(l leaf, f keyFormat, now time.Time) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      l.subject,
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.AddDate(l.years, 0, 0),
		KeyUsage:     l.keyUsage,
		ExtKeyUsage:  l.extKeyUsage,
	}
	for _, h := range l.hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else if h != "" {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.Key)
	if err != nil {
		return nil, nil, fmt.Errorf("issue certificate: %w", err)
	}
	if keyPEM, err = encodeKey(key, f); err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), keyPEM, nil
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

// ParseCertPEM parses the first certificate in PEM data.
func ParseCertPEM(b []byte) (*x509.Certificate, error) {
	blk, _ := pem.Decode(b)
	if blk == nil || blk.Type != "CERTIFICATE" {
		return nil, errors.New("no PEM certificate block")
	}
	return x509.ParseCertificate(blk.Bytes)
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return n
}
