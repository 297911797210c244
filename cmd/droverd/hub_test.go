package main

import (
	"errors"
	"io"
	"strings"
	"testing"
)

// TestHubEmbeddedOpenFGANeedsADSNURL: the embedded OpenFGA keeps its
// tuples in the hub's database and its migrations read the DSN as a URL,
// so a keyword/value DSN without --openfga-url is refused at once, saying
// why, before anything starts.
func TestHubEmbeddedOpenFGANeedsADSNURL(t *testing.T) {
	err := runHub(t.Context(), []string{"--dsn", "host=/tmp dbname=hub", "--oidc-issuer", "http://127.0.0.1:1/dex",
		"--oidc-client-id", "drover-hub", "--state-dir", t.TempDir()}, io.Discard)
	var ue usageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "--dsn must be a postgres:// URL for the embedded OpenFGA") {
		t.Fatalf("a keyword/value DSN without --openfga-url: %v", err)
	}
}
