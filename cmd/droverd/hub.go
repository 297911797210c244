package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/droverhq/drover/hub"
)

// stringList is a repeatable flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

func runHub(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("droverd hub", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg hub.Config
	var logLevel string
	var admins, serviceAccounts stringList
	fs.StringVar(&cfg.DSN, "dsn", "", "PostgreSQL connection string (required)")
	fs.StringVar(&cfg.OpenFGAURL, "openfga-url", "", "OpenFGA HTTP API URL (required)")
	fs.StringVar(&cfg.OpenFGAStore, "openfga-store", "drover", "OpenFGA store name")
	fs.StringVar(&cfg.OIDCIssuer, "oidc-issuer", "", "OIDC issuer URL (required)")
	fs.StringVar(&cfg.OIDCClientID, "oidc-client-id", "", "the hub's OIDC client id (required)")
	fs.StringVar(&cfg.OIDCClientSecret, "oidc-client-secret", "", "the hub's OIDC client secret (empty for a public client)")
	fs.StringVar(&cfg.Listen, "listen", "127.0.0.1:17080", "HTTPS address")
	fs.StringVar(&cfg.PublicURL, "public-url", "", "URL clients use (default https://LISTEN)")
	fs.StringVar(&cfg.StateDir, "state-dir", "", "directory for the generated TLS CA and certificate")
	fs.StringVar(&cfg.TLSCert, "tls-cert", "", "TLS certificate file (instead of a generated one)")
	fs.StringVar(&cfg.TLSKey, "tls-key", "", "TLS key file")
	fs.StringVar(&cfg.TLSCA, "tls-ca", "", "PEM file of the CA that signed --tls-cert, handed to controllers registered with a join token (default: the generated CA; none: their system roots)")
	fs.StringVar(&cfg.DefaultOrg, "default-org", "default", "organization people join on first login")
	fs.Var(&admins, "admin", "email made hub administrator on first login (repeatable)")
	fs.Var(&serviceAccounts, "service-account", "CLIENT_ID=ORG: a client allowed client-credentials login (repeatable)")
	fs.DurationVar(&cfg.SessionTTL, "session-ttl", 0, "hub access token lifetime (default 15m)")
	fs.DurationVar(&cfg.AuditRetention, "audit-retention", 0, "delete audit entries older than this (0 keeps them)")
	fs.StringVar(&logLevel, "log-level", "info", "log level: debug, info, warn or error")
	fs.Usage = func() {
		fmt.Fprint(stderr, `Usage: droverd hub --dsn DSN --openfga-url URL --oidc-issuer URL --oidc-client-id ID [flags]

Runs a hub replica: OIDC login, OpenFGA permissions, PostgreSQL state and
audit in front of every controller. Replicas sharing one database are
interchangeable. Schema migrations are applied at start.

Flags:
`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected arguments: %v", fs.Args())}
	}
	cfg.Admins = admins
	for _, sa := range serviceAccounts {
		id, org, ok := strings.Cut(sa, "=")
		if !ok || id == "" || org == "" {
			return usageError{fmt.Errorf("--service-account %q: want CLIENT_ID=ORG", sa)}
		}
		cfg.ServiceAccounts = append(cfg.ServiceAccounts, hub.ServiceAccount{ClientID: id, Org: org})
	}
	logger, err := newLogger(stderr, logLevel)
	if err != nil {
		return err
	}
	cfg.Logger = logger
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
