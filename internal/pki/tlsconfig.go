package pki

import (
	"crypto/tls"
	"crypto/x509"
)

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
