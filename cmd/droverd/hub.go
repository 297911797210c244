package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/droverhq/drover/hub"
	"github.com/droverhq/drover/hub/devidp"
)

// hubFlags are the flags of `droverd hub`: hub.Config's fields and what
// config turns into them.
type hubFlags struct {
	cfg                                              hub.Config
	logLevel, kek, idpListen                         string
	devIdentity                                      bool
	admins, serviceAccounts, oldKEKs, trustedProxies []string
}

// newHubCmd is `droverd hub`; its logs go to stderr.
func newHubCmd(stderr io.Writer) *cobra.Command {
	f := &hubFlags{}
	cmd := &cobra.Command{
		Use:   "hub [--dsn DSN] [--openfga-url URL] (--oidc-issuer URL --oidc-client-id ID | --dev-identity)",
		Short: "Run a hub replica (OIDC, permissions, audit in front of every controller)",
		Long:  hubLong,
		Example: `  droverd hub --state-dir /var/lib/drover/hub --dev-identity
  droverd hub --dsn postgres://hub@db/hub --openfga-url http://openfga:8080 \
      --oidc-issuer https://idp.example.com --oidc-client-id drover-hub --key-encryption-key /etc/drover/kek`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runHub(cmd.Context(), f, stderr)
		},
	}
	defineHubFlags(cmd.Flags(), f)
	return cmd
}

// defineHubFlags defines the flags of `droverd hub` into f.
func defineHubFlags(fs *pflag.FlagSet, f *hubFlags) {
	cfg := &f.cfg
	fs.StringVar(&cfg.DSN, "dsn", "", "PostgreSQL connection string (default: a private PostgreSQL in --state-dir)")
	fs.StringVar(&cfg.OpenFGAURL, "openfga-url", "", "OpenFGA HTTP API URL (default: an embedded OpenFGA keeping its tuples in schema openfga of the hub's database)")
	fs.StringVar(&cfg.OpenFGAStore, "openfga-store", "drover", "OpenFGA store name")
	fs.StringVar(&cfg.OIDCIssuer, "oidc-issuer", "", "OIDC issuer URL (required unless --dev-identity)")
	fs.BoolVar(&f.devIdentity, "dev-identity", false, "use the embedded development issuer on --idp-listen instead of --oidc-issuer, with its public demo user made hub administrator: never in production")
	fs.StringVar(&cfg.OIDCClientID, "oidc-client-id", "", "the hub's OIDC client id (required with --oidc-issuer)")
	fs.StringVar(&f.idpListen, "idp-listen", "127.0.0.1:17090", "address of the embedded development issuer (with --dev-identity)")
	fs.StringVar(&cfg.OIDCClientSecret, "oidc-client-secret", "", "the hub's OIDC client secret (empty for a public client)")
	fs.StringVar(&cfg.Listen, "listen", "127.0.0.1:17080", "HTTPS address")
	fs.StringVar(&cfg.MetricsListen, "metrics-listen", "", "serve /metrics only here, over plain HTTP (an internal address), not on --listen (without it, --listen serves /metrics to this machine alone)")
	fs.StringVar(&cfg.PublicURL, "public-url", "", "URL clients use (default https://LISTEN)")
	fs.StringVar(&cfg.StateDir, "state-dir", "", "directory for the generated TLS CA and certificate")
	fs.StringVar(&cfg.TLSCert, "tls-cert", "", "TLS certificate file (instead of a generated one)")
	fs.StringVar(&cfg.TLSKey, "tls-key", "", "TLS key file")
	fs.StringVar(&cfg.TLSCA, "tls-ca", "", "PEM file of the CA that signed --tls-cert, handed to controllers registered with a join token (default: the generated CA; none: their system roots)")
	fs.StringVar(&f.kek, "key-encryption-key", "", "file holding a secret of at least 32 bytes with which the hub seals its signing keys in the database (every replica the same; make one with: head -c 32 /dev/urandom | base64)")
	fs.StringArrayVar(&f.oldKEKs, "old-key-encryption-key", nil, "`file` holding a secret --key-encryption-key replaces: keys sealed with it are sealed again at start (repeatable)")
	fs.StringArrayVar(&f.trustedProxies, "trusted-proxy", nil, "`CIDR` or address of a load balancer or proxy in front of the hub, whose X-Forwarded-For names the client (audited, and logins throttled by it) (repeatable)")
	fs.StringVar(&cfg.DefaultOrg, "default-org", "default", "organization people join on first login")
	fs.StringArrayVar(&f.admins, "admin", nil, "`email` made hub administrator on first login (repeatable)")
	fs.StringArrayVar(&f.serviceAccounts, "service-account", nil, "`CLIENT_ID=ORG`: a client allowed client-credentials login (repeatable)")
	fs.DurationVar(&cfg.SessionTTL, "session-ttl", 0, "hub access token lifetime (default 15m)")
	fs.DurationVar(&cfg.AuditRetention, "audit-retention", 0, "delete audit entries older than this (0 keeps them)")
	fs.Int64Var(&cfg.StatusCacheBytes, "status-cache-size", 0, "the most bytes of model status the proxy keeps, to ask the controller only whether each changed (default 64 MiB; -1: none kept)")
	fs.IntVar(&cfg.IndexWriteRate, "index-write-rate", 0, "the most index rows one controller's events write per second, sustained; past it the hub reads its events more slowly (default 1000, bursts of ten times that; -1: no bound)")
	fs.IntVar(&cfg.MaxControllerModels, "max-controller-models", 0, "the most models the index adopts from one controller (made on it directly); past it they are not indexed, so an organization's controller cannot fill the hub's database (default 20000; -1: no bound)")
	fs.DurationVar(&cfg.IndexResyncEvery, "index-resync", 0, "how often the index reads each controller's models whole again, repairing what it holds wrong (default 1h; at least 1m)")
	fs.DurationVar(&cfg.MigrationAgentWait, "migration-agent-wait", 0, "how long a model migration waits for the model's agents to report in a phase before it aborts (default 15m, Juju's migration-agent-wait-time)")
	fs.IntVar(&cfg.MaxLiveCalls, "max-live-calls", 1000, "watches and followed logs one identity may hold open on this replica (-1: no bound)")
	fs.DurationVar(&cfg.DatabaseTimeout, "database-timeout", 0, "bound on each PostgreSQL statement of a request, after which it is answered unavailable (default 10s)")
	fs.DurationVar(&cfg.OpenFGATimeout, "openfga-timeout", 0, "bound on each request to OpenFGA, after which it is answered unavailable (default 10s)")
	fs.StringVar(&f.logLevel, "log-level", "info", "log level: debug, info, warn or error")
}

