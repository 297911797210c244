package main

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// execHub runs `droverd hub` with args.
func execHub(t *testing.T, args []string) error {
	cmd := newHubCmd(io.Discard)
	cmd.SetArgs(args)
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	return cmd.ExecuteContext(t.Context())
}

// TestHubEmbeddedOpenFGANeedsADSNURL: the embedded OpenFGA keeps its
// tuples in the hub's database and its migrations read the DSN as a URL,
// so a keyword/value DSN without --openfga-url is refused at once, saying
// why, before anything starts.
func TestHubEmbeddedOpenFGANeedsADSNURL(t *testing.T) {
	err := execHub(t, []string{"--dsn", "host=/tmp dbname=hub", "--oidc-issuer", "http://127.0.0.1:1/dex",
		"--oidc-client-id", "drover-hub", "--state-dir", t.TempDir()})
	var ue usageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "--dsn must be a postgres:// URL for the embedded OpenFGA") {
		t.Fatalf("a keyword/value DSN without --openfga-url: %v", err)
	}
}

// TestHubKeyEncryptionKeyIsChecked: a key-encryption secret that cannot be
// read, is too short, or an old one without a new one, and a trusted proxy
// that is not a network, are usage errors naming the flag, before anything
// starts.
func TestHubKeyEncryptionKeyIsChecked(t *testing.T) {
	dir := t.TempDir()
	short := filepath.Join(dir, "short")
	good := filepath.Join(dir, "good")
	if err := os.WriteFile(short, []byte("too short\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(good, []byte(strings.Repeat("k", 32)), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--key-encryption-key", filepath.Join(dir, "missing")}, "--key-encryption-key: open"},
		{[]string{"--key-encryption-key", short}, "--key-encryption-key: keyseal: a key-encryption secret needs at least 32 bytes"},
		{[]string{"--key-encryption-key", good, "--old-key-encryption-key", short}, "old secret 1"},
		{[]string{"--old-key-encryption-key", good}, "--old-key-encryption-key needs --key-encryption-key"},
		{[]string{"--trusted-proxy", "10.0.0.0/33"}, `--trusted-proxy "10.0.0.0/33": want a CIDR`},
		{[]string{"--trusted-proxy", "lb.example.com"}, `--trusted-proxy "lb.example.com": want a CIDR`},
		{[]string{"--index-resync", "5s"}, "--index-resync 5s: want at least 1m"},
		{[]string{"--index-resync", "-1h"}, "--index-resync -1h0m0s: want at least 1m"},
	} {
		// No state dir: had the secrets passed, the embedded defaults
		// would refuse, with another message.
		err := execHub(t, c.args)
		var ue usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want a usage error with %q", c.args, err, c.want)
		}
	}
}

// TestHubNeedsAnIssuerOrDevIdentity (issue 26, finding 12): droverd hub
// without --oidc-issuer does not fall back on the development issuer, whose
// demo user and password are public, unless --dev-identity asks for it:
// it refuses to start, saying what to give. Both at once are refused too.
func TestHubNeedsAnIssuerOrDevIdentity(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--dsn", "postgres://127.0.0.1:1/hub", "--openfga-url", "http://127.0.0.1:1"},
			"--oidc-issuer is required (or --dev-identity"},
		{[]string{"--dev-identity", "--oidc-issuer", "https://idp.example.com", "--oidc-client-id", "drover-hub"},
			"--dev-identity and --oidc-issuer: give one"},
	} {
		err := execHub(t, c.args)
		var ue usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want a usage error with %q", c.args, err, c.want)
		}
	}
}
