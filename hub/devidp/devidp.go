// Package devidp is the development OIDC issuer of `droverd dev` and the
// hub's tests: Dex's real server package with in-memory storage, one static
// password user (or the ones configured), a public client for the hub (device flow and
// authorization code + PKCE) and confidential clients for service accounts
// (client credentials). It is never used in production, where the hub is
// configured with the organisation's issuer.
package devidp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	gosundheit "github.com/AppsFlyer/go-sundheit"
	"github.com/dexidp/dex/server"
	"github.com/dexidp/dex/server/signer"
	"github.com/dexidp/dex/storage"
	"github.com/dexidp/dex/storage/memory"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/crypto/bcrypt"
)

// Defaults of the development identity.
const (
	DemoEmail    = "demo@example.com"
	DemoPassword = "drover-demo"
	HubClientID  = "drover-hub"
)

// The other people of `droverd dev`, for the dashboard's browser tests:
// a reader in the demo user's organization and a member of another one.
const (
	ReaderEmail    = "reader@example.com"
	ReaderPassword = "drover-reader"
	OtherEmail     = "other@globex.example"
	OtherPassword  = "drover-other"
)

// DevUsers are the static passwords of `droverd dev`: the demo user, the
// reader and the other organization's member.
func DevUsers() map[string]string {
	return map[string]string{DemoEmail: DemoPassword, ReaderEmail: ReaderPassword, OtherEmail: OtherPassword}
}

// Client is a confidential client allowed the client-credentials grant.
type Client struct {
	ID, Secret string
}

// Config configures the issuer.
type Config struct {
	// Listen is the loopback address (default 127.0.0.1:0).
	Listen string
	// HubRedirectURIs are the hub's /auth/callback URLs.
	HubRedirectURIs []string
	// ServiceAccounts are the confidential clients.
	ServiceAccounts []Client
	// Users are email -> password; default the demo user.
	Users  map[string]string
	Logger *slog.Logger
}

// Issuer is a running development OIDC issuer.
type Issuer struct {
	url    string
	srv    *http.Server
	cancel context.CancelFunc
	health gosundheit.Health
	done   chan error
}

// Start runs the issuer until Stop.
func Start(ctx context.Context, cfg Config) (*Issuer, error) {
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:0"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if len(cfg.Users) == 0 {
		cfg.Users = map[string]string{DemoEmail: DemoPassword}
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("devidp: listen: %w", err)
	}
	issuer := "http://" + ln.Addr().String() + "/dex"
	logger := cfg.Logger.With("component", "dex")

	clients := []storage.Client{{ID: HubClientID, Name: "Drover hub", Public: true,
		RedirectURIs: append([]string{"/dex/device/callback"}, cfg.HubRedirectURIs...)}}
	for _, sa := range cfg.ServiceAccounts {
		clients = append(clients, storage.Client{ID: sa.ID, Secret: sa.Secret, Name: sa.ID})
	}
	var passwords []storage.Password
	for email, pw := range cfg.Users {
		hash, err := bcrypt.GenerateFromPassword([]byte(pw), 10)
		if err != nil {
			ln.Close()
			return nil, err
		}
		passwords = append(passwords, storage.Password{Email: email, Hash: hash, Username: email, UserID: email})
	}
	st := memory.New(logger)
	st = storage.WithStaticClients(st, clients)
	st = storage.WithStaticPasswords(st, passwords, logger)
	st = storage.WithStaticConnectors(st, []storage.Connector{{ID: "local", Name: "Email", Type: "local"}})

	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	fail := func(err error) (*Issuer, error) { cancel(); ln.Close(); return nil, err }
	sig, err := (&signer.LocalConfig{KeysRotationPeriod: "6h"}).Open(runCtx, st, 24*time.Hour, time.Now, logger)
	if err != nil {
		return fail(fmt.Errorf("devidp: signer: %w", err))
	}
	health := gosundheit.New()
	srv, err := server.NewServer(runCtx, server.Config{Issuer: issuer, Storage: st, SkipApprovalScreen: true,
		PasswordConnector: "local", Logger: logger, Signer: sig, PrometheusRegistry: prometheus.NewRegistry(),
		HealthChecker: health, AllowedGrantTypes: []string{"authorization_code", "refresh_token", "password",
			"client_credentials", "urn:ietf:params:oauth:grant-type:device_code"}})
	if err != nil {
		health.DeregisterAll()
		return fail(fmt.Errorf("devidp: dex: %w", err))
	}
	i := &Issuer{url: issuer, srv: &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second},
		cancel: cancel, health: health, done: make(chan error, 1)}
	go func() { i.done <- i.srv.Serve(ln) }()
	return i, nil
}

// URL is the issuer URL (http://127.0.0.1:PORT/dex).
func (i *Issuer) URL() string { return i.url }

// Stop shuts the issuer down and waits for it.
func (i *Issuer) Stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := i.srv.Shutdown(ctx)
	i.cancel()
	i.health.DeregisterAll()
	if serr := <-i.done; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	return err
}