const hubLong = `Runs a hub replica: OIDC login, OpenFGA permissions, PostgreSQL state and
audit in front of every controller. Replicas sharing one database are
interchangeable. Schema migrations are applied at start.

PostgreSQL and OpenFGA have embedded defaults: without --dsn a private
PostgreSQL in --state-dir/postgres (one replica on one machine); without
--openfga-url an OpenFGA server in droverd whose tuples live in schema
openfga of the hub's database, so replicas sharing --dsn share them
(--dsn is then a postgres:// URL). The OIDC issuer has one only when
asked for: --dev-identity runs the development issuer (Dex) on
--idp-listen, with the user demo@example.com / drover-demo (made hub
administrator unless --admin names others) and a secret for each
--service-account in --state-dir/service-accounts.json. Name real ones
in production.`

// config checks the flags that hub.Config cannot hold as they are and
// returns the configuration they make (without a logger).
func (f *hubFlags) config() (hub.Config, error) {
	cfg := f.cfg
	cfg.Admins = f.admins
	var err error
	if cfg.KeyEncryptionKey, cfg.OldKeyEncryptionKeys, err = readKeyEncryptionKeys(f.kek, f.oldKEKs); err != nil {
		return cfg, usageError{err}
	}
	if err := hub.CheckKeyEncryptionKeys(cfg.KeyEncryptionKey, cfg.OldKeyEncryptionKeys); err != nil {
		return cfg, usageError{err}
	}
	if cfg.IndexResyncEvery != 0 && cfg.IndexResyncEvery < time.Minute {
		return cfg, usageError{fmt.Errorf("--index-resync %s: want at least 1m (each resync reads every model of every controller), or 0 for the default, 1h", cfg.IndexResyncEvery)}
	}
	for _, p := range f.trustedProxies {
		prefix, err := parsePrefix(p)
		if err != nil {
			return cfg, usageError{fmt.Errorf("--trusted-proxy %q: want a CIDR such as 10.0.0.0/8, or an address", p)}
		}
		cfg.TrustedProxies = append(cfg.TrustedProxies, prefix)
	}
	for _, sa := range f.serviceAccounts {
		id, org, ok := strings.Cut(sa, "=")
		if !ok || id == "" || org == "" {
			return cfg, usageError{fmt.Errorf("--service-account %q: want CLIENT_ID=ORG", sa)}
		}
		cfg.ServiceAccounts = append(cfg.ServiceAccounts, hub.ServiceAccount{ClientID: id, Org: org})
	}
	switch {
	case cfg.OIDCIssuer == "" && !f.devIdentity:
		return cfg, usageError{errors.New("--oidc-issuer is required (or --dev-identity for the embedded development issuer, whose demo user's password is public: never in production)")}
	case cfg.OIDCIssuer != "" && f.devIdentity:
		return cfg, usageError{errors.New("--dev-identity and --oidc-issuer: give one")}
	}
	return cfg, nil
}

