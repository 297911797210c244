package hub

import (
	"crypto/tls"
	"path/filepath"

	"github.com/droverhq/drover/internal/pki"
)

// caCertFile is the generated CA certificate's name in the state directory.
const caCertFile = pki.HubCACertFile

// CACertPath is where the generated CA certificate is written, for clients
// to pin.
func CACertPath(stateDir string) string { return filepath.Join(stateDir, caCertFile) }

// loadTLS returns the serving certificate: the configured files, or a
// certificate signed by a CA generated once in the state directory.
func loadTLS(c *Config) (tls.Certificate, error) {
	if c.TLSCert != "" {
		return tls.LoadX509KeyPair(c.TLSCert, c.TLSKey)
	}
	return pki.LoadHubCert(c.StateDir, c.Listen, c.Now())
}