// runHub runs one hub replica until ctx ends, with embedded dependencies
// for those the flags leave out.
func runHub(ctx context.Context, f *hubFlags, stderr io.Writer) error {
	cfg, err := f.config()
	if err != nil {
		return err
	}
	if cfg.Logger, err = newLogger(stderr, f.logLevel); err != nil {
		return err
	}
	var deps embeddedDeps
	defer deps.close()
	if err := embeddedDefaults(ctx, &cfg, &deps, f.idpListen); err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return usageError{err}
	}
	s, err := hub.New(ctx, cfg)
	if err != nil {
		return err
	}
	defer s.Close()
	return s.Run(ctx)
}

// embeddedDefaults starts an embedded PostgreSQL, OpenFGA or issuer for
// each the flags leave out, and points cfg at them.
func embeddedDefaults(ctx context.Context, cfg *hub.Config, deps *embeddedDeps, idpListen string) error {
	if cfg.DSN != "" && cfg.OpenFGAURL != "" && cfg.OIDCIssuer != "" {
		return nil
	}
	if cfg.StateDir == "" {
		return usageError{errors.New("--state-dir is required for the embedded defaults (give --dsn, --openfga-url and --oidc-issuer to run without them)")}
	}
	if err := prepareStateDir(cfg.StateDir); err != nil {
		return err
	}
	var err error
	if cfg.DSN == "" {
		if cfg.DSN, err = deps.postgres(ctx, cfg.StateDir, "hub", cfg.Logger); err != nil {
			return err
		}
		cfg.Logger.Info("no --dsn: using a private PostgreSQL", "dir", filepath.Join(cfg.StateDir, "postgres"))
	}
	if cfg.OpenFGAURL == "" {
		if !strings.HasPrefix(cfg.DSN, "postgres://") && !strings.HasPrefix(cfg.DSN, "postgresql://") {
			return usageError{errors.New("--dsn must be a postgres:// URL for the embedded OpenFGA, which keeps its tuples in the hub's database (or give --openfga-url)")}
		}
		if cfg.OpenFGAURL, err = deps.openfga(ctx, cfg.DSN); err != nil {
			return err
		}
		cfg.Logger.Info("no --openfga-url: using an embedded OpenFGA, its tuples in the hub's database", "schema", openfgaSchema)
	}
	if cfg.OIDCIssuer == "" {
		if cfg.OIDCClientID != "" {
			return usageError{errors.New("--oidc-client-id names the hub at --oidc-issuer: give both or neither")}
		}
		secretsFile := filepath.Join(cfg.StateDir, "service-accounts.json")
		secrets, err := serviceAccountSecrets(secretsFile, cfg.ServiceAccounts)
		if err != nil {
			return err
		}
		publicURL := cmp.Or(cfg.PublicURL, "https://"+cfg.Listen)
		if cfg.OIDCIssuer, err = deps.issuer(ctx, idpListen, strings.TrimRight(publicURL, "/"), secrets, nil, cfg.Logger); err != nil {
			return err
		}
		cfg.OIDCClientID = devidp.HubClientID
		if len(cfg.Admins) == 0 {
			cfg.Admins = []string{devidp.DemoEmail}
		}
		cfg.Logger.Warn("--dev-identity: using the embedded development issuer; name a real one with --oidc-issuer in production",
			"issuer", cfg.OIDCIssuer, "user", devidp.DemoEmail, "service-account-secrets", secretsFile)
	}
	return nil
}

// readKeyEncryptionKeys reads the key-encryption secrets' files.
func readKeyEncryptionKeys(current string, old []string) ([]byte, [][]byte, error) {
	read := func(flagName, path string) ([]byte, error) {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", flagName, err)
		}
		return b, nil
	}
	var cur []byte
	var err error
	if current != "" {
		if cur, err = read("--key-encryption-key", current); err != nil {
			return nil, nil, err
		}
	}
	var olds [][]byte
	for _, p := range old {
		b, err := read("--old-key-encryption-key", p)
		if err != nil {
			return nil, nil, err
		}
		olds = append(olds, b)
	}
	return cur, olds, nil
}

// parsePrefix reads a CIDR, or an address as the network of that address
// alone.
func parsePrefix(s string) (netip.Prefix, error) {
	if p, err := netip.ParsePrefix(s); err == nil {
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	return netip.PrefixFrom(a, a.BitLen()), nil
}
